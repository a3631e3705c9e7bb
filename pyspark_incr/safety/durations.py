"""Durations: interval literals and day counts in milliseconds, and ISO-8601 printing."""

from __future__ import annotations

import re

from sqlglot import exp

_MS = {"millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000,
       "week": 7 * 86_400_000}
#: Units whose length varies (28-31 day months): no fixed offset can be derived from them.
_VARIABLE = ("month", "quarter", "year")


def iso_duration(ms: int) -> str:
    """ISO-8601 duration of ``ms`` milliseconds, days being the largest unit (weeks print as days).

    >>> iso_duration(0), iso_duration(30 * 60_000), iso_duration(86_400_000), iso_duration(36 * 3_600_000)
    ('PT0S', 'PT30M', 'P1D', 'P1DT12H')
    >>> iso_duration(7 * 86_400_000 + 1500)
    'P7DT1.5S'
    """
    days, rest = divmod(ms, _MS["day"])
    hours, rest = divmod(rest, _MS["hour"])
    minutes, rest = divmod(rest, _MS["minute"])
    seconds = f"{rest // 1000}" + (f".{rest % 1000:03d}".rstrip("0") if rest % 1000 else "")
    time = "".join(f"{v}{u}" for v, u in ((hours, "H"), (minutes, "M"), (seconds, "S")) if v not in (0, "0"))
    if not days and not time:
        return "PT0S"
    return "P" + (f"{days}D" if days else "") + (f"T{time}" if time else "")


class _Underivable(Exception):
    """A construct whose reach cannot be proven (a month interval, a computed bound)."""


def _unit_ms(unit: str, where: str) -> int:
    unit = unit.lower().rstrip("s") if unit.lower() != "ms" else "millisecond"
    if unit in _MS:
        return _MS[unit]
    if unit in _VARIABLE:
        raise _Underivable(f"{where}: a {unit} has no fixed length")
    raise _Underivable(f"{where}: unknown interval unit {unit!r}")


def _interval_ms(node: exp.Interval) -> int:
    """``INTERVAL '30 minutes'`` / ``INTERVAL 30 MINUTES`` / ``INTERVAL '1' DAY`` in milliseconds."""
    text, unit = node.this.name if node.this else "", node.args.get("unit")
    if isinstance(node.this, exp.Neg):
        text = "-" + node.this.this.name
    where = node.sql("spark")
    if unit is not None:
        return _number(text, where) * _unit_ms(unit.name, where)
    # sqlglot keeps a multi-part string ('1 day 2 hours') unsplit: sum its parts.
    parts = re.findall(r"(-?\d+)\s*([a-zA-Z]+)", text)
    if not parts:
        raise _Underivable(f"{where}: cannot read the interval")
    return sum(_number(n, where) * _unit_ms(u, where) for n, u in parts)


def _number(text: str, where: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise _Underivable(f"{where}: not a whole number of units") from None


def _int_value(node: exp.Expression) -> int | None:
    """Constant integer of a DATE_ADD/DATE_SUB day count (sqlglot writes DATE_SUB(x, n) as x + n * -1)."""
    node = node.unnest() if isinstance(node, exp.Paren) else node
    if isinstance(node, exp.Literal) and not node.is_string:
        return int(node.this) if re.fullmatch(r"-?\d+", node.this) else None
    if isinstance(node, exp.Neg):
        inner = _int_value(node.this)
        return None if inner is None else -inner
    if isinstance(node, exp.Mul):
        a, b = _int_value(node.this), _int_value(node.expression)
        return None if a is None or b is None else a * b
    return None
