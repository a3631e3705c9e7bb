"""Forward-only changes: the table is kept, the change applies from now on, schema changes follow the policies."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from conftest import call as _call, physical

DAY = "2024-01-0{} 00:00:00"


def _model(name: str, raw: str, select: str = "ds, amount", props: str = "") -> str:
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds{props}), start '2024-01-01', "
            f"cron '@daily'); SELECT {select} FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds")


@pytest.fixture()
def built(spark, isolated):
    """Three days of a raw table and a model over it built through 2024-01-03."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"""CREATE TABLE {isolated}_raw.sales USING parquet AS SELECT * FROM VALUES
        (DATE'2024-01-01', 10), (DATE'2024-01-02', 20), (DATE'2024-01-03', 30), (DATE'2024-01-04', 40)
        AS t(ds, amount)""")
    name, raw = f"{isolated}.sales", f"{isolated}_raw.sales"
    _call(spark, "create_model", definition=_model(name, raw))
    _call(spark, "apply", execution_time=DAY.format(4))
    return name, raw


def _rows(spark, sql: str):
    return spark.sql(sql)


def test_a_forward_only_plan_keeps_the_table_and_adds_the_new_column_for_new_intervals_only(spark, isolated, built):
    name, raw = built
    kept = physical(spark, name)
    _call(spark, "create_model", definition=_model(name, raw, "ds, amount, amount * 2 AS doubled"))

    planned = [r for r in _call(spark, "plan", execution_time=DAY.format(5), forward_only=True) if r.model == name]
    applied = _call(spark, "apply", execution_time=DAY.format(5), forward_only=True)

    assert [(p.category, p.intervals) for p in planned] == [("forward-only", 1)]
    assert "Adds column doubled int." in planned[0].reason
    assert [(r.action, r.status) for r in applied] == [("alter", "ok"), ("build", "ok")]
    assert physical(spark, name) == kept
    expected = _rows(spark, """SELECT * FROM VALUES (DATE'2024-01-01', 10, NULL), (DATE'2024-01-02', 20, NULL),
        (DATE'2024-01-03', 30, NULL), (DATE'2024-01-04', 40, 80) AS t(ds, amount, doubled)""")
    assert_df_equality(spark.table(name).select("ds", "amount", "doubled"), expected, ignore_row_order=True,
                       ignore_nullable=True)


def test_a_destructive_forward_only_change_is_refused_listing_each_column_and_changes_nothing(spark, isolated, built):
    name, raw = built
    kept = physical(spark, name)
    _call(spark, "create_model", definition=_model(name, raw, "ds, CAST(amount AS STRING) AS label",
                                                   props=", forward_only true"))

    with pytest.raises(Exception, match=r"is refused: drops column amount int\. Set on_destructive_change"):
        _call(spark, "apply", execution_time=DAY.format(5))

    assert physical(spark, name) == kept
    assert spark.table(name).columns == ["amount", "ds"]
    assert spark.table(name).count() == 3


def test_a_destructive_change_allowed_writes_null_for_the_dropped_column_and_casts_a_retyped_one(spark, isolated, built):
    name, raw = built
    _call(spark, "create_model", definition=_model(
        name, raw, "ds, CAST(amount AS BIGINT) * 0 + 7 AS amount, 'x' AS tag",
        props=", forward_only true, on_destructive_change warn, on_additive_change ignore"))
    planned = [r for r in _call(spark, "plan", execution_time=DAY.format(5)) if r.model == name]

    applied = _call(spark, "apply", execution_time=DAY.format(5))

    assert "Warning: " in planned[0].reason and "changes column amount from int to bigint" in planned[0].reason
    assert applied[0].action == "alter" and applied[0].message.startswith("Warning: ")
    assert spark.table(name).columns == ["amount", "ds"]
    assert sorted(r.amount for r in spark.table(name).collect()) == [7, 10, 20, 30]


def test_a_forward_only_change_in_dev_is_previewed_in_a_table_prod_never_reuses(spark, isolated, built):
    name, raw = built
    kept = physical(spark, name)
    _call(spark, "create_model", definition=_model(name, raw, "ds, amount, 1 AS one", props=", forward_only true"))

    _call(spark, "apply", env="dev", execution_time=DAY.format(5))
    preview = physical(spark, name, "dev")
    promoted = _call(spark, "apply", execution_time=DAY.format(5))

    assert preview.endswith("__dev`") and preview != kept
    assert spark.table(preview).count() == 4
    assert physical(spark, name) == kept
    assert [r.action for r in promoted] == ["alter", "build"]


def test_an_scd2_history_reading_a_rebuilt_parent_keeps_its_table_and_its_history(spark, isolated, built):
    name, raw = built
    history = f"{isolated}.history"
    _call(spark, "create_model", definition=(
        f"MODEL (name {history}, kind SCD_TYPE_2_BY_COLUMN (unique_key ds, columns [amount]), cron '@daily'); "
        f"SELECT ds, amount FROM {name}"))
    _call(spark, "apply", execution_time=DAY.format(4))
    kept, rows = physical(spark, history), spark.table(history).count()

    _call(spark, "create_model", definition=_model(name, f"(SELECT * FROM {raw} WHERE amount > 10) AS r"))
    planned = {r.model: r.category for r in _call(spark, "plan", execution_time=DAY.format(4))}
    _call(spark, "apply", execution_time=DAY.format(4))

    assert planned == {name: "breaking", history: "forward-only"}
    assert physical(spark, history) == kept
    assert spark.table(history).count() >= rows
