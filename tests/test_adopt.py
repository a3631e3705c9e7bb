"""incr.adopt and incr.adopt_sqlmesh: existing tables become models' tables in place; the next run builds the rest."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pytest
from chispa import assert_df_equality

from pyspark_incr.errors import AdoptRefused, Claimed, UnknownModelError
from pyspark_incr.run.locks import table_key

from conftest import call, hold_claim, physical, state_rows

FIXTURE = Path(__file__).parent / "fixtures" / "sqlmesh_adopt"


def _events(name: str, raw: str, kind: str = "INCREMENTAL_BY_TIME_RANGE (time_column ds)") -> str:
    return (f"MODEL (name {name}, kind {kind}, start '2024-01-01', cron '@daily'); "
            f"SELECT id, ds, amount FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds")


def _warehouse_table(spark, name: str, days: range, columns: str = "id INT, amount INT, ds DATE",
                     partitioned: str = "PARTITIONED BY (ds)") -> None:
    """A table another tool built: amounts 1000 above what the model computes, so a rebuilt day shows."""
    spark.sql(f"CREATE TABLE {name} ({columns}) USING parquet {partitioned}")
    if days:
        values = ", ".join(f"({d}, {1000 + d}, DATE'2024-01-0{d}')" for d in days)
        spark.sql(f"INSERT INTO {name} SELECT id, amount, ds FROM VALUES {values} AS t(id, amount, ds)")


@pytest.fixture(scope="module")
def shop(spark, module_isolated):
    """A raw source (days 1-5), models over it (registered), and warehouse tables to adopt."""
    p = module_isolated
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {p}_raw")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {p}_wh")
    spark.sql(f"""CREATE TABLE {p}_raw.sales USING parquet AS SELECT * FROM VALUES
        (1, DATE'2024-01-01', 1), (2, DATE'2024-01-02', 2), (3, DATE'2024-01-03', 3), (4, DATE'2024-01-04', 4),
        (5, DATE'2024-01-05', 5) AS t(id, ds, amount)""")
    for model in ("events", "built", "other", "keyed", "fresh"):
        kind = "INCREMENTAL_BY_UNIQUE_KEY (unique_key id)" if model == "keyed" else None
        definition = _events(f"{p}.{model}", f"{p}_raw.sales", *([kind] if kind else []))
        call(spark, "create_model", definition=definition)
    call(spark, "apply", select=f"{p}.built,{p}.other", execution_time="2024-01-04")
    _warehouse_table(spark, f"{p}_wh.events_daily", range(1, 4))
    return p


def test_an_adopted_table_keeps_its_rows_and_the_next_run_builds_only_the_missing_days(spark, shop):
    p = shop
    rows = call(spark, "adopt", model=f"{p}.events", table=f"{p}_wh.Events_Daily", end="2024-01-03",
                execution_time="2024-01-06")
    assert [(r.model, r.table, r.start.date(), r.end.date(), r.intervals, r.view) for r in rows] == [
        (f"{p}.events", f"`{p}_wh`.`events_daily`", date(2024, 1, 1), date(2024, 1, 4), 3, f"`{p}`.`events`")]
    assert physical(spark, f"{p}.events") == f"`{p}_wh`.`events_daily`"

    built = call(spark, "run", select=f"{p}.events", execution_time="2024-01-06")
    assert [(r.start.date(), r.end.date(), r.status) for r in built] == [(date(2024, 1, 4), date(2024, 1, 6), "ok")]
    # days 1-3 are the other tool's rows, untouched; days 4-5 are the model's
    expected = spark.createDataFrame(
        [(1, 1001, date(2024, 1, 1)), (2, 1002, date(2024, 1, 2)), (3, 1003, date(2024, 1, 3)),
         (4, 4, date(2024, 1, 4)), (5, 5, date(2024, 1, 5))], "id INT, amount INT, ds DATE")
    for source in (f"{p}_wh.events_daily", f"{p}.events"):
        assert_df_equality(spark.table(source).select("id", "amount", "ds"), expected, ignore_row_order=True)
    history = [r for r in call(spark, "history", model=f"{p}.events") if r.procedure == "adopt"]
    assert len(history) == 1 and history[0].status == "ok"


def test_the_janitor_never_drops_an_adopted_table_a_new_version_replaced(spark, isolated):
    p = isolated
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {p}_wh")
    spark.sql(f"CREATE TABLE {p}_wh.src USING parquet AS SELECT 1 AS id, DATE'2024-01-01' AS ds, 1 AS amount")
    call(spark, "create_model", definition=_events(f"{p}.events", f"{p}_wh.src"))
    # named as pyspark-incr (and SQLMesh) name physical tables, so only its being adopted keeps it
    old = f"{p}_wh.{p}__events__0123456789"
    _warehouse_table(spark, old, range(1, 2))
    call(spark, "adopt", model=f"{p}.events", table=old, end="2024-01-01", execution_time="2024-01-02")
    changed = _events(f"{p}.events", f"{p}_wh.src").replace("amount FROM", "amount * 2 AS amount FROM")
    call(spark, "create_model", definition=changed)
    call(spark, "apply", execution_time="2024-01-02")
    assert physical(spark, f"{p}.events").replace("`", "") != old
    assert call(spark, "janitor", older_than="0 days", dry_run=False) == []
    assert spark.table(old).count() == 1


PYTHON_EVENTS = """
from pyspark.sql import functions as F
from sqlmesh import model


