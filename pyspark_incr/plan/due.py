"""Which intervals of a model a plan asks for besides its missing ones: where it starts, what its lookback adds."""

from __future__ import annotations

from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model
from pyspark_incr.plan.window import Window
from pyspark_incr.state.store import EnvEntry


def effective_start(model: Model, entry: EnvEntry | None, window: Window) -> int:
    """The model's start; without one, the start the environment first used, else the last due interval."""
    if model.start_ms is not None:
        return model.start_ms
    if entry is not None and entry.start_ms is not None:
        return entry.start_ms
    return model.schedule.latest_due(window.execution_ms, ignore_cron=window.ignore_cron).start


def with_lookback(model: Model, expected: Interval, missing: IntervalSet) -> IntervalSet:
    """``missing`` plus the ``lookback`` intervals before the latest one, when the latest one is due.

    The latest interval being missing is what makes a run process new data; only then are the
    N intervals before it processed again (for late-arriving rows). Never before the model's start.

    >>> from pyspark_incr.model.definition import parse_model
    >>> from pyspark_incr.intervals import to_ms, Interval, IntervalSet
    >>> m = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, lookback 2)); SELECT 1 AS ds")
    >>> day = lambda a, b: Interval(to_ms(a), to_ms(b))
    >>> str(with_lookback(m, day("2024-01-01", "2024-01-10"), IntervalSet([day("2024-01-09", "2024-01-10")])))
    '[2024-01-07, 2024-01-10)'
    >>> str(with_lookback(m, day("2024-01-01", "2024-01-10"), IntervalSet()))
    '(none)'
    """
    lookback = getattr(model.kind, "lookback", None)
    if not lookback or expected.empty:
        return missing
    schedule = model.schedule
    latest = Interval(schedule.floor(expected.end - 1), expected.end)
    if not missing.covers(latest):
        return missing
    start = max(expected.start, schedule.unit.add(latest.start, -lookback))
    return missing | [Interval(start, expected.end)]
