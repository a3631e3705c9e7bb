"""The example projects under examples/, run as their READMEs say, each on a state schema of its own.

orders360 (Vulcan's daily/weekly sales with assertions), menu_scd2 (SQLMesh's SCD type 2 menu, three
passes), hourly_events (hourly cron, lookback, batch_size) and sqlmesh_port (a SQLMesh project in
DuckDB's dialect). Every result table is compared to its exact expected rows.
"""

from __future__ import annotations

import csv
import datetime as dt
import shutil
from collections import defaultdict
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import Row

from conftest import _isolation, call
from pyspark_incr.sqltext import split_statements

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _script(spark, path: Path) -> None:
    """Run a setup script of an example, statement by statement, as spark-sql -f would."""
    for statement in split_statements(path.read_text(encoding="utf-8")):
        spark.sql(statement)


def _drop_views(spark, *names: str) -> None:
    for name in names:
        spark.sql(f"DROP VIEW IF EXISTS {name}")


def _equal(actual, expected) -> None:
    """``actual`` holds exactly ``expected``'s rows (any order; the table's own column order aside)."""
    assert_df_equality(actual.select(*expected.columns), expected, ignore_row_order=True, ignore_nullable=True,
                       ignore_metadata=True)


def _ts(text: str | None) -> dt.datetime | None:
    return None if text is None else dt.datetime.fromisoformat(text)


def _batches(rows) -> list[tuple[str, str, str]]:
    return [(r.model, r.start.isoformat(" "), r.end.isoformat(" ")) for r in rows]


# --- orders360 ------------------------------------------------------------------------------------------------------

ORDERS360 = EXAMPLES / "orders360"


@pytest.fixture(scope="module")
def orders360(spark):
    """Apply the project on 2025-01-22, then the scheduled run on Sunday 2025-01-26 (the next @weekly tick)."""
    with _isolation(spark, "examples_orders360"):
        _drop_views(spark, "sales.daily_sales", "sales.weekly_sales", "raw.raw_orders")
        applied = call(spark, "apply", project=str(ORDERS360), execution_time="2025-01-22")
        ran = call(spark, "run", execution_time="2025-01-26")
    return applied, ran


def _seed_orders() -> list[dict]:
    with (ORDERS360 / "seeds" / "raw_orders.csv").open() as f:
        return list(csv.DictReader(f))


def test_orders360_apply_builds_every_day_and_the_complete_weeks_then_the_sunday_run_the_next_week(orders360):
    applied, ran = orders360

    assert [(r.model, r.status) for r in applied] == [
        ("raw.raw_orders", "ok"), ("sales.daily_sales", "ok"), ("sales.weekly_sales", "ok"), ("sales.weekly_sales", "ok")]
    assert _batches(applied[1:]) == [
        ("sales.daily_sales", "2025-01-01 00:00:00", "2025-01-22 00:00:00"),
        ("sales.weekly_sales", "2024-12-30 00:00:00", "2025-01-06 00:00:00"),  # batch_size 1: one week a job
        ("sales.weekly_sales", "2025-01-06 00:00:00", "2025-01-13 00:00:00"),
    ]
    # the week of 2025-01-13 ended on Monday the 20th; @weekly ticks on Sundays, so it is due on the 26th
    assert _batches(ran) == [
        ("sales.daily_sales", "2025-01-22 00:00:00", "2025-01-26 00:00:00"),
        ("sales.weekly_sales", "2025-01-13 00:00:00", "2025-01-20 00:00:00"),
    ]
    assert [r.status for r in ran] == ["ok", "ok"]


def test_orders360_daily_sales_holds_one_row_per_day_of_the_seed(spark, orders360):
    by_day = defaultdict(list)
    for order in _seed_orders():
        by_day[order["order_date"]].append(order)
    expected = spark.createDataFrame(
        [(dt.datetime.fromisoformat(day), len(orders), float(sum(float(o["total_amount"]) for o in orders)),
          max(o["order_id"] for o in orders)) for day, orders in by_day.items()],
        "order_date timestamp, total_orders int, total_revenue double, last_order_id string")

    assert len(by_day) == 21
    _equal(spark.table("sales.daily_sales"), expected)


def test_orders360_weekly_sales_sums_the_days_of_each_complete_week_from_monday(spark, orders360):
    expected = spark.createDataFrame([
        (dt.datetime(2024, 12, 30), 9, 248.25, 248.25 / 9),
        (dt.datetime(2025, 1, 6), 15, 460.75, 460.75 / 15),
        (dt.datetime(2025, 1, 13), 13, 395.75, 395.75 / 13),
    ], "order_date timestamp, total_orders int, total_revenue double, avg_order_value double")

    _equal(spark.table("sales.weekly_sales"), expected)