@model("{name}", kind=dict(name="INCREMENTAL_BY_TIME_RANGE", time_column="ds"), start="2024-01-01", cron="@daily",
       columns={{"id": "int", "amount": "int", "ds": "date"}})
def execute(context, start, end, execution_time, **kwargs):
    raw = context.spark.table("{raw}")
    return raw.where((F.col("ds") >= F.lit(start.date())) & (F.col("ds") <= F.lit(end.date()))).select("id", "amount", "ds")
"""


def test_a_python_models_table_is_adopted_against_its_declared_columns(spark, shop, tmp_path):
    p = shop
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "py_events.py").write_text(PYTHON_EVENTS.format(name=f"{p}.py_events", raw=f"{p}_raw.sales"))
    _warehouse_table(spark, f"{p}_wh.py_wrong", range(1, 2), columns="id BIGINT, amount INT, ds DATE")
    _warehouse_table(spark, f"{p}_wh.py_daily", range(1, 3))

    said = _refusal(spark, shop, model=f"{p}.py_events", table=f"{p}_wh.py_wrong", end="2024-01-01",
                    project=str(tmp_path))
    assert "column id is bigint in the table and int in the query's output" in said
    call(spark, "adopt", model=f"{p}.py_events", table=f"{p}_wh.py_daily", end="2024-01-02",
         execution_time="2024-01-04", project=str(tmp_path))
    built = call(spark, "run", select=f"{p}.py_events", execution_time="2024-01-04")

    assert [(r.start.date(), r.end.date(), r.status) for r in built] == [(date(2024, 1, 3), date(2024, 1, 4), "ok")]
    assert sorted(tuple(r) for r in spark.table(f"{p}_wh.py_daily").select("id", "amount").collect()) == [
        (1, 1001), (2, 1002), (3, 3)]


def _refusal(spark, shop, error=AdoptRefused, **args) -> str:
    """The error of an adopt call, having checked it changed nothing in state or the catalog."""
    before = state_rows(spark, shop), sorted(t.name for t in spark.catalog.listTables(f"{shop}_wh"))
    with pytest.raises(Exception) as caught:
        call(spark, "adopt", execution_time="2024-01-06", **args)
    assert (state_rows(spark, shop), sorted(t.name for t in spark.catalog.listTables(f"{shop}_wh"))) == before
    assert f"[{error.condition}]" in str(caught.value)
    return str(caught.value)


def test_a_table_whose_columns_differ_is_refused_with_every_difference_listed(spark, shop):
    p = shop
    _warehouse_table(spark, f"{p}_wh.mismatched", range(1, 2), "id BIGINT, total INT, ds DATE")
    message = _refusal(spark, p, model=f"{p}.fresh", table=f"{p}_wh.mismatched", end="2024-01-01")
    assert "column id is bigint in the table and int in the query's output" in message
    assert "column amount (int) of the query's output is missing from the table" in message
    assert "column total (int) of the table is not in the query's output" in message


def test_kind_columns_format_and_partitioning_are_checked(spark, shop):
    p = shop
    _warehouse_table(spark, f"{p}_wh.no_ds", range(0), "id INT, amount INT, day DATE", "PARTITIONED BY (day)")
    message = _refusal(spark, p, model=f"{p}.fresh", table=f"{p}_wh.no_ds", end="2024-01-01")
    assert "partitioned by (day)" in message and "need (ds)" in message
    _warehouse_table(spark, f"{p}_wh.flat", range(0), partitioned="")
    assert "partitioned by (nothing)" in _refusal(spark, p, model=f"{p}.fresh", table=f"{p}_wh.flat", end="2024-01-01")
    _warehouse_table(spark, f"{p}_wh.keyless", range(0), "ident INT, amount INT, ds DATE", "")
    message = _refusal(spark, p, model=f"{p}.keyed", table=f"{p}_wh.keyless", end="2024-01-01")
    assert "the kind's unique_key id is not a column of the table" in message
    spark.sql(f"CREATE TABLE {p}_wh.as_csv (id INT, amount INT, ds DATE) USING csv PARTITIONED BY (ds)")
    assert "its format is csv" in _refusal(spark, p, model=f"{p}.fresh", table=f"{p}_wh.as_csv", end="2024-01-01")


@pytest.mark.parametrize("args, said", [
    ({"model": "{p}.nope", "table": "{p}_wh.events_daily", "end": "2024-01-01"}, "no model named {p}.nope"),
    ({"model": "{p}.keyed", "table": "{p}_wh.missing", "end": "2024-01-01"}, "does not exist"),
    ({"model": "{p}.keyed", "table": "{p}.events", "end": "2024-01-01"}, "is a view"),
    ({"model": "{p}.keyed", "table": "{p}_wh.events_daily", "start": "2023-12-01", "end": "2024-01-01"},
     "lies outside the model's intervals due now"),
    ({"model": "{p}.keyed", "table": "{p}_wh.events_daily", "end": "2024-01-09"}, "lies outside"),
    ({"model": "{p}.events", "table": "{p}_wh.events_daily", "end": "2024-01-01"}, "already adopted"),
    ({"model": "{p}.keyed", "table": "{p}_wh.events_daily", "end": "2024-01-01"},
     "it is the physical table of model {p}.events in environment prod"),
    ({"model": "{p}.keyed", "table": "@other", "end": "2024-01-01"}, "physical table of model {p}.other"),
    ({"model": "{p}.built", "table": "{p}_wh.spare", "end": "2024-01-02"}, "is already recorded built in"),
    ({"model": "{p}.built", "table": "{p}_wh.spare", "start": "2024-01-04", "end": "2024-01-04"},
     "adopting another table would leave those rows behind"),
    ({"model": "{p}.keyed", "table": "{p}.keyed", "end": "2024-01-01"}, "rename it first"),
    ({"model": "{p}.keyed", "table": "not a table", "end": "2024-01-01"}, "is not a table name"),
])
def test_bad_input_is_refused_naming_the_problem_and_changes_nothing(spark, shop, args, said):
    p = shop
    if not spark.catalog.tableExists(f"{p}_wh.spare"):
        _warehouse_table(spark, f"{p}_wh.spare", range(0))
        spark.sql(f"CREATE TABLE {p}.keyed (id INT) USING parquet")
    if not spark.catalog.tableExists(f"{p}.events"):  # the adoption test ran first when run whole
        call(spark, "adopt", model=f"{p}.events", table=f"{p}_wh.events_daily", end="2024-01-03",
             execution_time="2024-01-06")
    args = {k: physical(spark, f"{p}.other").replace("`", "") if v == "@other" else v.format(p=p)
            for k, v in args.items()}
    error = UnknownModelError if "no model" in said else AdoptRefused
    assert said.format(p=p) in _refusal(spark, p, error, **args)


def test_an_adoption_waits_for_a_call_writing_the_table_and_then_changes_nothing(spark, shop):
    p = shop
    _warehouse_table(spark, f"{p}_wh.busy", range(1, 2))
    hold_claim(spark, table_key(f"`{p}_wh`.`busy`"), "run-elsewhere@host:1", lease_s=600)
    message = _refusal(spark, p, Claimed, model=f"{p}.fresh", table=f"{p}_wh.busy", end="2024-01-01", wait="0 seconds")
    assert "is claimed by run-elsewhere" in message


def test_adopting_again_finishes_an_adoption_stopped_after_recording_its_intervals(spark, shop):
    from pyspark_incr.state import tables as t
    from pyspark_incr.state.store import StateStore

    p = shop
    _warehouse_table(spark, f"{p}_wh.halfway", range(1, 3))
    table, fresh = f"`{p}_wh`.`halfway`", StateStore(spark).environment("prod").get(f"{p}.fresh")
    assert fresh is None
    # what an adoption killed between its interval rows and its environment rows leaves
    StateStore(spark).append(t.INTERVALS, [t.interval_row(table, "f", f"{p}.fresh", 1704067200000, 1704240000000,
                                                          "add", "adopt-killed")])
    rows = call(spark, "adopt", model=f"{p}.fresh", table=f"{p}_wh.halfway", end="2024-01-02",
                execution_time="2024-01-06")
    assert [(r.start.date(), r.end.date()) for r in rows] == [(date(2024, 1, 1), date(2024, 1, 3))]
    assert physical(spark, f"{p}.fresh") == table
    assert str(StateStore(spark).coverage()[table]) == "[2024-01-01, 2024-01-03)"


@pytest.fixture(scope="module")
def sqlmesh_moved(spark, tmp_path_factory):
    """The tables SQLMesh built (tests/fixtures/sqlmesh_adopt), made again under a schema of this module."""
    from conftest import _isolation

    with _isolation(spark, "adopt_sqlmesh") as p:
        work = tmp_path_factory.mktemp("sqlmesh_adopt")
        shutil.copytree(FIXTURE / "project", work / "project")
        for model in (work / "project" / "models").glob("*.sql"):
            model.write_text(model.read_text().replace("shop.", f"{p}_shop."))
        (work / "state.json").write_text((FIXTURE / "state.json").read_text().replace("shop", f"{p}_shop"))
        for name, table in json.loads((FIXTURE / "tables.json").read_text()).items():
            name = name.removeprefix("spark_catalog.").replace("shop", f"{p}_shop")
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {name.split('.')[0]}")
            columns = ", ".join(f"{c} {t}" for c, t in table["columns"])
            parts = f"PARTITIONED BY ({', '.join(table['partitioned_by'])})" if table["partitioned_by"] else ""
            spark.sql(f"CREATE TABLE {name} ({columns}) USING {table['provider']} {parts}")
            text = spark.createDataFrame([[str(v) for v in row] for row in table["rows"]],
                                         ", ".join(f"{c} string" for c, _ in table["columns"]))
            text.selectExpr(*[f"CAST({c} AS {t})" for c, t in table["columns"]]).write.insertInto(name)
        yield p, work


def test_a_sqlmesh_project_moves_over_without_a_rebuild(spark, sqlmesh_moved):
    p, work = sqlmesh_moved
    rows = call(spark, "adopt_sqlmesh", state=str(work / "state.json"), project=str(work / "project"),
                execution_time="2024-01-06")
    assert sorted((r.model, r.table, r.start.date(), r.end.date()) for r in rows) == [
        (f"{p}_shop.daily", f"`sqlmesh__{p}_shop`.`{p}_shop__daily__2119143375`", date(2024, 1, 1), date(2024, 1, 4)),
        (f"{p}_shop.totals", f"`sqlmesh__{p}_shop`.`{p}_shop__totals__3228214591`", date(2024, 1, 1),
         date(2024, 1, 4)),
    ]
    built = call(spark, "run", execution_time="2024-01-06")
    assert sorted((r.model, r.start.date(), r.end.date(), r.status) for r in built) == [
        (f"{p}_shop.daily", date(2024, 1, 4), date(2024, 1, 6), "ok"),
        (f"{p}_shop.totals", date(2024, 1, 1), date(2024, 1, 6), "ok"),
    ]
    expected = spark.createDataFrame([(date(2024, 1, d), d * 10) for d in range(1, 6)], "ds DATE, orders BIGINT")
    assert_df_equality(spark.table(f"{p}_shop.daily").select("ds", "orders"), expected, ignore_row_order=True)
    assert [tuple(r) for r in spark.table(f"{p}_shop.totals").collect()] == [(150, 5)]
