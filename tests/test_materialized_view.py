"""VIEW (materialized true): a stored table rebuilt only when its query or the data it reads changed."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from sqlglot import exp

from conftest import call as _call, physical

DAY = "2024-01-0{} 00:00:00"


def _setup(spark, prefix: str) -> tuple[str, str, str]:
    """A raw table with two days of events, a daily time-range model over it, and a materialized total per shop."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.sql(f"""CREATE TABLE {prefix}_raw.events USING parquet AS SELECT * FROM VALUES
        (DATE'2024-01-01', 'a', 1), (DATE'2024-01-01', 'b', 2), (DATE'2024-01-02', 'a', 3),
        (DATE'2024-01-03', 'b', 4) AS t(ds, shop, amount)""")
    daily, totals = f"{prefix}.daily", f"{prefix}.totals"
    _call(spark, "create_model", definition=(
        f"MODEL (name {daily}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', cron '@daily'); "
        f"SELECT ds, shop, SUM(amount) AS amount FROM {prefix}_raw.events "
        f"WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds, shop"))
    _call(spark, "create_model", definition=_totals(totals, daily))
    return f"{prefix}_raw.events", daily, totals


def _totals(name: str, daily: str, materialized: str = "true", column: str = "total") -> str:
    return (f"MODEL (name {name}, kind VIEW (materialized {materialized})); "
            f"SELECT shop, SUM(amount) AS {column} FROM {daily} GROUP BY shop")


def _expected(spark, rows: str):
    return spark.sql(f"SELECT * FROM VALUES {rows} AS t(shop, total)")


def _assert_rows(spark, name: str, rows: str) -> None:
    assert_df_equality(spark.table(name), _expected(spark, rows), ignore_row_order=True, ignore_nullable=True)


def _steps(results, model: str) -> list[tuple[str, str]]:
    return [(r.action, r.status) for r in results if r.model == model]


def _is_table(spark, name: str) -> bool:
    """Whether the physical object of the version prod shows is a table (a plain VIEW's is a view)."""
    table = exp.to_table(physical(spark, name), dialect="spark")
    return spark._jsparkSession.catalog().getTable(table.db, table.name).tableType().upper() != "VIEW"


def test_a_materialized_view_is_a_table_holding_the_querys_rows(spark, isolated):
    _, daily, totals = _setup(spark, isolated)

    results = _call(spark, "apply", execution_time=DAY.format(3))

    assert _steps(results, totals) == [("create view", "ok")]
    assert _is_table(spark, totals)
    _assert_rows(spark, totals, "('a', 4L), ('b', 2L)")


def test_a_run_with_unchanged_sources_leaves_the_materialized_view_alone(spark, isolated):
    _, daily, totals = _setup(spark, isolated)
    _call(spark, "apply", execution_time=DAY.format(3))
    files = sorted(spark.table(totals).inputFiles())

    results = _call(spark, "run", execution_time=DAY.format(3))
    planned = [r for r in _call(spark, "plan", execution_time=DAY.format(3)) if r.model == totals]

    assert _steps(results, totals) == []
    assert [(p.change, p.batches) for p in planned] == [("unchanged", 0)]
    assert sorted(spark.table(totals).inputFiles()) == files


def test_new_data_in_a_parent_refreshes_the_materialized_view_in_the_same_run(spark, isolated):
    _, daily, totals = _setup(spark, isolated)
    _call(spark, "apply", execution_time=DAY.format(3))

    results = _call(spark, "run", execution_time=DAY.format(4))

    assert _steps(results, daily) == [("build", "ok")]
    assert _steps(results, totals) == [("refresh", "ok")]
    _assert_rows(spark, totals, "('a', 4L), ('b', 6L)")


def test_rows_added_to_a_raw_source_table_refresh_the_materialized_view_on_the_next_run(spark, isolated):
    raw, _, _ = _setup(spark, isolated)
    summary = f"{isolated}.raw_summary"
    _call(spark, "create_model", definition=(
        f"MODEL (name {summary}, kind VIEW (materialized true)); SELECT shop, SUM(amount) AS total FROM {raw} GROUP BY shop"))
    _call(spark, "apply", execution_time=DAY.format(3))
    assert _steps(_call(spark, "run", execution_time=DAY.format(3)), summary) == []

    spark.sql(f"INSERT INTO {raw} VALUES (DATE'2024-01-01', 'c', 5)")
    planned = [r for r in _call(spark, "plan", execution_time=DAY.format(3)) if r.model == summary]
    results = _call(spark, "run", execution_time=DAY.format(3))

    assert [p.batches for p in planned] == [1] and "data it reads changed" in planned[0].reason
    assert _steps(results, summary) == [("refresh", "ok")]
    _assert_rows(spark, summary, "('a', 4L), ('b', 6L), ('c', 5L)")


def test_a_changed_query_rebuilds_the_materialized_view_with_its_new_columns(spark, isolated):
    _, daily, totals = _setup(spark, isolated)
    _call(spark, "apply", execution_time=DAY.format(3))

    _call(spark, "create_model", definition=_totals(totals, daily, column="revenue"))
    results = _call(spark, "apply", execution_time=DAY.format(3))

    assert _steps(results, totals) == [("create view", "ok")]
    assert spark.table(totals).columns == ["shop", "revenue"]


def test_switching_materialized_off_and_on_turns_the_table_into_a_view_and_back(spark, isolated):
    _, daily, totals = _setup(spark, isolated)
    _call(spark, "apply", execution_time=DAY.format(3))

    _call(spark, "create_model", definition=_totals(totals, daily, materialized="false"))
    _call(spark, "apply", execution_time=DAY.format(3))
    assert not _is_table(spark, totals)
    _assert_rows(spark, totals, "('a', 4L), ('b', 2L)")

    _call(spark, "create_model", definition=_totals(totals, daily))
    _call(spark, "apply", execution_time=DAY.format(3))
    assert _is_table(spark, totals)
    _assert_rows(spark, totals, "('a', 4L), ('b', 2L)")


@pytest.fixture()
def rdd_view(spark, isolated):
    """A temporary view over an RDD (no files to version), dropped after the test: other tests list tables."""
    view = f"{isolated}_rdd_numbers"
    # createDataFrame, not RDD.toDF: toDF builds in the last SparkSession pyspark constructed (another test's
    # newSession, say), whose temp views this session's CALLs cannot see
    spark.createDataFrame(spark.sparkContext.parallelize([(1,), (2,)]), ["n"]).createOrReplaceTempView(view)
    yield view
    spark.catalog.dropTempView(view)


def test_a_source_that_is_not_a_file_table_refreshes_the_materialized_view_on_every_run(spark, isolated, rdd_view):
    name = f"{isolated}.numbers"
    _call(spark, "create_model", definition=f"MODEL (name {name}, kind VIEW (materialized true)); SELECT n FROM {rdd_view}")
    _call(spark, "apply", execution_time=DAY.format(3))

    results = _call(spark, "run", execution_time=DAY.format(3))
    planned = [r for r in _call(spark, "plan", execution_time=DAY.format(3)) if r.model == name]

    assert _steps(results, name) == [("refresh", "ok")]
    assert "not a file-based table" in planned[0].reason
    assert sorted(r.n for r in spark.table(name).collect()) == [1, 2]