def test_orders360_a_day_with_negative_revenue_fails_its_assertion_and_leaves_prod_alone(spark, orders360, tmp_path):
    project = tmp_path / "orders360"
    shutil.copytree(ORDERS360, project)
    with (project / "seeds" / "raw_orders.csv").open("a") as f:
        f.write("9999,100,2025-01-03,-200.00\n")  # a refund larger than the day's sales
    before = spark.table("sales.daily_sales").collect()

    with _isolation(spark, "examples_orders360"):
        rows = call(spark, "apply", project=str(project), env="bad_data", select="raw.raw_orders, sales.daily_sales",
                    start="2025-01-03", end="2025-01-03", execution_time="2025-01-22")

    failed = [r for r in rows if r.model == "sales.daily_sales"]
    assert [(r.status, r.intervals) for r in failed] == [("failed", 1)]
    assert "positive_values" in failed[0].message and "total_revenue" in failed[0].message
    assert sorted(spark.table("sales.daily_sales").collect()) == sorted(before)


# --- menu_scd2 ------------------------------------------------------------------------------------------------------

MENU = EXAMPLES / "menu_scd2"
MENU_ITEMS = "id int, name string, price double, updated_at timestamp, valid_from timestamp, valid_to timestamp"
MENU_PRICES = "id int, name string, price double, valid_from timestamp, valid_to timestamp"


@pytest.fixture(scope="module")
def menu(spark):
    """The spec's three passes: each replaces the source's rows, then applies (first) or runs at 02:00 that day.

    The tables' rows after each pass, keyed by pass number.
    """
    with _isolation(spark, "examples_menu_scd2"):
        _drop_views(spark, "db.menu_items", "db.menu_prices")
        results, tables = [], {}
        for n, (procedure, args) in enumerate([("apply", {"project": str(MENU)}), ("run", {}), ("run", {})], 1):
            _script(spark, MENU / "data" / f"pass{n}.sql")
            results.append(call(spark, procedure, execution_time=f"2020-01-0{n} 02:00:00", **args))
            tables[n] = {t: spark.table(f"db.{t}").collect() for t in ("menu_items", "menu_prices")}
    return results, tables


def _menu_frame(spark, rows: list[tuple], columns: str):
    return spark.createDataFrame([tuple(_ts(v) if isinstance(v, str) and v[:2] in ("19", "20") else v for v in r)
                                  for r in rows], columns)


def _menu_table(spark, rows: list[Row], columns: str):
    """The rows a table held after an earlier pass, as a DataFrame again."""
    return spark.createDataFrame(rows, columns)


def test_menu_each_pass_builds_one_batch_of_both_histories(menu):
    results, _ = menu

    assert [[(r.model, r.status) for r in rows] for rows in results] == [
        [("db.menu_items", "ok"), ("db.menu_prices", "ok")]] * 3


def test_menu_items_history_by_updated_at_matches_the_spec_after_the_second_pass(spark, menu):
    expected = _menu_frame(spark, [
        (1, "Chicken Sandwich", 10.99, "2020-01-01 00:00:00", "1970-01-01 00:00:00", "2020-01-02 00:00:00"),
        (1, "Chicken Sandwich", 12.99, "2020-01-02 00:00:00", "2020-01-02 00:00:00", None),
        (2, "Cheeseburger", 8.99, "2020-01-01 00:00:00", "1970-01-01 00:00:00", "2020-01-02 02:00:00"),
        (3, "French Fries", 4.99, "2020-01-01 00:00:00", "1970-01-01 00:00:00", None),
        (4, "Milkshake", 3.99, "2020-01-02 00:00:00", "2020-01-02 00:00:00", None),
    ], MENU_ITEMS)

    _equal(_menu_table(spark, menu[1][2]["menu_items"], MENU_ITEMS), expected)


