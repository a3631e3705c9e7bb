"""A batch failing inside Spark is recorded with Spark's message, stays missing, and stops only what depends on it."""

from __future__ import annotations

import glob
import os

import pytest
from chispa import assert_df_equality

from conftest import call as _call, physical
from pyspark_incr.intervals import to_ms
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.state.store import StateStore

EQUAL = dict(ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)


def _source(spark, prefix: str, days: int = 3) -> str:
    table = f"{prefix}_raw.events"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.range(0, days * 4).selectExpr("id", "date_add(DATE'2024-01-01', CAST(id DIV 4 AS INT)) AS ds") \
        .write.format("parquet").partitionBy("ds").saveAsTable(table)
    return table


def _daily(spark, name: str, query: str, batch_size: int = 1) -> None:
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size {batch_size}), "
        f"start '2024-01-01', cron '@daily'); {query}"))


def _built(spark, name: str) -> IntervalSet:
    return StateStore(spark).coverage().get(physical(spark, name), IntervalSet())


def _days(first: str, last_exclusive: str) -> IntervalSet:
    return IntervalSet([Interval(to_ms(first), to_ms(last_exclusive))])


@pytest.fixture()
def failing_day(spark, isolated):
    """``failing`` breaks inside Spark on its second day; ``child`` reads it; ``other`` is independent."""
    raw = _source(spark, isolated)
    names = {k: f"{isolated}.{k}" for k in ("failing", "child", "other")}
    _daily(spark, names["failing"], (
        "SELECT id, ds, CASE WHEN ds = DATE'2024-01-02' THEN raise_error('corrupt record on 2024-01-02') "
        f"ELSE 'ok' END AS note FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds"))
    _daily(spark, names["child"], f"SELECT id, ds FROM {names['failing']} WHERE ds BETWEEN @start_ds AND @end_ds")
    _daily(spark, names["other"], f"SELECT id, ds FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds")
    return names


def test_a_batch_failing_in_spark_is_recorded_with_its_message_and_its_interval_stays_missing(spark, failing_day):
    names = failing_day

    rows = _call(spark, "apply", execution_time="2024-01-04 00:00:00", concurrency=1)

    by_model = {}
    for r in rows:
        by_model.setdefault(r.model, []).append((r.action, r.status))
    assert by_model[names["failing"]] == [("build", "ok"), ("build", "failed")], "day 3 is not started"
    failed = next(r for r in rows if r.status == "failed")
    assert "corrupt record on 2024-01-02" in failed.message
    assert "\n" not in failed.message and "at org.apache" not in failed.message, "the message, not the stack"
    assert by_model[names["other"]] == [("build", "ok")] * 3, "an independent model goes on"
    assert by_model[names["child"]] == [("skip", "skipped")]
    history = _call(spark, "history", model=names["failing"], limit=10)
    assert [(h.status, "corrupt record on 2024-01-02" in h.message) for h in history if h.status == "failed"] \
        == [("failed", True)]
    assert _built(spark, names["failing"]) == _days("2024-01-01", "2024-01-02")


def test_fail_fast_starts_nothing_after_the_first_failure(spark, failing_day):
    names = failing_day

    rows = _call(spark, "apply", execution_time="2024-01-04 00:00:00", concurrency=1, fail_fast=True)

    statuses = {r.model: r.status for r in rows if r.status != "ok"}
    assert statuses == {names["failing"]: "failed", names["child"]: "skipped", names["other"]: "skipped"}
    other = next(r for r in rows if r.model == names["other"])
    assert "fail_fast stopped the apply after model " + names["failing"] in other.message
    assert spark.table(names["other"]).count() == 0 if spark.catalog.tableExists(names["other"]) else True


def test_the_session_setting_makes_runs_fail_fast(spark, failing_day):
    names = failing_day
    _call(spark, "apply", execution_time="2024-01-02 00:00:00", concurrency=1)
    spark.conf.set("spark.incr.failFast", "true")
    try:
        rows = _call(spark, "run", execution_time="2024-01-04 00:00:00", concurrency=1)
    finally:
        spark.conf.unset("spark.incr.failFast")

    assert {r.model: r.status for r in rows if r.model != names["failing"]} == {
        names["child"]: "skipped", names["other"]: "skipped"}


def test_a_source_file_gone_since_the_session_listed_it_is_not_read_from_the_stale_listing(spark, isolated):
    raw = _source(spark, isolated)
    name = f"{isolated}.reader"
    _daily(spark, name, f"SELECT id, ds FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds", batch_size=3)
    spark.table(raw).count()  # Spark now lists the source's files from its cache
    location = spark.sql(f"DESCRIBE FORMATTED {raw}").where("col_name = 'Location'").first().data_type
    for path in glob.glob(location.removeprefix("file:") + "/ds=2024-01-02/*.parquet"):
        os.remove(path)  # as another application rewriting the source would

    rows = _call(spark, "apply", execution_time="2024-01-04 00:00:00")

    assert [r.status for r in rows if r.model == name] == ["ok"], "a call lists what it reads afresh"
    spark.catalog.refreshTable(raw)
    assert_df_equality(spark.table(name), spark.table(raw).select("id", "ds"), **EQUAL)


def _amounts(spark, table: str, amount_type: str, values: str) -> str:
    """(Re)create source ``table`` with an ``amount`` column of ``amount_type`` holding ``values``."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {table.split('.')[0]}")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(f"CREATE TABLE {table} (amount {amount_type}, ds DATE) USING parquet")
    spark.sql(f"INSERT INTO {table} VALUES {values}")
    return table


def test_a_value_that_does_not_cast_fails_the_batch_with_sparks_error(spark, isolated):
    raw = _amounts(spark, f"{isolated}_raw.amounts", "STRING", "('1', DATE'2024-01-01'), ('x', DATE'2024-01-02')")
    name = f"{isolated}.amounts"
    _daily(spark, name, f"SELECT CAST(amount AS INT) AS amount, ds FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        rows = _call(spark, "apply", execution_time="2024-01-03 00:00:00")
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")

    assert [(r.status, r.start.day) for r in rows if r.model == name] == [("ok", 1), ("failed", 2)]
    message = next(r.message for r in rows if r.status == "failed")
    assert "CAST_INVALID_INPUT" in message and "'x'" in message, message
    assert _built(spark, name) == _days("2024-01-01", "2024-01-02")


def test_a_source_whose_column_changed_type_fails_the_batch_and_keeps_the_table_readable(spark, isolated):
    raw = _amounts(spark, f"{isolated}_raw.typed", "INT", "(1, DATE'2024-01-01')")
    name = f"{isolated}.typed"
    _daily(spark, name, f"SELECT amount, ds FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds")
    _call(spark, "apply", execution_time="2024-01-02 00:00:00")
    _amounts(spark, raw, "STRING", "('two', DATE'2024-01-02')")

    rows = _call(spark, "run", execution_time="2024-01-03 00:00:00")

    assert [r.status for r in rows if r.model == name] == ["failed"], rows
    message = next(r.message for r in rows if r.model == name)
    assert "column amount is STRING but table" in message and "holds INT" in message, message
    assert _built(spark, name) == _days("2024-01-01", "2024-01-02")
    assert [tuple(r) for r in spark.table(name).collect()] == [(1, __import__("datetime").date(2024, 1, 1))]
