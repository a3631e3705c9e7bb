"""A SQLMesh-style project with every kind (examples/shop), planned and applied through CALL statements."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from chispa import assert_df_equality

from conftest import state_rows, tables_in, call as _call
from pyspark_incr.writers import WRITERS

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "shop"
T = "2024-01-11 00:00:00"
BUILDABLE = ("shop.menu_items, shop.orders_enriched, shop.daily_orders, shop.order_log, shop.customer_totals, "
             "shop.top_items, shop.order_feed, shop.customers_latest")


@pytest.fixture(scope="module")
def project(spark, module_isolated, tmp_path_factory):
    """A copy of the example (tests edit it) and its raw orders: 10 days, 12 orders a day."""
    root = tmp_path_factory.mktemp("shop") / "shop"
    shutil.copytree(EXAMPLE, root)
    spark.sql("CREATE DATABASE IF NOT EXISTS shop_raw")
    spark.sql("DROP TABLE IF EXISTS shop_raw.orders")
    spark.sql(
        """CREATE TABLE shop_raw.orders USING parquet AS
        SELECT CAST(id AS INT) AS order_id, CAST(id % 5 AS INT) AS customer_id, CAST(id % 4 + 1 AS INT) AS item_id,
               CAST(id % 7 AS DOUBLE) AS amount, DATE_ADD(DATE'2024-01-01', CAST(id DIV 12 AS INT)) AS order_date,
               TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, CAST(id AS INT), 0, 0) AS updated_at
        FROM range(120)"""
    )
    for schema in ("shop",):
        for table in tables_in(spark, schema):
            spark.sql(f"DROP VIEW IF EXISTS {table}") if table.endswith("top_items") else spark.sql(f"DROP TABLE IF EXISTS {table}")
    return root


def test_plan_lists_every_model_of_the_project_in_dependency_order(spark, project):
    rows = _call(spark, "plan", project=str(project), execution_time=T)

    order = [r.model for r in rows]
    assert set(order) == {
        "shop_raw.orders", "shop.menu_items", "shop.orders_enriched", "shop.daily_orders", "shop.order_log",
        "shop.customer_totals", "shop.top_items", "shop.customers_latest", "shop.menu_history", "shop.menu_prices",
        "shop.order_feed",
    }
    for child, parent in [("shop.orders_enriched", "shop.menu_items"), ("shop.daily_orders", "shop.orders_enriched"),
                          ("shop.top_items", "shop.daily_orders"), ("shop.menu_history", "shop.menu_items"),
                          ("shop.customer_totals", "shop.orders_enriched"), ("shop.order_feed", "shop_raw.orders")]:
        assert order.index(parent) < order.index(child), f"{parent} must come before {child}"
    by_model = {r.model: r for r in rows}
    assert "cannot be built" not in by_model["shop.menu_history"].reason + by_model["shop.menu_prices"].reason
    assert by_model["shop.orders_enriched"].table == "(inlined into its children)"


def test_apply_refuses_kinds_it_cannot_build_and_changes_nothing(spark, project, module_isolated, monkeypatch):
    # Every kind of the example has a writer now: take one away to see the refusal.
    monkeypatch.delitem(WRITERS, "INCREMENTAL_BY_UNIQUE_KEY")
    before = (state_rows(spark, module_isolated), tables_in(spark, "shop"))

    with pytest.raises(Exception, match="model shop.customers_latest: kind INCREMENTAL_BY_UNIQUE_KEY cannot be built"):
        _call(spark, "apply", project=str(project), execution_time=T)

    assert (state_rows(spark, module_isolated), tables_in(spark, "shop")) == before


@pytest.fixture(scope="module")
def applied(spark, project):
    return _call(spark, "apply", project=str(project), select=BUILDABLE, execution_time=T)


def test_apply_builds_seed_embedded_duckdb_unmanaged_full_and_view(spark, applied):
    assert {(r.model, r.status) for r in applied} == {
        ("shop.menu_items", "ok"), ("shop.daily_orders", "ok"), ("shop.order_log", "ok"),
        ("shop.customer_totals", "ok"), ("shop.top_items", "ok"), ("shop.order_feed", "ok"),
        ("shop.customers_latest", "ok"),
    }
    assert [(f.name, f.dataType.simpleString()) for f in spark.table("shop.menu_items").schema] == [
        ("id", "int"), ("name", "string"), ("price", "double")]
    expected = spark.sql(
        """SELECT o.order_date, m.name AS item_name, CAST(COUNT(*) AS INT) AS orders, SUM(o.amount) AS revenue
        FROM shop_raw.orders o JOIN shop.menu_items m ON m.id = o.item_id
        WHERE o.amount >= 1 AND o.order_date < DATE'2024-01-11' GROUP BY 1, 2"""
    )
    actual = spark.table("shop.daily_orders").select(*expected.columns)
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
    assert spark.table("shop.order_log").count() == 120
    assert not spark.catalog.tableExists("shop.orders_enriched"), "EMBEDDED models have no table"


def test_the_cursor_model_holds_the_orders_updated_after_its_initial_value(spark, applied):
    expected = spark.sql("SELECT order_id, amount, updated_at FROM shop_raw.orders WHERE updated_at > TIMESTAMP'2024-01-01'")

    assert_df_equality(spark.table("shop.order_feed"), expected, ignore_row_order=True, ignore_nullable=True,
                       ignore_metadata=True)
    assert spark.table("shop.order_feed").count() == 119, "order 0, updated exactly at initial_value, is not above it"


def test_the_unique_key_model_holds_one_row_per_customer_with_their_last_order_day(spark, applied):
    expected = spark.sql("SELECT customer_id, MAX(order_date) AS last_order FROM shop_raw.orders "
                         "WHERE order_date < DATE'2024-01-11' GROUP BY customer_id")

    assert [(r.intervals, r.rows) for r in applied if r.model == "shop.customers_latest"] == [(10, 5)]
    assert_df_equality(spark.table("shop.customers_latest"), expected, ignore_row_order=True, ignore_nullable=True,
                       ignore_metadata=True)


def test_descriptions_and_tags_become_catalog_comments_and_properties(spark, applied):
    columns = {c.name: c.description for c in spark.catalog.listColumns("shop.daily_orders")}
    properties = {r.key: r.value for r in spark.sql("SHOW TBLPROPERTIES shop.daily_orders").collect()}

    assert spark.catalog.getTable("shop.daily_orders").description == "Orders and revenue per day and menu item."
    assert columns["revenue"] == "Sum of order amounts" and columns["order_date"] == "Day of the orders"
    assert properties["incr.tags"] == "silver,sales" and properties["incr.owner"] == "shop-data"
    assert spark.catalog.getTable("shop.top_items").description == "Items by revenue."


def test_the_custom_audits_from_the_audits_folder_run_on_demand(spark, applied):
    rows = _call(spark, "audit", model="shop.daily_orders")

    assert [(r.audit.split("(")[0], r.blocking, r.bad_rows, r.status) for r in rows] == [
        ("assert_positive", True, 0, "ok"), ("assert_average_at_least", False, 0, "ok")]


def test_apply_builds_the_scd_type_2_menu_histories_from_the_seed(spark, project, applied):
    rows = _call(spark, "apply", project=str(project), select="shop.menu_history, shop.menu_prices", execution_time=T)

    assert {(r.model, r.status, r.intervals, r.rows) for r in rows} == {
        ("shop.menu_history", "ok", 10, 4), ("shop.menu_prices", "ok", 10, 4)}
    expected = spark.sql("""SELECT id, name, price, TIMESTAMP'2024-01-01 00:00:00' AS updated_at,
        TIMESTAMP'1970-01-01 00:00:00' AS valid_from, CAST(NULL AS TIMESTAMP) AS valid_to FROM shop.menu_items""")
    assert_df_equality(spark.table("shop.menu_history"), expected, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(spark.table("shop.menu_prices"), expected.drop("updated_at"), ignore_row_order=True,
                       ignore_nullable=True)


def test_a_description_edit_updates_comments_without_rebuilding(spark, project, applied):
    model = project / "models" / "customer_totals.sql"
    model.write_text(model.read_text().replace("'Lifetime revenue per customer.'", "'Revenue per customer, ever.'"))

    planned = _call(spark, "plan", project=str(project), select="shop.customer_totals", execution_time=T)
    rows = _call(spark, "apply", project=str(project), select=BUILDABLE, execution_time=T)

    assert [(r.change, r.intervals) for r in planned] == [("metadata", 0)]
    assert rows == []
    assert spark.catalog.getTable("shop.customer_totals").description == "Revenue per customer, ever."


def test_editing_a_seed_file_rebuilds_the_seed_and_its_readers(spark, project, applied):
    seed = project / "seeds" / "menu_items.csv"
    seed.write_text(seed.read_text().replace("Milkshake,3.99", "Milkshake,4.49"))

    planned = {r.model: r.change for r in _call(spark, "plan", project=str(project), select=BUILDABLE, execution_time=T)}
    _call(spark, "apply", project=str(project), select=BUILDABLE, execution_time=T)

    assert planned["shop.menu_items"] == "changed" and planned["shop.daily_orders"] == "changed"
    assert planned["shop.order_log"] == "unchanged"
    assert spark.sql("SELECT price FROM shop.menu_items WHERE id = 4").collect()[0].price == 4.49
