"""Restatement: a range of built intervals, and of the incremental models reading them, built again."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from conftest import call as _call, physical

T = "2024-01-04 00:00:00"


@pytest.fixture()
def chain(spark, isolated):
    """Raw sales for three days, a daily model over them, an incremental child and a FULL total; applied."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    raw = f"{isolated}_raw.sales"
    spark.sql(f"""CREATE TABLE {raw} USING parquet AS SELECT * FROM VALUES
        (DATE'2024-01-01', 10), (DATE'2024-01-02', 20), (DATE'2024-01-03', 30) AS t(ds, amount)""")
    daily, child, total = f"{isolated}.daily", f"{isolated}.child", f"{isolated}.total"
    _call(spark, "create_model", definition=(
        f"MODEL (name {daily}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', cron '@daily'); "
        f"SELECT ds, amount FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "create_model", definition=(
        f"MODEL (name {child}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', cron '@daily'); "
        f"SELECT ds, amount * 10 AS big FROM {daily} WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "create_model", definition=(
        f"MODEL (name {total}, kind FULL, cron '@daily'); SELECT SUM(amount) AS total FROM {daily}"))
    _call(spark, "apply", execution_time=T)
    # the source is corrected afterwards, on two days
    spark.sql(f"INSERT OVERWRITE {raw} SELECT * FROM VALUES (DATE'2024-01-01', 11), (DATE'2024-01-02', 22), "
              f"(DATE'2024-01-03', 30) AS t(ds, amount)")
    return raw, daily, child, total


def _values(spark, name: str, column: str) -> list:
    return [r[column] for r in spark.table(name).orderBy("ds").collect()]


def test_restating_a_day_rebuilds_it_in_the_model_and_everything_downstream_and_nothing_else(spark, isolated, chain):
    _, daily, child, total = chain

    results = _call(spark, "restate", model=daily, start="2024-01-02", end="2024-01-02", execution_time=T)

    assert sorted((r.model, r.action, r.status) for r in results) == [
        (child, "build", "ok"), (daily, "build", "ok"), (total, "build", "ok")]
    assert _values(spark, daily, "amount") == [10, 22, 30]
    assert _values(spark, child, "big") == [100, 220, 300]
    assert spark.table(total).collect()[0].total == 62


def test_restate_builds_only_its_range_and_leaves_later_missing_intervals_to_run(spark, isolated, chain):
    _, daily, child, _ = chain
    later = "2024-01-06 00:00:00"  # 2024-01-04 and -05 are now missing, outside the restated day

    results = _call(spark, "restate", model=daily, start="2024-01-02", end="2024-01-02", execution_time=later)

    built = sorted((r.model, str(r.start)[:10], str(r.end)[:10]) for r in results if r.model in (daily, child))
    assert built == [(child, "2024-01-02", "2024-01-03"), (daily, "2024-01-02", "2024-01-03")]
    ran = {r.model for r in _call(spark, "run", execution_time=later) if r.status == "ok"}
    assert {daily, child} <= ran


def test_plan_and_apply_with_restate_show_and_build_the_restated_intervals(spark, isolated, chain):
    _, daily, child, _ = chain

    planned = {r.model: (r.intervals, r.reason) for r in _call(spark, "plan", execution_time=T, restate=daily)}
    _call(spark, "apply", execution_time=T, restate=daily)

    assert planned[daily][0] == 3 and "Restated" in planned[daily][1]
    assert planned[child][0] == 3
    assert _values(spark, daily, "amount") == [11, 22, 30]
    assert _values(spark, child, "big") == [110, 220, 300]


def test_a_model_with_disable_restatement_is_refused_when_named_and_nothing_changes(spark, isolated, chain):
    raw, daily, _, _ = chain
    locked = f"{isolated}.locked"
    _call(spark, "create_model", definition=(
        f"MODEL (name {locked}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, disable_restatement true), "
        f"start '2024-01-01', cron '@daily'); SELECT ds, amount FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "apply", execution_time=T)
    before = spark.table(locked)

    with pytest.raises(Exception, match=f"restate: model {locked} has disable_restatement"):
        _call(spark, "restate", model=locked, execution_time=T)

    assert_df_equality(spark.table(locked), before, ignore_row_order=True)


def test_a_downstream_model_with_disable_restatement_is_skipped_and_says_why(spark, isolated, chain):
    _, daily, _, _ = chain
    locked = f"{isolated}.locked_child"
    _call(spark, "create_model", definition=(
        f"MODEL (name {locked}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, disable_restatement true), "
        f"start '2024-01-01', cron '@daily'); SELECT ds, amount FROM {daily} WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "apply", execution_time=T)

    results = _call(spark, "restate", model=daily, execution_time=T)

    skipped = [(r.action, r.status) for r in results if r.model == locked]
    assert skipped == [("skip", "skipped")]
    assert _values(spark, locked, "amount") == [10, 20, 30]


def test_restating_in_dev_refuses_a_table_prod_shares_and_prod_restatement_leaves_dev_only_tables(spark, isolated, chain):
    raw, daily, child, _ = chain
    with pytest.raises(Exception, match="shares its table .* with prod; restate it in prod"):
        _call(spark, "apply", env="dev", execution_time=T)  # dev starts as prod: shares every table
        _call(spark, "restate", model=daily, env="dev", execution_time=T)

    # a change only dev holds: its table is dev's alone, and a prod restatement leaves it alone
    _call(spark, "create_model", definition=(
        f"MODEL (name {daily}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', cron '@daily'); "
        f"SELECT ds, amount, 1 AS one FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds"))
    spark.sql(f"INSERT INTO {raw} VALUES (DATE'2024-01-01', 0)")
    _call(spark, "apply", env="dev", execution_time=T)
    dev_rows = spark.table(physical(spark, daily, "dev")).count()
    spark.sql(f"INSERT INTO {raw} VALUES (DATE'2024-01-02', 0)")

    _call(spark, "restate", model=daily, env="prod", execution_time=T)

    assert spark.table(physical(spark, daily, "dev")).count() == dev_rows == 4
    assert spark.table(daily).count() == 5
