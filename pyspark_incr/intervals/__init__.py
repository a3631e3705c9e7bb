"""Time intervals: half-open ``[start, end)`` epoch milliseconds, UTC, everywhere."""

from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.intervals.times import format_ms, to_ms
from pyspark_incr.intervals.units import IntervalUnit

__all__ = ["Interval", "IntervalSet", "IntervalUnit", "format_ms", "to_ms"]
