"""Time grains: how coarse a time an expression writes, and whether its buckets fit the model's interval.

A model's output filter keeps only the rows whose time column lies in the run's interval. A time column
written coarser than that interval (a month label in a daily model) gets a partial bucket on every slice
and is kept on one of them only; a grain that fits, one bucket inside one interval, is harmless.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from pyspark_incr.intervals.units import IntervalUnit

#: Grains finer than any interval unit: they always fit.
_FINE = {"second": 1000, "minute": 60_000}
_UNIT_MS = {**_FINE, **{u.value: u.approx_ms for u in IntervalUnit}}
#: DATE_TRUNC / TRUNC unit spellings (sqlglot keeps what the query wrote) -> grain.
_TRUNC_UNITS = {
    "YEAR": "year", "YYYY": "year", "YY": "year", "QUARTER": "quarter", "Q": "quarter", "MONTH": "month",
    "MON": "month", "MM": "month", "WEEK": "week", "DAY": "day", "DD": "day", "D": "day", "HOUR": "hour",
    "HH": "hour", "MINUTE": "minute", "SECOND": "second",
}
#: strftime codes (sqlglot's reading of Spark's patterns, each maybe suffixed "strict"), finest first.
_FORMAT_GRAINS = (("second", "SsfL"), ("minute", "M"), ("hour", "HIkl"), ("day", "dej"), ("week", "UWV"),
                  ("month", "mbB"), ("year", "YyG"))
#: Calendar interval units a week does not tile (a week straddles their boundaries).
_CALENDAR_MS = {u.approx_ms for u in (IntervalUnit.MONTH, IntervalUnit.QUARTER, IntervalUnit.YEAR)}
#: Cron shorthands whose inferred interval unit is the grain, for the fix a refusal suggests.
CRON_OF = {"hour": "@hourly", "day": "@daily", "month": "@monthly", "year": "@yearly"}
#: Expressions that keep their argument's grain: shifts and re-typings of one time.
_KEEPS = (exp.TsOrDsAdd, exp.DateAdd, exp.DateSub, exp.AddMonths, exp.TimeStrToTime, exp.TimestampAdd,
          exp.TimestampSub, exp.StrToTime, exp.UnixToTime, exp.StrToDate)


@dataclass(frozen=True)
class Grain:
    """The grain ``unit`` (``'month'``, ``'day'``, ... or ``''`` for the column's own) of a time read from ``column``."""

    unit: str
    column: exp.Column

    @property
    def ms(self) -> int:
        return _UNIT_MS.get(self.unit, 0)

    def fits(self, interval_ms: int) -> bool:
        """Whether each bucket lies inside one interval of length ``interval_ms`` (a model's unit)."""
        if self.unit == "week" and interval_ms in _CALENDAR_MS:
            return False
        return self.ms <= interval_ms


def grain_of(node: exp.Expression) -> Grain | None:
    """The grain ``node`` writes a time at, when it is a column or a recognised rounding of one; else None.

    >>> import sqlglot
    >>> [(g.unit, g.column.name) if (g := grain_of(sqlglot.parse_one(s, read="spark"))) else None for s in (
    ...     "ts", "DATE(ts)", "DATE_TRUNC('MONTH', ds)", "TRUNC(ds, 'Q')", "DATE_FORMAT(ts, 'yyyy-MM')",
    ...     "MAKE_DATE(YEAR(d), MONTH(d), 1)", "LAST_DAY(d)", "DATE_ADD(DATE_TRUNC('WEEK', d), 6)", "a + b")]
    [('', 'ts'), ('day', 'ts'), ('month', 'ds'), ('quarter', 'ds'), ('month', 'ts'), ('month', 'd'), \
('month', 'd'), ('week', 'd'), None]
    """
    if isinstance(node, exp.Column):
        return Grain("", node)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return _coarser(grain_of(node.this), "day" if node.to.is_type(exp.DataType.Type.DATE) else "")
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):
        unit = node.args.get("unit")
        return _coarser(grain_of(node.this), _TRUNC_UNITS.get(unit.name.upper(), "") if unit is not None else "")
    if isinstance(node, (exp.TsOrDsToDate, exp.TimeToStr, exp.UnixToStr)):
        fmt = node.args.get("format")
        unit = _format_grain(fmt.name) if isinstance(fmt, exp.Literal) else ("day" if fmt is None else None)
        grain = _coarser(grain_of(node.this), unit) if unit is not None else None
        return _coarser(grain, "day") if isinstance(node, exp.TsOrDsToDate) else grain  # a DATE holds no hour
    if isinstance(node, (exp.Year, exp.LastDay)):
        return _coarser(grain_of(node.this), "year" if isinstance(node, exp.Year) else "month")
    if isinstance(node, exp.DateFromParts) or (isinstance(node, exp.Anonymous) and node.name.upper() == "MAKE_DATE"):
        return _made_date(node)
    if isinstance(node, _KEEPS) or (isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.expression, exp.Interval)):
        return grain_of(node.this)
    return None


def _coarser(inner: Grain | None, unit: str | None) -> Grain | None:
    if inner is None or unit is None:
        return None
    return inner if _UNIT_MS.get(unit, 0) <= inner.ms else Grain(unit, inner.column)


def _format_grain(fmt: str) -> str | None:
    """The finest time part a strftime format writes: ``'%Y-%m'`` writes months."""
    codes = set(re.findall(r"%[-_0^#]?(\w)", fmt))
    return next((grain for grain, letters in _FORMAT_GRAINS if codes & set(letters)), None)


def _made_date(node: exp.Expression) -> Grain | None:
    # MAKE_DATE(YEAR(d), MONTH(d), 1): a constant day of month writes a month; a constant month too, a year.
    if isinstance(node, exp.DateFromParts):
        parts = [node.args.get(k) for k in ("year", "month", "day")]
    else:
        parts = list(node.expressions)
    if len(parts) != 3 or any(p is None for p in parts):
        return None
    year, month, day = parts
    if not isinstance(day, exp.Literal):
        return None
    grains = [grain_of(p.this) if isinstance(p, (exp.Year, exp.Month)) else None for p in (year, month)]
    if grains[0] is None:
        return None
    return _coarser(grains[0], "year" if isinstance(month, exp.Literal) else "month")
