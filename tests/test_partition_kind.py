"""INCREMENTAL_BY_PARTITION: a run overwrites exactly the partitions its query's output holds, and no other."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.definition import parse_model
from pyspark_incr.model.fingerprint import data_hash
from pyspark_incr.writers import WRITERS, formats, writer_for
from conftest import call as _call, physical

EQUAL = dict(ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
SCHEMA = "region STRING, amount INT"
DAY = "2024-01-0{} 00:00:00"


def _model(name: str, raw: str, select: str = "region, SUM(amount) AS total", props: str = "") -> str:
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_PARTITION{props}, partitioned_by region, "
            f"start '2024-01-01', cron '@daily'); SELECT {select} FROM {raw} GROUP BY region")


def _raw(spark, prefix: str, rows: list[tuple]) -> str:
    """``rows`` as the table ``<prefix>_raw.sales`` (replacing it)."""
    table = f"{prefix}_raw.sales"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.createDataFrame(rows, SCHEMA).write.format("parquet").saveAsTable(table)
    return table


def _read(spark, name: str):
    """The model's rows, columns in the query's order (the table keeps its partition column last)."""
    return spark.table(name).select("region", "total")


def _totals(spark, rows: list[tuple]):
    return spark.createDataFrame(rows, "region STRING, total BIGINT")


# --------------------------------------------------------------------------- definition (no Spark)


def test_the_kind_needs_partitioned_by_and_the_error_names_the_model_line_and_column():
    with pytest.raises(ModelDefinitionError, match=r"model a\.b: line 2, column 8: kind INCREMENTAL_BY_PARTITION "
                                                   r"needs partitioned_by.*e\.g\. partitioned_by \(region\)"):
        parse_model("MODEL (name a.b,\n  kind INCREMENTAL_BY_PARTITION); SELECT 1 AS x")


def test_the_kind_is_forward_only_by_default_as_in_sqlmesh_and_takes_the_change_policies():
    default = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_PARTITION, partitioned_by r); SELECT 1 AS r").kind
    chosen = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_PARTITION (forward_only false, "
                         "on_destructive_change warn), partitioned_by r); SELECT 1 AS r").kind

    assert (default.forward_only, default.whole_table, default.time_sliced) == (True, True, False)
    assert (chosen.forward_only, chosen.on_destructive_change) == (False, "warn")


def test_an_unknown_kind_property_is_refused_by_name():
    with pytest.raises(ModelDefinitionError, match=r"unknown kind INCREMENTAL_BY_PARTITION property 'time_column'"):
        parse_model("MODEL (name a.b, kind INCREMENTAL_BY_PARTITION (time_column ds), partitioned_by r); SELECT 1 AS r")


def test_the_partition_columns_are_part_of_the_data_fingerprint():
    a = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_PARTITION, partitioned_by r); SELECT 1 AS r, 2 AS s")
    b = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_PARTITION, partitioned_by s); SELECT 1 AS r, 2 AS s")

    assert data_hash(a) != data_hash(b)


def test_the_writer_is_registered_and_plans_one_run_of_the_whole_query_when_anything_is_due():
    from pyspark_incr.intervals import Interval, IntervalSet, to_ms

    model = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_PARTITION, partitioned_by r); SELECT 1 AS r")
    expected = Interval(to_ms("2024-01-01"), to_ms("2024-01-05"))
    writer = writer_for(model)

    assert writer is WRITERS["INCREMENTAL_BY_PARTITION"]
    assert writer.plan_batches(model, expected, IntervalSet([Interval(to_ms("2024-01-04"), to_ms("2024-01-05"))])) \
        == [expected]
    assert writer.plan_batches(model, expected, IntervalSet()) == []


def test_an_expression_partition_is_refused_before_building():
    model = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_PARTITION, partitioned_by upper(r)); SELECT 'x' AS r")

    with pytest.raises(ModelDefinitionError, match=r"model a\.b: partitioned_by 'UPPER\(r\)' is an expression"):
        writer_for(model).check(model)


# --------------------------------------------------------------------------- end to end (Parquet)


def test_a_run_overwrites_the_partitions_of_its_output_and_leaves_the_others_untouched(spark, isolated):
    raw = _raw(spark, isolated, [("eu", 1), ("eu", 2), ("us", 10), ("asia", 100)])
    name = f"{isolated}.totals"
    _call(spark, "create_model", definition=_model(name, raw))

    first = _call(spark, "apply", execution_time=DAY.format(2))
    after_first = spark.table(name).collect()
    _raw(spark, isolated, [("eu", 5), ("us", 20), ("us", 30)])  # asia no longer in the output
    second = _call(spark, "run", execution_time=DAY.format(3))

    assert [(r.action, r.status, r.rows) for r in first] == [("build", "ok", 3)]
    assert [(r.action, r.status, r.rows) for r in second] == [("build", "ok", 2)]
    assert_df_equality(spark.createDataFrame(after_first, spark.table(name).schema).select("region", "total"),
                       _totals(spark, [("eu", 3), ("us", 10), ("asia", 100)]), **EQUAL)
    assert_df_equality(_read(spark, name), _totals(spark, [("eu", 5), ("us", 50), ("asia", 100)]), **EQUAL)
    partitions = {r[0] for r in spark.sql(f"SHOW PARTITIONS {physical(spark, name)}").collect()}
    assert partitions == {"region=eu", "region=us", "region=asia"}


def test_a_run_before_the_next_cron_tick_changes_nothing(spark, isolated):
    raw = _raw(spark, isolated, [("eu", 1)])
    name = f"{isolated}.totals"
    _call(spark, "create_model", definition=_model(name, raw))
    _call(spark, "apply", execution_time=DAY.format(2))
    _raw(spark, isolated, [("eu", 7)])

    again = _call(spark, "run", execution_time="2024-01-02 12:00:00")

    assert [r.action for r in again if r.status == "ok" and r.rows] == []
    assert_df_equality(_read(spark, name), _totals(spark, [("eu", 1)]), **EQUAL)


def test_a_changed_query_is_forward_only_keeps_the_table_and_rewrites_only_what_it_outputs(spark, isolated):
    raw = _raw(spark, isolated, [("eu", 1), ("us", 10), ("asia", 100)])
    name = f"{isolated}.totals"
    _call(spark, "create_model", definition=_model(name, raw))
    _call(spark, "apply", execution_time=DAY.format(2))
    kept = physical(spark, name)
    changed = "region, SUM(amount) * 2 AS total"
    _call(spark, "create_model", definition=_model(name, raw, changed).replace(
        f"FROM {raw} GROUP BY", f"FROM {raw} WHERE region <> 'asia' GROUP BY"))

    planned = [r for r in _call(spark, "plan", execution_time=DAY.format(3)) if r.model == name]
    applied = _call(spark, "apply", execution_time=DAY.format(3))

    assert [p.category for p in planned] == ["forward-only"]
    assert [(r.action, r.status, r.rows) for r in applied] == [("build", "ok", 2)]
    assert physical(spark, name) == kept
    assert_df_equality(_read(spark, name), _totals(spark, [("eu", 2), ("us", 20), ("asia", 100)]), **EQUAL)


def test_forward_only_false_makes_a_changed_query_a_new_version_built_whole(spark, isolated):
    raw = _raw(spark, isolated, [("eu", 1), ("us", 10), ("asia", 100)])
    name = f"{isolated}.totals"
    props = " (forward_only false)"
    _call(spark, "create_model", definition=_model(name, raw, props=props))
    _call(spark, "apply", execution_time=DAY.format(2))
    old = physical(spark, name)
    _call(spark, "create_model", definition=_model(name, raw, props=props).replace(
        f"FROM {raw} GROUP BY", f"FROM {raw} WHERE region <> 'asia' GROUP BY"))

    _call(spark, "apply", execution_time=DAY.format(2))

    assert physical(spark, name) != old
    assert_df_equality(_read(spark, name), _totals(spark, [("eu", 1), ("us", 10)]), **EQUAL)


def test_a_restatement_reruns_the_whole_query_and_overwrites_its_partitions(spark, isolated):
    raw = _raw(spark, isolated, [("eu", 1), ("us", 10)])
    name = f"{isolated}.totals"
    _call(spark, "create_model", definition=_model(name, raw))
    _call(spark, "apply", execution_time=DAY.format(4))
    _raw(spark, isolated, [("eu", 4)])

    restated = _call(spark, "apply", execution_time=DAY.format(4), restate=name, start="2024-01-03")

    assert [(r.action, r.status, r.rows) for r in restated if r.model == name] == [("build", "ok", 1)]
    assert_df_equality(_read(spark, name), _totals(spark, [("eu", 4), ("us", 10)]), **EQUAL)


# --------------------------------------------------------------------------- Delta


def test_a_delta_model_replaces_only_its_output_partitions(spark, isolated):
    if not formats.delta_available(spark):
        pytest.skip("Delta Lake (io.delta classes) is not on this Spark's classpath; Maven Central, where "
                    "its jars come from, is unreachable from this machine")
    raw = _raw(spark, isolated, [("eu", 1), ("us", 10), ("asia", 100)])
    name = f"{isolated}.totals"
    _call(spark, "create_model", definition=_model(name, raw, props=", table_format delta"))
    _call(spark, "apply", execution_time=DAY.format(2))
    _raw(spark, isolated, [("eu", 5)])

    _call(spark, "run", execution_time=DAY.format(3))

    assert formats.existing(spark, exp.to_table(physical(spark, name), dialect="spark")) == "delta"
    assert_df_equality(_read(spark, name), _totals(spark, [("eu", 5), ("us", 10), ("asia", 100)]), **EQUAL)
