"""Time columns other than DATE: hourly TIMESTAMP intervals and formatted string/int columns."""

from __future__ import annotations

from chispa import assert_df_equality
from sqlglot import exp

from pyspark_incr.intervals import Interval, to_ms
from pyspark_incr.model.definition import parse_model
from pyspark_incr.writers import BuildContext, writer_for
from conftest import call as _call, physical


def _raw(spark, prefix: str):
    """Events every 10 minutes over 2024-01-01 00:00 .. 06:00 UTC."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.sql(f"DROP TABLE IF EXISTS {prefix}_raw.ticks")
    spark.sql(
        f"""CREATE TABLE {prefix}_raw.ticks USING parquet AS
        SELECT id, TIMESTAMP'2024-01-01 00:00:00+00:00' + make_interval(0, 0, 0, 0, 0, CAST(id * 10 AS INT), 0) AS ts
        FROM range(36)"""
    )
    return f"{prefix}_raw.ticks"


def test_hourly_model_on_a_timestamp_column_builds_each_hour_once(spark, isolated):
    raw = _raw(spark, isolated)
    name = f"{isolated}.hourly"
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column hour), start '2024-01-01', cron '@hourly'); "
        f"SELECT date_trunc('HOUR', ts) AS hour, COUNT(*) AS n FROM {raw} "
        "WHERE ts BETWEEN @start_dt AND @end_dt GROUP BY 1"
    ))

    first = _call(spark, "apply", execution_time="2024-01-01 03:20:00")
    later = _call(spark, "run", execution_time="2024-01-01 05:00:00")

    assert [(r.intervals, r.status) for r in first] == [(3, "ok")]
    assert [(r.start.hour, r.end.hour, r.intervals) for r in later] == [(3, 5, 2)]
    expected = spark.sql(
        f"SELECT date_trunc('HOUR', ts) AS hour, COUNT(*) AS n FROM {raw} "
        "WHERE ts < TIMESTAMP'2024-01-01 05:00:00+00:00' GROUP BY 1"
    )
    assert_df_equality(spark.table(name).select("hour", "n"), expected, ignore_row_order=True, ignore_nullable=True)


def test_rewriting_hours_of_a_timestamp_partitioned_table_replaces_exactly_them(spark, isolated):
    raw = _raw(spark, isolated)
    name = f"{isolated}.hourly"
    definition = (
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column hour), start '2024-01-01', cron '@hourly'); "
        f"SELECT date_trunc('HOUR', ts) AS hour, COUNT(*) AS n FROM {raw} "
        "WHERE ts BETWEEN @start_dt AND @end_dt GROUP BY 1"
    )
    _call(spark, "create_model", definition=definition)
    _call(spark, "apply", execution_time="2024-01-01 06:00:00")
    spark.sql(f"TRUNCATE TABLE {raw}")
    model = parse_model(definition)
    ctx = BuildContext(spark, model, exp.to_table(physical(spark, name), dialect="spark"), to_ms("2024-01-02"))

    writer_for(model).write(ctx, Interval(to_ms("2024-01-01 02:00:00"), to_ms("2024-01-01 04:00:00")))

    assert sorted(r.hour.hour for r in spark.table(name).collect()) == [0, 1, 4, 5]


def test_string_time_column_with_a_format_is_filtered_and_replaced_by_its_format(spark, isolated):
    name = f"{isolated}.compact"
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column (day_key, '%Y%m%d')), start '2024-01-01'); "
        "SELECT date_format(DATE_ADD(DATE'2023-12-30', CAST(id AS INT)), 'yyyyMMdd') AS day_key, id FROM range(10)"
    ))

    _call(spark, "apply", execution_time="2024-01-04 00:00:00")

    keys = sorted(r.day_key for r in spark.table(name).collect())
    assert keys == ["20240101", "20240102", "20240103"]
