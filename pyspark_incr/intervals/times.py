"""Converting user-facing times (ISO strings, dates) to and from epoch milliseconds, UTC."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

from pyspark_incr.errors import ArgumentError

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_RELATIVE = re.compile(r"^(\d+)\s+(minute|hour|day|week)s?\s+ago$", re.IGNORECASE)


def to_ms(value: str | date | datetime | int, what: str = "time", *, now_ms: int | None = None) -> int:
    """Epoch ms (UTC) of an ISO date/timestamp, a ``datetime``, epoch ms or 'N days ago'.

    Naive timestamps are UTC.

    >>> to_ms("2024-01-02")
    1704153600000
    >>> to_ms("2024-01-02T01:00:00Z") - to_ms("2024-01-02")
    3600000
    >>> to_ms("2 days ago", now_ms=to_ms("2024-01-03")) == to_ms("2024-01-01")
    True
    >>> to_ms("yesterday-ish")
    Traceback (most recent call last):
    ...
    pyspark_incr.errors.ArgumentError: time: 'yesterday-ish' is not a date or timestamp; use ISO format like '2024-01-31' or '2024-01-31 13:00:00' (UTC)
    """
    if isinstance(value, bool):
        raise ArgumentError(f"{what}: {value!r} is not a date or timestamp")
    if isinstance(value, int):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return _delta_ms(value - EPOCH)
    if isinstance(value, date):
        return to_ms(datetime(value.year, value.month, value.day), what)
    text = str(value).strip()
    relative = _RELATIVE.match(text)
    if relative:
        n, unit = int(relative.group(1)), relative.group(2).lower()
        base = now_ms if now_ms is not None else to_ms(datetime.now(timezone.utc))
        try:
            return base - _delta_ms(timedelta(**{unit + "s": n}))
        except OverflowError:
            raise ArgumentError(f"{what}: {text!r} reaches outside the calendar; use a nearer time") from None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ArgumentError(
            f"{what}: {text!r} is not a date or timestamp; use ISO format like "
            "'2024-01-31' or '2024-01-31 13:00:00' (UTC)"
        ) from None
    return to_ms(parsed, what)


def is_date_only(value: object) -> bool:
    """True for a bare 'YYYY-MM-DD' string, which SQLMesh treats as a whole (inclusive) day when it ends a range.

    >>> is_date_only("2024-01-31"), is_date_only("2024-01-31 00:00")
    (True, False)
    """
    return isinstance(value, str) and bool(_DATE_ONLY.match(value.strip()))


def to_end_ms(value: str | date | datetime | int, what: str = "end", *, now_ms: int | None = None) -> int:
    """Exclusive end bound: a bare date means 'through the end of that day'.

    >>> to_end_ms("2024-01-01") == to_ms("2024-01-02")
    True
    >>> to_end_ms("2024-01-01 12:00:00") == to_ms("2024-01-01 12:00:00")
    True
    """
    ms = to_ms(value, what, now_ms=now_ms)
    return ms + 86_400_000 if is_date_only(value) else ms


def to_datetime(ms: int) -> datetime:
    """The UTC ``datetime`` of epoch ms."""
    return EPOCH + timedelta(milliseconds=ms)


def format_ms(ms: int) -> str:
    """Readable UTC timestamp; midnight prints as a bare date.

    >>> format_ms(1704153600000), format_ms(1704153600000 + 3_600_000)
    ('2024-01-02', '2024-01-02 01:00:00')
    """
    dt = to_datetime(ms)
    if dt.hour == dt.minute == dt.second == dt.microsecond == 0:
        return dt.strftime("%Y-%m-%d")
    return dt.strftime("%Y-%m-%d %H:%M:%S")


def _delta_ms(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
