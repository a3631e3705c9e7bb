"""Splitting missing ranges into jobs."""

from __future__ import annotations

from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.intervals.units import IntervalUnit


def batches(missing: IntervalSet, unit: IntervalUnit, batch_size: int | None = None) -> list[Interval]:
    """One job per contiguous missing range, or per ``batch_size`` units of it; a gap always starts a new job.

    >>> from pyspark_incr.intervals.times import to_ms
    >>> d = lambda s: to_ms(s)
    >>> gaps = IntervalSet([Interval(d("2024-01-01"), d("2024-01-04")), Interval(d("2024-01-06"), d("2024-01-07"))])
    >>> [str(b) for b in batches(gaps, IntervalUnit.DAY)]
    ['[2024-01-01, 2024-01-04)', '[2024-01-06, 2024-01-07)']
    >>> [str(b) for b in batches(gaps, IntervalUnit.DAY, 2)]
    ['[2024-01-01, 2024-01-03)', '[2024-01-03, 2024-01-04)', '[2024-01-06, 2024-01-07)']
    """
    jobs: list[Interval] = []
    for r in missing:
        if not batch_size:
            jobs.append(r)
            continue
        start = r.start
        while start < r.end:
            stop = min(unit.add(start, batch_size), r.end)
            jobs.append(Interval(start, stop))
            start = stop
    return jobs


def covering(missing: IntervalSet) -> list[Interval]:
    """One job from the first missing interval to the last, gaps included (kinds whose batch is the whole run).

    >>> from pyspark_incr.intervals.times import to_ms
    >>> gaps = IntervalSet([Interval(to_ms("2024-01-01"), to_ms("2024-01-03")), Interval(to_ms("2024-01-05"), to_ms("2024-01-06"))])
    >>> [str(b) for b in covering(gaps)], covering(IntervalSet())
    (['[2024-01-01, 2024-01-06)'], [])
    """
    return [Interval(missing.start, missing.end)] if missing else []
