"""Table-driven: every interval unit's boundaries, due-ness from crons, lookback and partial intervals."""

from __future__ import annotations

import pytest

from pyspark_incr.intervals import Interval, IntervalSet, to_ms
from pyspark_incr.intervals.schedule import Schedule
from pyspark_incr.intervals.times import format_ms
from pyspark_incr.intervals.units import IntervalUnit
from pyspark_incr.model.definition import parse_model
from pyspark_incr.plan.due import with_lookback

U = IntervalUnit

# unit, a moment, its interval's start, the next interval's start
BOUNDARIES = [
    (U.FIVE_MINUTE, "2024-03-05 13:07:12", "2024-03-05 13:05:00", "2024-03-05 13:10:00"),
    (U.QUARTER_HOUR, "2024-03-05 13:59:59", "2024-03-05 13:45:00", "2024-03-05 14:00:00"),
    (U.HALF_HOUR, "2024-03-05 13:30:00", "2024-03-05 13:30:00", "2024-03-05 14:00:00"),
    (U.HOUR, "2024-12-31 23:10:00", "2024-12-31 23:00:00", "2025-01-01"),
    (U.DAY, "2024-02-28 12:00:00", "2024-02-28", "2024-02-29"),
    (U.DAY, "2024-02-29 00:00:00", "2024-02-29", "2024-03-01"),
    (U.WEEK, "2024-03-07", "2024-03-04", "2024-03-11"),
    (U.WEEK, "2024-12-31", "2024-12-30", "2025-01-06"),
    (U.MONTH, "2024-02-15", "2024-02-01", "2024-03-01"),
    (U.MONTH, "2024-12-31 23:59:59", "2024-12-01", "2025-01-01"),
    (U.QUARTER, "2024-05-20", "2024-04-01", "2024-07-01"),
    (U.QUARTER, "2024-12-01", "2024-10-01", "2025-01-01"),
    (U.YEAR, "2024-07-01", "2024-01-01", "2025-01-01"),
]


@pytest.mark.parametrize("unit, moment, start, following", BOUNDARIES, ids=lambda v: getattr(v, "value", v))
def test_every_unit_has_exact_interval_boundaries(unit, moment, start, following):
    floor = unit.floor(to_ms(moment))
    assert format_ms(floor) == start
    assert format_ms(unit.add(floor, 1)) == following
    assert unit.count(floor, unit.add(floor, 5)) == 5


@pytest.mark.parametrize("week_start, expected", [(0, "2024-03-04"), (2, "2024-03-06"), (6, "2024-03-03")])
def test_week_start_moves_the_week_boundary(week_start, expected):
    assert format_ms(U.WEEK.floor(to_ms("2024-03-07 10:00:00"), week_start)) == expected


@pytest.mark.parametrize("unit, start, end, count", [
    (U.MONTH, "2024-01-01", "2025-01-01", 12), (U.QUARTER, "2024-01-01", "2025-01-01", 4),
    (U.MONTH, "2024-02-01", "2024-03-01", 1), (U.WEEK, "2024-01-01", "2024-12-30", 52),
])
def test_calendar_units_count_whole_units_whatever_their_length(unit, start, end, count):
    assert unit.count(to_ms(start), to_ms(end)) == count


@pytest.mark.parametrize("cron, unit", [
    ("*/5 * * * *", U.FIVE_MINUTE), ("*/15 * * * *", U.QUARTER_HOUR), ("*/30 * * * *", U.HALF_HOUR),
    ("@hourly", U.HOUR), ("@daily", U.DAY), ("0 6 * * *", U.DAY), ("@weekly", U.DAY), ("@monthly", U.MONTH),
    ("0 0 1 */3 *", U.MONTH), ("@yearly", U.YEAR),
])
def test_unit_is_inferred_from_the_cron_as_sqlmesh_does_never_week_or_quarter(cron, unit):
    assert Schedule.parse(cron).unit is unit


