"""Source pushdown: a timeseries source is read only over the run window widened by its derived bound."""

from __future__ import annotations

import re
from datetime import date

import pytest
from chispa import assert_df_equality

from conftest import call as _call
from pyspark_incr import trips
from pyspark_incr.project.external import load_external_models

WINDOWED = ("MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-12-30', cron '@daily');\n"
            "SELECT ds, k, x,\n"
            "       SUM(x) OVER (PARTITION BY k ORDER BY ds RANGE BETWEEN INTERVAL 2 DAYS PRECEDING AND CURRENT ROW) AS s3\n"
            "FROM {raw}")
UNPUSHED = ("SELECT * FROM (SELECT ds, k, x, SUM(x) OVER (PARTITION BY k ORDER BY ds RANGE BETWEEN INTERVAL 2 DAYS "
            "PRECEDING AND CURRENT ROW) AS s3 FROM {raw}) WHERE ds = DATE'2024-12-30'")


@pytest.fixture(scope="module")
def year(spark, module_isolated):
    """365 daily partitions (2024-01-01 .. 2024-12-30), one file each, declared as a timeseries source."""
    raw = f"{module_isolated}_raw.events"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {module_isolated}_raw")
    spark.range(365 * 4).selectExpr("DATE_ADD(DATE'2024-01-01', CAST(id DIV 4 AS INT)) AS ds", "CAST(id % 2 AS INT) AS k",
                                    "CAST(id * 7 % 13 AS INT) AS x") \
        .repartition("ds").write.partitionBy("ds").format("parquet").saveAsTable(raw)
    _call(spark, "create_model", definition=f"MODEL (name {raw}, kind EXTERNAL (time_column ds))")
    return raw


def test_one_interval_reads_only_the_partitions_its_bound_needs(spark, module_isolated, year):
    name = f"{module_isolated}.windowed"
    _call(spark, "create_model", definition=WINDOWED.format(name=name, raw=year))

    rows = _call(spark, "apply", execution_time="2024-12-31 00:00:00")

    assert [(r.action, str(r.start)[:10], r.status) for r in rows if r.model == name] == [("build", "2024-12-30", "ok")]
    explained = {(r.item, r.name): r for r in _call(spark, "explain", model=name, execution_time="2024-12-31 00:00:00")}
    assert explained[("pushdown", year)].detail == "ds >= run start - P2D AND ds < run end + PT0S"
    pushed = spark.sql(explained[("sql", name)].detail)
    days = sorted(f.split("ds=")[1][:10] for f in pushed.inputFiles())
    assert days == ["2024-12-28", "2024-12-29", "2024-12-30"]
    unpushed = spark.sql(UNPUSHED.format(raw=year))
    assert len(unpushed.inputFiles()) == 365  # the query as written reads the whole year
    assert_df_equality(spark.table(name).select("ds", "k", "x", "s3"), unpushed, ignore_row_order=True,
                       ignore_nullable=True)


def test_the_physical_plan_prunes_the_source_partitions(spark, module_isolated, year):
    name = f"{module_isolated}.windowed_plan"
    _call(spark, "create_model", definition=WINDOWED.format(name=name, raw=year))
    _call(spark, "apply", execution_time="2024-12-31 00:00:00")
    explained = {(r.item, r.name): r for r in _call(spark, "explain", model=name, execution_time="2024-12-31 00:00:00")}

    plan = spark.sql(explained[("sql", name)].detail)._jdf.queryExecution().executedPlan().toString()

    partition_filters = re.search(r"PartitionFilters: \[([^\]]*)\]", plan).group(1)
    assert re.sub(r"#\d+", "", partition_filters) == "isnotnull(ds), (ds >= 2024-12-28), (ds < 2024-12-31)"


