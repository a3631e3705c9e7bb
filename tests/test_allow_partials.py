"""allow_partials as SQLMesh 0.236.4 does it: the cron's last tick bounds even a partial interval.

The expected ends below were read from SQLMesh itself (``Snapshot.missing_intervals`` with the same
cron, interval_unit and execution time), then pinned here.
"""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from conftest import call as _call
from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals import Interval, to_ms
from pyspark_incr.intervals.schedule import Schedule
from pyspark_incr.intervals.times import format_ms
from pyspark_incr.model.definition import parse_model


@pytest.mark.parametrize("cron, unit, tz, now, ignore_cron, partials, end", [
    ("@daily", None, None, "2024-01-05 10:00:00", False, True, "2024-01-05"),
    ("0 6 * * *", None, None, "2024-01-05 10:00:00", False, True, "2024-01-05 06:00:00"),
    ("0 6 * * *", None, None, "2024-01-05 05:00:00", False, True, "2024-01-04 06:00:00"),
    ("0 6 * * *", None, None, "2024-01-05 06:00:00", False, True, "2024-01-05 06:00:00"),
    ("0 6 * * *", None, None, "2024-01-05 10:00:00", False, False, "2024-01-05"),
    ("@hourly", "day", None, "2024-01-05 10:30:00", False, True, "2024-01-05 10:00:00"),
    ("0 6 * * *", None, None, "2024-01-05 05:00:00", True, True, "2024-01-05 05:00:00"),
    ("0 6 * * *", None, None, "2024-01-05 05:00:00", True, False, "2024-01-05"),
    ("0 6 * * *", None, "America/New_York", "2024-01-05 12:00:00", False, True, "2024-01-05 11:00:00"),
    ("@daily", "hour", None, "2024-01-05 10:30:00", False, True, "2024-01-05"),
])
def test_a_partial_interval_ends_at_the_crons_last_tick_unless_the_cron_is_ignored(
        cron, unit, tz, now, ignore_cron, partials, end):
    schedule = Schedule.parse(cron, unit, tz=tz, allow_partials=partials)
    got = schedule.expected(to_ms("2024-01-01"), None, to_ms(now), ignore_cron=ignore_cron, allow_partials=partials)
    assert got == Interval(to_ms("2024-01-01"), to_ms(end)), format_ms(got.end)


def test_a_cron_more_frequent_than_the_unit_is_refused_unless_partials_are_allowed():
    text = "MODEL (name a.b, kind FULL, cron '@hourly', interval_unit 'day'{}); SELECT 1 AS x"
    with pytest.raises(ModelDefinitionError, match="set allow_partials true"):
        parse_model(text.format(""))
    assert parse_model(text.format(", allow_partials true")).schedule.unit.value == "day"


def _raw(spark, prefix: str) -> str:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.sql(f"DROP TABLE IF EXISTS {prefix}_raw.events")
    spark.sql(f"""CREATE TABLE {prefix}_raw.events USING parquet AS
        SELECT id, TIMESTAMP'2024-01-01 00:30:00' + make_interval(0, 0, 0, 0, CAST(id AS INT), 0, 0) AS at
        FROM range(96)""")  # one event every hour from 2024-01-01 00:30 to 2024-01-04 23:30
    return f"{prefix}_raw.events"


def _model(name: str, raw: str, cron: str) -> str:
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
            f"cron '{cron}', interval_unit 'day', allow_partials true); "
            f"SELECT CAST(at AS DATE) AS ds, COUNT(*) AS n FROM {raw} "
            f"WHERE at >= @start_ts AND at <= @end_ts GROUP BY CAST(at AS DATE)")


def _ranges(rows) -> list[tuple[str, str]]:
    return [(format_ms(to_ms(r.start)), format_ms(to_ms(r.end))) for r in rows if r.action == "build"]


def _expect(spark, name: str, counts: dict[str, int]) -> None:
    want = spark.sql("SELECT CAST(ds AS DATE) AS ds, CAST(n AS BIGINT) AS n FROM VALUES "
                     + ", ".join(f"('{d}', {n})" for d, n in counts.items()) + " AS t(ds, n)")
    assert_df_equality(spark.table(name).select("ds", "n"), want, ignore_row_order=True, ignore_nullable=True)


def test_a_partial_day_is_built_up_to_the_cron_tick_and_completed_by_a_later_run(spark, isolated):
    raw, name = _raw(spark, isolated), f"{isolated}.daily"
    _call(spark, "create_model", definition=_model(name, raw, "0 6 * * *"))

    first = _call(spark, "apply", execution_time="2024-01-03 10:00:00")
    same_tick = _call(spark, "run", execution_time="2024-01-03 20:00:00")
    built_partly = {r.ds.isoformat(): r.n for r in spark.table(name).collect()}
    later = _call(spark, "run", execution_time="2024-01-04 07:00:00")

    assert _ranges(first) == [("2024-01-01", "2024-01-03 06:00:00")], "built up to the 06:00 tick, not to 10:00"
    assert built_partly["2024-01-03"] == 6, "the events of 2024-01-03 before the tick: 00:30 .. 05:30"
    assert same_tick == [], "the partial day is recorded as built up to the tick: the same tick builds nothing"
    assert _ranges(later) == [("2024-01-03", "2024-01-04 06:00:00")], "the partial day is built again whole"
    _expect(spark, name, {"2024-01-01": 24, "2024-01-02": 24, "2024-01-03": 24, "2024-01-04": 6})


def test_an_hourly_cron_on_daily_intervals_rebuilds_the_running_day_on_each_tick(spark, isolated):
    raw, name = _raw(spark, isolated), f"{isolated}.daily"
    _call(spark, "create_model", definition=_model(name, raw, "@hourly"))

    _call(spark, "apply", execution_time="2024-01-02 10:30:00")
    before_tick = _call(spark, "run", execution_time="2024-01-02 10:59:00")
    next_tick = _call(spark, "run", execution_time="2024-01-02 11:05:00")
    status = _call(spark, "status", model=name, execution_time="2024-01-02 11:05:00")

    assert before_tick == []
    assert _ranges(next_tick) == [("2024-01-02", "2024-01-02 11:00:00")]
    assert [(r.state, format_ms(to_ms(r.end))) for r in status] == [
        ("covered", "2024-01-02 11:00:00"), ("missing", "2024-01-02 11:05:00")], "status looks up to now, past the tick"
    _expect(spark, name, {"2024-01-01": 24, "2024-01-02": 11})