# cron, cron_tz, execution time, exclusive end of the due intervals
DUE = [
    ("@daily", None, "2024-01-05 00:00:00", "2024-01-05"),
    ("@daily", None, "2024-01-05 13:00:00", "2024-01-05"),  # hourly calls of a daily model: still only up to today
    ("@daily", None, "2024-01-05 23:59:59", "2024-01-05"),
    ("0 6 * * *", None, "2024-01-05 05:59:59", "2024-01-04"),
    ("0 6 * * *", None, "2024-01-05 06:00:00", "2024-01-05"),
    ("0 6 * * *", "America/New_York", "2024-01-05 10:59:00", "2024-01-04"),  # 05:59 in New York
    ("0 6 * * *", "America/New_York", "2024-01-05 11:00:00", "2024-01-05"),  # 06:00 in New York
    ("@hourly", None, "2024-01-05 13:30:00", "2024-01-05 13:00:00"),
    ("@monthly", None, "2024-03-15", "2024-03-01"),
]


@pytest.mark.parametrize("cron, tz, now, due_end", DUE)
def test_intervals_are_due_once_complete_and_the_cron_has_ticked(cron, tz, now, due_end):
    assert format_ms(Schedule.parse(cron, tz=tz).due_end(to_ms(now))) == due_end


def test_cron_tz_shifts_when_intervals_are_due_never_their_utc_boundaries():
    utc, ny = Schedule.parse("0 6 * * *"), Schedule.parse("0 6 * * *", tz="America/New_York")
    assert ny.floor(to_ms("2024-01-05 03:00:00")) == utc.floor(to_ms("2024-01-05 03:00:00")) == to_ms("2024-01-05")


def test_allow_partials_ends_the_expected_range_at_the_cron_tick_instead_of_at_the_last_complete_interval():
    s = Schedule.parse("@hourly", "day", allow_partials=True)
    assert s.expected(to_ms("2024-01-01"), None, to_ms("2024-01-03 10:30:00")) == Interval(to_ms("2024-01-01"), to_ms("2024-01-03"))
    assert s.expected(to_ms("2024-01-01"), None, to_ms("2024-01-03 10:30:00"), allow_partials=True) == Interval(
        to_ms("2024-01-01"), to_ms("2024-01-03 10:00:00"))


def _model(props: str):
    return parse_model(f"MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds{props}), start '2024-01-01'); SELECT 1 AS ds")


def _days(*pairs):
    return IntervalSet([Interval(to_ms(a), to_ms(b)) for a, b in pairs])


@pytest.mark.parametrize("lookback, missing, expected", [
    (2, [("2024-01-09", "2024-01-10")], "[2024-01-07, 2024-01-10)"),  # exactly the last N before the new one
    (1, [("2024-01-09", "2024-01-10")], "[2024-01-08, 2024-01-10)"),
    (20, [("2024-01-09", "2024-01-10")], "[2024-01-01, 2024-01-10)"),  # never before the model's start
    (2, [("2024-01-03", "2024-01-04")], "[2024-01-03, 2024-01-04)"),  # an old gap is no new data: no lookback
    (2, [], "(none)"),  # nothing due: nothing re-run
])
def test_lookback_reprocesses_exactly_the_last_n_intervals_when_a_new_one_is_due(lookback, missing, expected):
    model = _model(f", lookback {lookback}")
    assert str(with_lookback(model, Interval(to_ms("2024-01-01"), to_ms("2024-01-10")), _days(*missing))) == expected


def test_end_trims_lookback_once_the_model_has_ended():
    model = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, lookback 3), "
                        "start '2024-01-01', end '2024-01-05'); SELECT 1 AS ds")
    expected = model.schedule.expected(model.start_ms, model.end_ms, to_ms("2024-02-01"))
    assert str(expected) == "[2024-01-01, 2024-01-06)"
    assert str(with_lookback(model, expected, IntervalSet())) == "(none)"


def test_batch_size_7_over_30_missing_days_gives_jobs_of_7_7_7_7_2():
    from pyspark_incr.intervals.batching import batches

    jobs = batches(_days(("2024-01-01", "2024-01-31")), U.DAY, 7)
    assert [U.DAY.count(j.start, j.end) for j in jobs] == [7, 7, 7, 7, 2]


def test_a_gap_in_the_middle_starts_a_new_job():
    from pyspark_incr.intervals.batching import batches

    jobs = batches(_days(("2024-01-01", "2024-01-11"), ("2024-01-13", "2024-01-31")), U.DAY, 7)
    assert [(format_ms(j.start), U.DAY.count(j.start, j.end)) for j in jobs] == [
        ("2024-01-01", 7), ("2024-01-08", 3), ("2024-01-13", 7), ("2024-01-20", 7), ("2024-01-27", 4)]
