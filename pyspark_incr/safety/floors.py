"""Time floors: expressions rounding a time down to a day or an hour, and how long their buckets are.

The bound derivation reads a floor compared with a run-window macro as its column. The grouping and grain
rules read every rounding, coarser ones too, through :mod:`pyspark_incr.safety.grains`.
"""

from __future__ import annotations

from sqlglot import exp

from pyspark_incr.safety.durations import _MS

#: DATE_TRUNC / TRUNC units that floor to a day or an hour, as Spark SQL spells them.
_UNITS = {"DAY": _MS["day"], "DD": _MS["day"], "D": _MS["day"], "HOUR": _MS["hour"], "HH": _MS["hour"]}


def floor_of(node: exp.Expression) -> tuple[exp.Expression, int] | None:
    """``(ts, bucket length in ms)`` when ``node`` is ``DATE(ts)``, ``TO_DATE(ts)``, ``CAST(ts AS DATE)`` or
    ``DATE_TRUNC('DAY'|'HOUR', ts)``; None for anything else (a coarser truncation such as a month has no
    fixed length and is not a floor here).

    >>> import sqlglot
    >>> [(f[0].sql(), f[1]) if (f := floor_of(sqlglot.parse_one(s, read="spark"))) else None
    ...  for s in ("DATE(ts)", "DATE_TRUNC('HOUR', ts)", "DATE_TRUNC('MONTH', ts)", "ts")]
    [('ts', 86400000), ('ts', 3600000), None, None]
    """
    if isinstance(node, (exp.Cast, exp.TryCast)) and node.to.is_type(exp.DataType.Type.DATE):
        return node.this, _MS["day"]
    if isinstance(node, exp.TsOrDsToDate) and not node.args.get("format"):
        return node.this, _MS["day"]
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):
        unit = node.args.get("unit")
        if unit is not None and unit.name.upper() in _UNITS:
            return node.this, _UNITS[unit.name.upper()]
    return None
