"""incr.explain: a model's tables, rendered SQL, safety verdict and source bounds, one row per item."""

from __future__ import annotations

import json

import pytest

from conftest import call as _call, physical

T = "2024-01-04 00:00:00"
RANKED = ("MODEL (name {ranked}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', cron '@daily'); "
          "SELECT ds, shop, ROW_NUMBER() OVER (ORDER BY amount) AS rn\nFROM {daily} WHERE ds BETWEEN @start_ds AND @end_ds")


@pytest.fixture()
def models(spark, isolated):
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"CREATE TABLE {isolated}_raw.events USING parquet AS "
              f"SELECT * FROM VALUES (DATE'2024-01-01', 'a', 1) AS t(ds, shop, amount)")
    daily, ranked = f"{isolated}.daily", f"{isolated}.ranked"
    _call(spark, "create_model", definition=(
        f"MODEL (name {daily}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', cron '@daily'); "
        f"SELECT ds, shop, amount FROM {isolated}_raw.events WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "create_model", definition=RANKED.format(ranked=ranked, daily=daily))
    _call(spark, "apply", execution_time=T, allow_downgrade=True)
    return daily, ranked


def test_explain_shows_tables_sql_a_safe_verdict_and_a_partition_local_bound(spark, isolated, models):
    daily, ranked = models
    _call(spark, "create_model", definition=(
        f"MODEL (name {isolated}.copy, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
        f"cron '@daily'); SELECT ds, shop FROM {daily} WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "apply", execution_time=T)

    rows = {(r.item, r.name): r for r in _call(spark, "explain", model=f"{isolated}.copy", execution_time=T)}

    assert rows[("table", f"{isolated}.copy")].detail == physical(spark, f"{isolated}.copy")
    assert rows[("view", f"{isolated}.copy")].detail == f"`{isolated}`.`copy`"
    assert physical(spark, daily) in rows[("sql", f"{isolated}.copy")].detail
    assert rows[("safety", f"{isolated}.copy")].detail == "safe"
    assert json.loads(rows[("bound", daily)].json) == {"type": "bounded", "partition_col": "ds",
                                                       "before": "PT0S", "after": "PT0S"}
    assert rows[("pushdown", daily)].detail == "ds >= run start - PT0S AND ds < run end + PT0S"
    assert rows[("batch_safety", f"{isolated}.copy")].detail == "fully batch safe"


def test_explain_lists_each_unsafe_construct_with_its_position(spark, isolated, models):
    _, ranked = models

    rows = _call(spark, "explain", model=ranked, execution_time=T)

    findings = [(r.name, json.loads(r.json)["line"], json.loads(r.json)["column"]) for r in rows if r.item == "finding"]
    # positions are in the definition's text: the query follows the MODEL block on its first line
    assert findings == [("window", 1, RANKED.format(ranked=ranked, daily="d").index("ROW_NUMBER") + 1)]
    assert [r.detail for r in rows if r.item == "batch_safety"] == ["per-partition only"]


def test_explain_of_a_model_the_environment_lacks_is_refused_naming_it(spark, isolated, models):
    with pytest.raises(Exception, match=r"explain: model 'nope.nothing' is not in environment prod"):
        _call(spark, "explain", model="nope.nothing")