def test_a_lookup_source_is_read_in_full(spark, module_isolated, year):
    name = f"{module_isolated}.with_lookup"
    spark.sql(f"CREATE TABLE IF NOT EXISTS {module_isolated}_raw.names USING parquet AS "
              "SELECT * FROM VALUES (0, 'even'), (1, 'odd') AS t(k, label)")
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-12-30', cron '@daily'); "
        f"SELECT e.ds, n.label, SUM(e.x) AS total FROM {year} e JOIN {module_isolated}_raw.names n ON e.k = n.k "
        f"GROUP BY e.ds, n.label"))
    _call(spark, "apply", execution_time="2024-12-31 00:00:00")

    explained = {(r.item, r.name): r for r in _call(spark, "explain", model=name, execution_time="2024-12-31 00:00:00")}

    assert ("pushdown", f"{module_isolated}_raw.names") not in explained
    assert explained[("bound", year)].detail == "unbounded"  # nothing ties e.ds to the run window: read whole


def test_external_models_yaml_declares_a_timeseries_source(tmp_path):
    (tmp_path / "external_models.yaml").write_text(
        "- name: raw.events\n  time_column: event_day\n  time_column_format: '%Y%m%d'\n- name: raw.devices\n")

    events, devices = load_external_models(tmp_path)

    assert (events.kind.time_column, events.kind.time_column_format) == ("event_day", "%Y%m%d")
    assert devices.kind.time_column is None


def test_external_models_yaml_refuses_a_format_without_a_time_column(tmp_path):
    (tmp_path / "external_models.yaml").write_text("- name: raw.events\n  time_column_format: '%Y%m%d'\n")

    with pytest.raises(Exception, match="time_column_format needs time_column"):
        load_external_models(tmp_path)


def test_a_calls_builds_describe_their_tables_in_one_jvm_call_and_a_child_reads_its_parents_types_there(spark, module_isolated):
    db = f"{module_isolated}_pair"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    spark.range(6).selectExpr("DATE_ADD(DATE'2024-01-01', CAST(id DIV 2 AS INT)) AS ds", "id AS x") \
        .write.format("parquet").saveAsTable(f"{db}.raw")  # not declared: the parent reads it whole
    daily = "kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', cron '@daily', partitioned_by ds"
    _call(spark, "create_model", definition=f"MODEL (name {db}.parent, {daily}); "
                                            f"SELECT ds, x FROM {db}.raw WHERE ds BETWEEN @start_ds AND @end_ds")
    _call(spark, "create_model", definition=f"MODEL (name {db}.child, {daily}); "
                                            f"SELECT ds, x * 10 AS y FROM {db}.parent WHERE ds BETWEEN @start_ds AND @end_ds")
    _call(spark, "apply", select=f"{db}.*", execution_time="2024-01-02 00:00:00")

    with trips.recorded() as sent:
        rows = _call(spark, "run", select=f"{db}.*", execution_time="2024-01-03 00:00:00")

    assert sorted((r.model, r.action, r.status) for r in rows) == [(f"{db}.child", "build", "ok"),
                                                                 (f"{db}.parent", "build", "ok")]
    explained = {(r.item, r.name) for r in _call(spark, "explain", model=f"{db}.child", execution_time="2024-01-03 00:00:00")}
    assert ("pushdown", f"{db}.parent") in explained  # the child's read of its parent is bounded ...
    assert [t for t in sent if t.method == "table"] == []  # ... by a type nobody asked the catalog for again
    assert [t.method for t in sent].count("describe") == 1  # both tables' entries, at the call's start
    # the query's (ds, ...) in the table's (..., ds) order, selected in the batch's own statement
    assert "select" not in {t.method for t in sent}
    expected = spark.createDataFrame([(date(2024, 1, d), x * 10) for d, x in ((1, 0), (1, 1), (2, 2), (2, 3))],
                                     "ds DATE, y BIGINT")
    assert_df_equality(spark.table(f"{db}.child").select("ds", "y"), expected, ignore_row_order=True, ignore_nullable=True)
