"""Table formats: Delta where it is on the classpath (its SQL checked against fixtures), a clear error where not."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlglot import exp

from conftest import state_rows, tables_in
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.intervals.times import to_ms
from pyspark_incr.sqltext import call_sql
from pyspark_incr.writers import formats
from pyspark_incr.writers.tables import insert_sql
from pyspark_incr.writers.time_range import time_condition

FIXTURES = Path(__file__).parent / "fixtures" / "delta_sql"


def _expected(name: str) -> str:
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return " ".join(line for line in lines if not line.startswith("--")).strip()


@pytest.mark.parametrize("fixture, table, column, start, end, spark_type", [
    ("time_range_replace_where.sql", "shop.daily", "ds", "2024-01-01", "2024-01-03", "date"),
    ("time_range_replace_where_hourly.sql", "web.hits", "ts", "2024-01-01 10:00:00", "2024-01-01 11:00:00", "timestamp"),
])
def test_a_delta_time_range_batch_replaces_exactly_its_interval_with_replace_where(fixture, table, column, start, end,
                                                                                   spark_type):
    condition = time_condition(column, Interval(to_ms(start), to_ms(end)), spark_type, None)
    target = exp.to_table(table)
    for part in target.parts:
        part.set("quoted", True)

    assert insert_sql(target, "__incr_batch", replace_where=condition) == _expected(fixture)


def test_asking_for_delta_without_delta_on_the_classpath_fails_at_plan_time_and_changes_nothing(spark, isolated):
    if formats.delta_available(spark):
        pytest.skip("Delta Lake is on this classpath: the error path cannot be shown here")
    name = f"{isolated}.daily"
    spark.sql(call_sql("create_model", definition=(
        f"MODEL (name {name}, kind FULL, table_format delta, start '2024-01-01'); SELECT 1 AS x"))).collect()
    before = state_rows(spark, isolated)

    with pytest.raises(Exception, match=rf"model {name}.*table_format delta needs Delta Lake.*io.delta.*table_format parquet"):
        spark.sql(call_sql("apply", execution_time="2024-01-02 00:00:00")).collect()

    assert state_rows(spark, isolated) == before
    assert tables_in(spark, isolated) == set()


def test_an_iceberg_table_format_is_refused_naming_the_formats_that_work(spark, isolated):
    name = f"{isolated}.ice"
    spark.sql(call_sql("create_model", definition=(
        f"MODEL (name {name}, kind FULL, table_format iceberg); SELECT 1 AS x"))).collect()

    with pytest.raises(Exception, match=rf"model {name}.*table_format iceberg is not supported.*parquet or delta"):
        spark.sql(call_sql("apply", execution_time="2024-01-02 00:00:00")).collect()


def test_the_format_of_an_existing_table_comes_from_the_catalog(spark, isolated):
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}")
    spark.sql(f"CREATE TABLE {isolated}.p (x INT) USING parquet")

    assert formats.existing(spark, exp.to_table(f"{isolated}.p")) == "parquet"
    assert formats.existing(spark, exp.to_table(f"{isolated}.missing")) is None


def test_a_delta_time_range_model_replaces_its_interval_end_to_end(spark, isolated):
    if not formats.delta_available(spark):
        pytest.skip("Delta Lake (io.delta classes) is not on this Spark's classpath; Maven Central, where "
                    "its jars come from, is unreachable from this machine")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"""CREATE TABLE {isolated}_raw.e USING parquet AS
        SELECT id, DATE_ADD(DATE'2024-01-01', CAST(id % 3 AS INT)) AS ds FROM range(30)""")
    name = f"{isolated}.daily"
    spark.sql(call_sql("create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), table_format delta, "
        f"start '2024-01-01'); SELECT ds, COUNT(*) AS n FROM {isolated}_raw.e "
        f"WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds"))).collect()

    spark.sql(call_sql("apply", execution_time="2024-01-04 00:00:00")).collect()

    assert formats.existing(spark, exp.to_table(name)) == "delta"
    assert sorted((r.ds.isoformat(), r.n) for r in spark.table(name).collect()) == [
        ("2024-01-01", 10), ("2024-01-02", 10), ("2024-01-03", 10)]