def test_menu_items_history_by_updated_at_matches_the_spec_after_the_third_pass(spark, menu):
    expected = _menu_frame(spark, [
        (1, "Chicken Sandwich", 10.99, "2020-01-01 00:00:00", "1970-01-01 00:00:00", "2020-01-02 00:00:00"),
        (1, "Chicken Sandwich", 12.99, "2020-01-02 00:00:00", "2020-01-02 00:00:00", "2020-01-03 00:00:00"),
        (1, "Chicken Sandwich", 14.99, "2020-01-03 00:00:00", "2020-01-03 00:00:00", None),
        (2, "Cheeseburger", 8.99, "2020-01-01 00:00:00", "1970-01-01 00:00:00", "2020-01-02 02:00:00"),
        (2, "Cheeseburger", 8.99, "2020-01-03 00:00:00", "2020-01-03 00:00:00", None),
        (3, "French Fries", 4.99, "2020-01-01 00:00:00", "1970-01-01 00:00:00", None),
        (4, "Milkshake", 3.99, "2020-01-02 00:00:00", "2020-01-02 00:00:00", "2020-01-03 00:00:00"),
        (4, "Chocolate Milkshake", 3.99, "2020-01-03 00:00:00", "2020-01-03 00:00:00", None),
    ], MENU_ITEMS)

    _equal(spark.table("db.menu_items"), expected)


def test_menu_prices_by_column_versions_only_price_changes_from_each_execution_time(spark, menu):
    expected = _menu_frame(spark, [
        (1, "Chicken Sandwich", 10.99, "1970-01-01 00:00:00", "2020-01-02 02:00:00"),
        (1, "Chicken Sandwich", 12.99, "2020-01-02 02:00:00", "2020-01-03 02:00:00"),
        (1, "Chicken Sandwich", 14.99, "2020-01-03 02:00:00", None),
        (2, "Cheeseburger", 8.99, "1970-01-01 00:00:00", "2020-01-02 02:00:00"),
        (2, "Cheeseburger", 8.99, "2020-01-03 02:00:00", None),
        (3, "French Fries", 4.99, "1970-01-01 00:00:00", None),
        (4, "Milkshake", 3.99, "2020-01-02 02:00:00", None),  # the rename alone is no new version
    ], MENU_PRICES)

    _equal(spark.table("db.menu_prices"), expected)


# --- hourly_events --------------------------------------------------------------------------------------------------

HOURLY = EXAMPLES / "hourly_events"


@pytest.fixture(scope="module")
def hourly(spark):
    """Apply at 06:00; late rows arrive; run at 07:00, then again at 07:00 (nothing left to do)."""
    with _isolation(spark, "examples_hourly_events"):
        _drop_views(spark, "hourly.event_counts")
        _script(spark, HOURLY / "data" / "events.sql")
        applied = call(spark, "apply", project=str(HOURLY), execution_time="2024-03-01 06:00:00")
        _script(spark, HOURLY / "data" / "late_events.sql")
        ran = call(spark, "run", execution_time="2024-03-01 07:00:00")
        again = call(spark, "run", execution_time="2024-03-01 07:00:00")
    return applied, ran, again


def test_hourly_apply_builds_six_hours_in_batches_of_two(hourly):
    applied, _, _ = hourly

    assert _batches(applied) == [
        ("hourly.event_counts", "2024-03-01 00:00:00", "2024-03-01 02:00:00"),
        ("hourly.event_counts", "2024-03-01 02:00:00", "2024-03-01 04:00:00"),
        ("hourly.event_counts", "2024-03-01 04:00:00", "2024-03-01 06:00:00"),
    ]
    assert [(r.intervals, r.status) for r in applied] == [(2, "ok")] * 3


def test_hourly_run_rebuilds_the_two_lookback_hours_with_the_new_one_in_batches_of_at_most_two(hourly):
    _, ran, again = hourly

    assert _batches(ran) == [
        ("hourly.event_counts", "2024-03-01 04:00:00", "2024-03-01 06:00:00"),
        ("hourly.event_counts", "2024-03-01 06:00:00", "2024-03-01 07:00:00"),
    ]
    assert [(r.intervals, r.status) for r in ran] == [(2, "ok"), (1, "ok")]
    assert again == [], "the 07:00 hour is built: a second run at 07:00 has nothing to do"


def test_hourly_a_late_row_within_the_lookback_is_counted_and_one_outside_it_is_not(spark, hourly):
    table = spark.table("hourly.event_counts")

    late = table.where("event_type = 'late'").select("event_hour", "events", "total_value")
    _equal(late, spark.createDataFrame([(dt.datetime(2024, 3, 1, 4), 1, 10)],
                                       "event_hour timestamp, events bigint, total_value bigint"))
    expected = spark.sql(
        """SELECT DATE_TRUNC('HOUR', event_ts) AS event_hour, event_type, COUNT(*) AS events, SUM(value) AS total_value
        FROM hourly_raw.events WHERE event_id <> 101 AND event_ts < TIMESTAMP'2024-03-01 07:00:00' GROUP BY 1, 2""")
    assert expected.count() == 22  # 7 hours x 3 types, and the late 04:00 row
    _equal(table, expected)


# --- sqlmesh_port ---------------------------------------------------------------------------------------------------

