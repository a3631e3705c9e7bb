"""INCREMENTAL_BY_TIME_RANGE end to end through CALL statements, checked with chispa."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from sqlglot import exp

from pyspark_incr.intervals import Interval, to_ms
from pyspark_incr.model.definition import parse_model
from pyspark_incr.writers import BuildContext, writer_for
from conftest import call as _call, physical

QUERY = (
    "SELECT ds, shop, SUM(amount) AS total, COUNT(*) AS n FROM {raw} "
    "WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds, shop"
)


def _definition(name: str, raw: str, **extra: str) -> str:
    props = "".join(f", {k} {v}" for k, v in extra.items())
    return (
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01'{props}); "
        + QUERY.format(raw=raw)
    )


@pytest.fixture()
def raw_events(spark, isolated):
    """Ten days of events in ``<prefix>_raw.events``; one day (2024-01-04) has no rows at all."""
    schema = f"{isolated}_raw"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
    spark.sql(f"DROP TABLE IF EXISTS {schema}.events")
    spark.sql(
        f"""CREATE TABLE {schema}.events USING parquet AS
        SELECT id, DATE_ADD(DATE'2024-01-01', CAST(id % 10 AS INT)) AS ds, CAST(id % 3 AS INT) AS shop,
               CAST(id AS DOUBLE) AS amount
        FROM range(0, 500) WHERE id % 10 != 3"""
    )
    return f"{schema}.events"


def test_backfill_equals_full_computation(spark, isolated, raw_events):
    name = f"{isolated}.daily"
    _call(spark, "create_model", definition=_definition(name, raw_events))
    rows = _call(spark, "apply", execution_time="2024-01-09 00:30:00")

    assert [(r.model, r.action, r.intervals, r.status) for r in rows] == [(name, "build", 8, "ok")]
    expected = spark.sql(
        f"SELECT ds, shop, SUM(amount) AS total, COUNT(*) AS n FROM {raw_events} "
        "WHERE ds < DATE'2024-01-09' GROUP BY ds, shop"
    )
    actual = spark.table(name).select("ds", "shop", "total", "n")
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_run_builds_only_missing_intervals_in_batches(spark, isolated, raw_events):
    name = f"{isolated}.daily"
    _call(spark, "create_model", definition=_definition(name, raw_events, cron="'@daily'"))
    _call(spark, "apply", execution_time="2024-01-03 00:00:00")

    same_time = _call(spark, "run", execution_time="2024-01-03 00:00:00")
    next_day = _call(spark, "run", execution_time="2024-01-04 08:00:00")

    assert same_time == []
    assert [(r.start.date().isoformat(), r.end.date().isoformat(), r.intervals) for r in next_day] == [
        ("2024-01-03", "2024-01-04", 1)
    ]


def test_run_waits_for_the_cron_tick(spark, isolated, raw_events):
    name = f"{isolated}.daily"
    _call(spark, "create_model", definition=_definition(name, raw_events, cron="'0 12 * * *'"))
    _call(spark, "apply", execution_time="2024-01-03 13:00:00")

    before_noon = _call(spark, "run", execution_time="2024-01-04 11:00:00")
    forced = _call(spark, "run", execution_time="2024-01-04 11:00:00", ignore_cron=True)

    assert before_noon == []
    assert [(r.start.date().isoformat(), r.intervals) for r in forced] == [("2024-01-03", 1)]


def test_batch_size_splits_a_backfill(spark, isolated, raw_events):
    name = f"{isolated}.daily"
    definition = _definition(name, raw_events).replace("(time_column ds)", "(time_column ds, batch_size 3)")
    _call(spark, "create_model", definition=definition)

    rows = _call(spark, "apply", execution_time="2024-01-08 00:00:00")

    assert [r.intervals for r in rows] == [3, 3, 1]


def test_output_filter_drops_rows_outside_the_interval(spark, isolated, raw_events):
    name = f"{isolated}.leaky"
    leaky = (
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01'); "
        f"SELECT ds, COUNT(*) AS n FROM {raw_events} GROUP BY ds"  # no time filter at all
    )
    _call(spark, "create_model", definition=leaky)
    _call(spark, "apply", execution_time="2024-01-03 00:00:00")

    days = sorted(r.ds.isoformat() for r in spark.table(name).select("ds").distinct().collect())
    assert days == ["2024-01-01", "2024-01-02"]


def test_status_shows_covered_ranges_and_gaps(spark, isolated, raw_events):
    name = f"{isolated}.daily"
    _call(spark, "create_model", definition=_definition(name, raw_events))
    _call(spark, "apply", execution_time="2024-01-03 00:00:00")

    rows = _call(spark, "status", model=name, execution_time="2024-01-06 00:00:00")

    assert [(r.state, r.start.date().isoformat(), r.end.date().isoformat(), r.intervals) for r in rows] == [
        ("covered", "2024-01-01", "2024-01-03", 2),
        ("missing", "2024-01-03", "2024-01-06", 3),
    ]


def _writer_context(spark, name: str, raw: str) -> BuildContext:
    model = parse_model(_definition(name, raw))
    return BuildContext(spark, model, exp.to_table(physical(spark, model.name), dialect="spark"), to_ms("2024-01-10"))


def test_rewriting_an_interval_is_idempotent(spark, isolated, raw_events):
    name = f"{isolated}.daily"
    _call(spark, "create_model", definition=_definition(name, raw_events))
    _call(spark, "apply", execution_time="2024-01-09 00:00:00")
    before = spark.table(name).localCheckpoint()
    ctx = _writer_context(spark, name, raw_events)

    writer_for(ctx.model).write(ctx, Interval(to_ms("2024-01-02"), to_ms("2024-01-05")))
    writer_for(ctx.model).write(ctx, Interval(to_ms("2024-01-02"), to_ms("2024-01-05")))

    assert_df_equality(spark.table(name), before, ignore_row_order=True)


def test_rewriting_an_interval_with_empty_output_removes_its_old_rows(spark, isolated, raw_events):
    name = f"{isolated}.daily"
    _call(spark, "create_model", definition=_definition(name, raw_events))
    _call(spark, "apply", execution_time="2024-01-09 00:00:00")
    untouched = spark.table(name).where("ds NOT BETWEEN DATE'2024-01-02' AND DATE'2024-01-05'").localCheckpoint()
    kept = spark.table(raw_events).where("ds NOT BETWEEN DATE'2024-01-02' AND DATE'2024-01-05'").localCheckpoint()
    kept.write.insertInto(raw_events, overwrite=True)
    ctx = _writer_context(spark, name, raw_events)

    writer_for(ctx.model).write(ctx, Interval(to_ms("2024-01-02"), to_ms("2024-01-06")))

    assert spark.table(name).where("ds BETWEEN DATE'2024-01-02' AND DATE'2024-01-05'").count() == 0
    assert_df_equality(spark.table(name), untouched, ignore_row_order=True)


def test_every_batch_reports_the_rows_it_wrote_and_history_keeps_them(spark, isolated, raw_events):
    name = f"{isolated}.daily"
    _call(spark, "create_model", definition=_definition(name, raw_events, cron="'@daily'"))
    applied = _call(spark, "apply", execution_time="2024-01-04 00:00:00")
    _call(spark, "run", execution_time="2024-01-05 00:00:00")

    history = _call(spark, "history", model=name, limit=5)

    assert [r.rows for r in applied] == [9]  # 3 days x 3 shops
    assert [(r.procedure, r.status, r.rows, r.start.date().isoformat()) for r in history] == [
        ("run", "ok", 0, "2024-01-04"),  # 2024-01-04 has no raw rows at all
        ("apply", "ok", 9, "2024-01-01"),
    ]
