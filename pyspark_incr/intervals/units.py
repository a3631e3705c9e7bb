"""Interval units and their calendar arithmetic on epoch milliseconds (UTC).

The unit is inferred from the cron as SQLMesh does: the largest unit not longer
than the shortest gap between cron ticks, so a ported project keeps its intervals.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import Enum

from pyspark_incr.intervals.times import to_datetime, to_ms

_MINUTE = 60_000


class IntervalUnit(Enum):
    """A unit of time intervals; the value is its name as written in a MODEL block."""

    FIVE_MINUTE = "five_minute"
    QUARTER_HOUR = "quarter_hour"
    HALF_HOUR = "half_hour"
    HOUR = "hour"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    QUARTER = "quarter"
    YEAR = "year"

    @property
    def approx_ms(self) -> int:
        """Nominal length, used to compare units and to infer one from a cron."""
        return _APPROX[self]

    @property
    def is_calendar(self) -> bool:
        """Month, quarter and year have varying lengths and need calendar arithmetic."""
        return self in _MONTHS

    @property
    def inferable(self) -> bool:
        """Whether SQLMesh's inference from a cron can pick this unit (week and quarter are set explicitly)."""
        return self not in (IntervalUnit.WEEK, IntervalUnit.QUARTER)

    def floor(self, ms: int, week_start: int = 0) -> int:
        """Start of the unit containing ``ms``.

        >>> from pyspark_incr.intervals.times import format_ms, to_ms
        >>> format_ms(IntervalUnit.DAY.floor(to_ms("2024-03-05 13:10:00")))
        '2024-03-05'
        >>> format_ms(IntervalUnit.MONTH.floor(to_ms("2024-03-05 13:10:00")))
        '2024-03-01'
        >>> format_ms(IntervalUnit.QUARTER_HOUR.floor(to_ms("2024-03-05 13:10:00")))
        '2024-03-05 13:00:00'
        >>> format_ms(IntervalUnit.QUARTER.floor(to_ms("2024-03-05"))), format_ms(IntervalUnit.WEEK.floor(to_ms("2024-03-07")))
        ('2024-01-01', '2024-03-04')
        >>> format_ms(IntervalUnit.WEEK.floor(to_ms("2024-03-07"), week_start=6))
        '2024-03-03'
        """
        if self is IntervalUnit.WEEK:
            days = ms // _DAY
            back = ((days + _EPOCH_WEEKDAY) - week_start) % 7  # 1970-01-01 was a Thursday
            return (days - back) * _DAY
        if not self.is_calendar:
            return ms - ms % self.approx_ms
        dt = to_datetime(ms)
        month = (dt.month - 1) // _MONTHS[self] * _MONTHS[self] + 1
        return to_ms(datetime(dt.year, month, 1))

    def ceil(self, ms: int, week_start: int = 0) -> int:
        """Start of the first unit at or after ``ms``."""
        start = self.floor(ms, week_start)
        return start if start == ms else self.add(start, 1)

    def add(self, ms: int, n: int) -> int:
        """``ms`` moved by ``n`` units (``ms`` should be aligned for calendar units).

        >>> from pyspark_incr.intervals.times import format_ms, to_ms
        >>> format_ms(IntervalUnit.MONTH.add(to_ms("2024-01-01"), 14))
        '2025-03-01'
        """
        if not self.is_calendar:
            return ms + n * self.approx_ms
        dt = to_datetime(ms)
        months = n * _MONTHS[self] + dt.month - 1
        year, month = dt.year + months // 12, months % 12 + 1
        return to_ms(datetime(year, month, 1)) + (ms - to_ms(datetime(dt.year, dt.month, 1)))

    def count(self, start: int, end: int) -> int:
        """Number of whole units in the aligned range ``[start, end)``.

        >>> from pyspark_incr.intervals.times import to_ms
        >>> IntervalUnit.DAY.count(to_ms("2024-01-01"), to_ms("2024-03-01"))
        60
        >>> IntervalUnit.MONTH.count(to_ms("2024-01-01"), to_ms("2025-03-01"))
        14
        """
        if end <= start:
            return 0
        if not self.is_calendar:
            return (end - start) // self.approx_ms
        a, b = to_datetime(start), to_datetime(end)
        months = (b.year - a.year) * 12 + b.month - a.month
        return months // _MONTHS[self]

    @classmethod
    def from_cron_gap(cls, gap_ms: int) -> "IntervalUnit":
        """The largest unit not longer than ``gap_ms`` (SQLMesh's inference rule).

        >>> IntervalUnit.from_cron_gap(24 * 3_600_000).value
        'day'
        >>> IntervalUnit.from_cron_gap(7 * 24 * 3_600_000).value
        'day'
        >>> IntervalUnit.from_cron_gap(10 * 60_000).value
        'five_minute'
        """
        for unit in sorted((u for u in cls if u.inferable), key=lambda u: -u.approx_ms):
            if unit.approx_ms <= gap_ms:
                return unit
        return cls.FIVE_MINUTE


_APPROX = {
    IntervalUnit.FIVE_MINUTE: 5 * _MINUTE,
    IntervalUnit.QUARTER_HOUR: 15 * _MINUTE,
    IntervalUnit.HALF_HOUR: 30 * _MINUTE,
    IntervalUnit.HOUR: 60 * _MINUTE,
    IntervalUnit.DAY: 1440 * _MINUTE,
    IntervalUnit.WEEK: 7 * 1440 * _MINUTE,
    IntervalUnit.MONTH: int(timedelta(days=28).total_seconds() * 1000),
    IntervalUnit.QUARTER: int(timedelta(days=89).total_seconds() * 1000),
    IntervalUnit.YEAR: int(timedelta(days=365).total_seconds() * 1000),
}
_DAY = 1440 * _MINUTE
_EPOCH_WEEKDAY = 3
#: Months per calendar unit.
_MONTHS = {IntervalUnit.MONTH: 1, IntervalUnit.QUARTER: 3, IntervalUnit.YEAR: 12}