PORT = EXAMPLES / "sqlmesh_port"


@pytest.fixture(scope="module")
def port(spark):
    """The SQLMesh project, unchanged, applied through 2020-01-07; then full_model's audits run on demand."""
    with _isolation(spark, "examples_sqlmesh_port"):
        _drop_views(spark, *(f"sqlmesh_example.{t}" for t in ("seed_model", "incremental_model", "full_model",
                                                                  "item_activity")))
        applied = call(spark, "apply", project=str(PORT), execution_time="2020-01-08")
        audited = call(spark, "audit", model="sqlmesh_example.full_model")
    return applied, audited


def test_port_applies_every_model_of_the_duckdb_project(port):
    applied, _ = port

    assert [(r.model, r.status) for r in applied] == [
        ("sqlmesh_example.seed_model", "ok"), ("sqlmesh_example.incremental_model", "ok"),
        ("sqlmesh_example.full_model", "ok"), *[("sqlmesh_example.item_activity", "ok")] * 3]
    assert _batches(applied[-3:]) == [  # batch_size 3 over seven days
        ("sqlmesh_example.item_activity", "2020-01-01 00:00:00", "2020-01-04 00:00:00"),
        ("sqlmesh_example.item_activity", "2020-01-04 00:00:00", "2020-01-07 00:00:00"),
        ("sqlmesh_example.item_activity", "2020-01-07 00:00:00", "2020-01-08 00:00:00"),
    ]


def test_port_custom_audit_from_the_audits_folder_runs_on_the_full_model(port):
    _, audited = port

    assert [(r.audit.split("(")[0], r.blocking, r.bad_rows, r.status) for r in audited] == [
        ("assert_positive_order_ids", True, 0, "ok")]


def test_port_incremental_and_full_models_hold_what_sqlmesh_builds(spark, port):
    seed = [(1, 2, "2020-01-01"), (2, 1, "2020-01-01"), (3, 3, "2020-01-03"), (4, 1, "2020-01-04"),
            (5, 1, "2020-01-05"), (6, 1, "2020-01-06"), (7, 1, "2020-01-07")]
    incremental = spark.createDataFrame([(i, item, dt.date.fromisoformat(d)) for i, item, d in seed],
                                        "id int, item_id int, event_date date")

    _equal(spark.table("sqlmesh_example.incremental_model"), incremental)
    _equal(spark.table("sqlmesh_example.full_model"),
           spark.createDataFrame([(1, 5), (2, 1), (3, 1)], "item_id int, num_orders bigint"))


def test_port_duckdb_functions_lists_and_structs_are_transpiled_to_spark(spark, port):
    columns = ("event_date date, item_id int, num_orders int, event_month string, event_week date, day_number bigint, "
               "interval_start timestamp, order_ids array<int>, item_codes array<int>, "
               "summary struct<item:int,orders:int>, label string")
    d, t = dt.date, dt.datetime
    expected = spark.createDataFrame([
        (d(2020, 1, 1), 1, 1, "2020-01", d(2019, 12, 30), 0, t(2020, 1, 1), [2], [1, 10], (1, 1), "item-1"),
        (d(2020, 1, 1), 2, 1, "2020-01", d(2019, 12, 30), 0, t(2020, 1, 1), [1], [2, 20], (2, 1), "item-2"),
        (d(2020, 1, 3), 3, 1, "2020-01", d(2019, 12, 30), 2, t(2020, 1, 1), [3], [3, 30], (3, 1), "item-3"),
        (d(2020, 1, 4), 1, 1, "2020-01", d(2019, 12, 30), 3, t(2020, 1, 4), [4], [1, 10], (1, 1), "item-1"),
        (d(2020, 1, 5), 1, 1, "2020-01", d(2019, 12, 30), 4, t(2020, 1, 4), [5], [1, 10], (1, 1), "item-1"),
        (d(2020, 1, 6), 1, 1, "2020-01", d(2020, 1, 6), 5, t(2020, 1, 4), [6], [1, 10], (1, 1), "item-1"),
        (d(2020, 1, 7), 1, 1, "2020-01", d(2020, 1, 6), 6, t(2020, 1, 7), [7], [1, 10], (1, 1), "item-1"),
    ], columns)

    _equal(spark.table("sqlmesh_example.item_activity"), expected)


def test_port_unit_test_from_its_tests_folder_passes_unedited(spark):
    rows = call(spark, "test", project=str(PORT))

    assert [(r.test, r.model, r.status) for r in rows] == [
        ("test_example_full_model", "sqlmesh_example.full_model", "passed")]
