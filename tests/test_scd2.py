"""SCD type 2 by time and by column: the spec's example to the row, every option, atomic Parquet rewrites,
the Delta MERGE as SQL, and generated snapshot sequences against a pure-Python reference."""

from __future__ import annotations

import json
import os
import random
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import sqlglot
from chispa import assert_df_equality
from pyspark.sql import functions as F
from sqlglot import exp

import scd2_reference
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.intervals.times import to_ms
from pyspark_incr.model.definition import parse_model
from pyspark_incr.writers import formats, generations, scd2, scd2_spec, scd2_sql, tables
from pyspark_incr.writers.base import BuildContext
from conftest import call as _call, physical

FIXTURES = Path(__file__).resolve().parent / "fixtures"
START = "2019-12-31"


def _fixture(name: str) -> dict:
    return json.loads((FIXTURES / "scd2" / f"{name}.json").read_text())


def _frame(spark, columns: str, rows: list):
    """A DataFrame of ``rows`` typed by ``columns`` DDL; times are written as UTC strings."""
    fields = [c.strip().split(" ", 1) for c in columns.split(",")]
    as_text = ", ".join(f"`{n}` {'STRING' if t.upper().startswith(('TIMESTAMP', 'DATE')) else t}" for n, t in fields)
    df = spark.createDataFrame([tuple(r) for r in rows], as_text)
    return df.select(*[F.col(f"`{n}`").cast(t).alias(n) for n, t in fields])


def _snapshot(spark, table: str, columns: str, rows: list) -> None:
    """Replace the source table's rows with ``rows`` (the source's state at the next run)."""
    if not spark.catalog.tableExists(table):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {table.split('.')[0]}")
        spark.sql(f"CREATE TABLE {table} ({columns}) USING parquet")
    _frame(spark, columns, rows).write.insertInto(table, overwrite=True)


def _define(spark, name: str, kind: str, source: str, columns: str, extra: str = "") -> None:
    select = ", ".join(c.strip().split(" ")[0] for c in columns.split(","))
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind {kind}, start '{START}', cron '@daily'{extra}); SELECT {select} FROM {source}"))


def _passes(spark, source: str, columns: str, passes: list[dict]):
    """Run each pass: set the source's rows, then apply (first) or run at the pass's execution time."""
    for i, p in enumerate(passes):
        _snapshot(spark, source, columns, p["source"])
        rows = _call(spark, "apply" if i == 0 else "run", execution_time=p["execution_time"])
        assert [r.status for r in rows] == ["ok"], rows
        yield p, rows


def _assert_table(spark, name: str, columns: str, expected: list) -> None:
    assert_df_equality(spark.table(name), _frame(spark, columns, expected), ignore_row_order=True,
                       ignore_nullable=True)


# --- the spec, to the row -------------------------------------------------------------------------------------------


def test_the_spec_menu_items_example_comes_out_to_the_row_after_each_of_its_three_passes(spark, isolated):
    fx = _fixture("menu_items")
    name, source = f"{isolated}.menu_items", f"{isolated}_raw.current_menu_items"
    _snapshot(spark, source, fx["source_columns"], [])
    _define(spark, name, fx["kind"], source, fx["source_columns"])

    for p, rows in _passes(spark, source, fx["source_columns"], fx["passes"]):
        _assert_table(spark, name, fx["table_columns"], p["expected"])


def test_by_column_closes_changed_and_deleted_keys_at_execution_time_and_reopens_a_returning_key(spark, isolated):
    fx = _fixture("menu_prices_by_column")
    name, source = f"{isolated}.menu_prices", f"{isolated}_raw.menu"
    _snapshot(spark, source, fx["source_columns"], [])
    _define(spark, name, fx["kind"], source, fx["source_columns"])

    for p, rows in _passes(spark, source, fx["source_columns"], fx["passes"]):
        _assert_table(spark, name, fx["table_columns"], p["expected"])


def test_the_reference_implementation_reproduces_the_spec_example_it_checks_the_writers_against():
    fx = _fixture("menu_items")
    history = []
    for p in fx["passes"]:
        source = [dict(zip(("id", "name", "price", "updated_at"), (*r[:3], _ts(r[3])))) for r in p["source"]]
        history = scd2_reference.merge(history, source, _ts(p["execution_time"]), key=("id",), updated_at="updated_at")

        assert sorted(_as_tuples(history, ("id", "name", "price", "updated_at", "valid_from", "valid_to"))) == sorted(
            tuple(_ts(v) if isinstance(v, str) and v[:2] in ("19", "20") else v for v in r) for r in p["expected"])


# --- options and column names ---------------------------------------------------------------------------------------


def test_column_names_follow_valid_from_name_valid_to_name_and_updated_at_name(spark, isolated):
    name, source = f"{isolated}.menu_items", f"{isolated}_raw.menu"
    columns = "id INT, name STRING, my_updated_at TIMESTAMP"
    _snapshot(spark, source, columns, [])
    _define(spark, name, "SCD_TYPE_2_BY_TIME (unique_key id, updated_at_name my_updated_at, "
            "valid_from_name my_valid_from, valid_to_name my_valid_to)", source, columns)
    passes = [{"execution_time": "2020-01-01 02:00:00", "source": [[1, "a", "2020-01-01 00:00:00"]]},
              {"execution_time": "2020-01-02 02:00:00", "source": [[1, "b", "2020-01-02 00:00:00"]]}]

    list(_passes(spark, source, columns, passes))

    _assert_table(spark, name, "id INT, name STRING, my_updated_at TIMESTAMP, my_valid_from TIMESTAMP, my_valid_to TIMESTAMP", [
        [1, "a", "2020-01-01 00:00:00", "1970-01-01 00:00:00", "2020-01-02 00:00:00"],
        [1, "b", "2020-01-02 00:00:00", "2020-01-02 00:00:00", None]])


def test_invalidate_hard_deletes_false_keeps_a_key_missing_from_the_source_open(spark, isolated):
    name, source = f"{isolated}.menu_items", f"{isolated}_raw.menu"
    columns = "id INT, updated_at TIMESTAMP"
    _snapshot(spark, source, columns, [])
    _define(spark, name, "SCD_TYPE_2 (unique_key id, invalidate_hard_deletes false)", source, columns)
    passes = [{"execution_time": "2020-01-01 02:00:00", "source": [[1, "2020-01-01 00:00:00"], [2, "2020-01-01 00:00:00"]]},
              {"execution_time": "2020-01-02 02:00:00", "source": [[1, "2020-01-01 00:00:00"]]}]

    list(_passes(spark, source, columns, passes))

    _assert_table(spark, name, "id INT, updated_at TIMESTAMP, valid_from TIMESTAMP, valid_to TIMESTAMP", [
        [1, "2020-01-01 00:00:00", "1970-01-01 00:00:00", None], [2, "2020-01-01 00:00:00", "1970-01-01 00:00:00", None]])


def test_updated_at_as_valid_from_starts_the_initial_load_at_updated_at_and_time_data_type_date_makes_dates(
        spark, isolated):
    name, source = f"{isolated}.menu_items", f"{isolated}_raw.menu"
    columns = "id INT, updated_at TIMESTAMP"
    _snapshot(spark, source, columns, [])
    _define(spark, name, "SCD_TYPE_2 (unique_key id, updated_at_as_valid_from true, time_data_type DATE)", source, columns)
    passes = [{"execution_time": "2020-01-01 02:00:00", "source": [[1, "2019-12-30 10:00:00"], [2, "2019-12-31 00:00:00"]]},
              {"execution_time": "2020-01-02 02:00:00", "source": [[1, "2020-01-01 09:00:00"]]}]

    list(_passes(spark, source, columns, passes))

    _assert_table(spark, name, "id INT, updated_at DATE, valid_from DATE, valid_to DATE", [
        [1, "2019-12-30", "2019-12-30", "2020-01-01"], [1, "2020-01-01", "2020-01-01", None],
        [2, "2019-12-31", "2019-12-31", "2020-01-02"]])


def test_execution_time_as_valid_from_starts_the_initial_load_at_the_execution_time(spark, isolated):
    name, source = f"{isolated}.menu_prices", f"{isolated}_raw.menu"
    columns = "id INT, price DOUBLE"
    _snapshot(spark, source, columns, [])
    _define(spark, name, "SCD_TYPE_2_BY_COLUMN (unique_key id, columns *, execution_time_as_valid_from true)",
            source, columns)
    passes = [{"execution_time": "2020-01-01 02:00:00", "source": [[1, 1.0], [2, 2.0]]},
              {"execution_time": "2020-01-02 02:00:00", "source": [[1, 1.0], [2, 2.5]]}]

    list(_passes(spark, source, columns, passes))

    _assert_table(spark, name, "id INT, price DOUBLE, valid_from TIMESTAMP, valid_to TIMESTAMP", [
        [1, 1.0, "2020-01-01 02:00:00", None], [2, 2.0, "2020-01-01 02:00:00", "2020-01-02 02:00:00"],
        [2, 2.5, "2020-01-02 02:00:00", None]])


def test_a_null_in_a_checked_column_is_a_change_a_null_key_is_one_key_and_duplicate_keys_keep_the_latest(
        spark, isolated):
    by_column, by_time = f"{isolated}.by_column", f"{isolated}.by_time"
    source, columns = f"{isolated}_raw.src", "id INT, price DOUBLE, updated_at TIMESTAMP"
    _snapshot(spark, source, columns, [])
    _define(spark, by_column, "SCD_TYPE_2_BY_COLUMN (unique_key id, columns [price])", source, columns)
    _define(spark, by_time, "SCD_TYPE_2 (unique_key id)", source, columns)
    passes = [
        {"execution_time": "2020-01-01 02:00:00",
         "source": [[1, 1.0, "2020-01-01 00:00:00"], [None, 5.0, "2020-01-01 00:00:00"],
                    [2, 2.0, "2019-12-01 00:00:00"], [2, 2.2, "2019-12-31 00:00:00"]]},
        {"execution_time": "2020-01-02 02:00:00",
         "source": [[1, None, "2020-01-02 00:00:00"], [None, 5.0, "2020-01-01 00:00:00"],
                    [2, 2.2, "2019-12-31 00:00:00"], [2, 2.0, "2019-12-01 00:00:00"]]},  # the same duplicates again
    ]
    for p in passes:
        _snapshot(spark, source, columns, p["source"])
        _call(spark, "apply", execution_time=p["execution_time"])

    _assert_table(spark, by_column, "id INT, price DOUBLE, updated_at TIMESTAMP, valid_from TIMESTAMP, valid_to TIMESTAMP", [
        [1, 1.0, "2020-01-01 00:00:00", "1970-01-01 00:00:00", "2020-01-02 02:00:00"],
        [1, None, "2020-01-02 00:00:00", "2020-01-02 02:00:00", None],
        [None, 5.0, "2020-01-01 00:00:00", "1970-01-01 00:00:00", None],
        [2, 2.0, "2019-12-01 00:00:00", "1970-01-01 00:00:00", None]])  # by column: the least price, both times
    _assert_table(spark, by_time, "id INT, price DOUBLE, updated_at TIMESTAMP, valid_from TIMESTAMP, valid_to TIMESTAMP", [
        [1, 1.0, "2020-01-01 00:00:00", "1970-01-01 00:00:00", "2020-01-02 00:00:00"],
        [1, None, "2020-01-02 00:00:00", "2020-01-02 00:00:00", None],
        [None, 5.0, "2020-01-01 00:00:00", "1970-01-01 00:00:00", None],
        [2, 2.2, "2019-12-31 00:00:00", "1970-01-01 00:00:00", None]])  # by time: the latest updated_at, both times


def test_a_query_producing_valid_from_itself_is_refused_naming_the_column(spark, isolated):
    name, source = f"{isolated}.menu_items", f"{isolated}_raw.menu"
    columns = "id INT, updated_at TIMESTAMP, valid_from TIMESTAMP"
    _snapshot(spark, source, columns, [[1, "2020-01-01 00:00:00", "2020-01-01 00:00:00"]])
    _define(spark, name, "SCD_TYPE_2 (unique_key id)", source, columns)

    rows = _call(spark, "apply", execution_time="2020-01-01 02:00:00")

    assert [r.status for r in rows] == ["failed"]
    assert "has a column 'valid_from', which SCD type 2 adds itself" in rows[0].message


# --- runs and batches -----------------------------------------------------------------------------------------------


def test_a_run_builds_one_batch_for_all_missing_intervals_and_an_unchanged_source_rewrites_nothing(spark, isolated):
    name, source = f"{isolated}.menu_items", f"{isolated}_raw.menu"
    columns = "id INT, updated_at TIMESTAMP"
    _snapshot(spark, source, columns, [[1, "2020-01-01 00:00:00"]])
    _define(spark, name, "SCD_TYPE_2 (unique_key id)", source, columns)

    planned = _call(spark, "plan", execution_time="2020-01-05 02:00:00")
    first = _call(spark, "apply", execution_time="2020-01-05 02:00:00")
    files = sorted(spark.table(name).inputFiles())
    again = _call(spark, "run", execution_time="2020-01-05 03:00:00")
    unchanged = _call(spark, "run", execution_time="2020-01-06 02:00:00")

    assert [(r.intervals, r.batches) for r in planned] == [(5, 1)]
    assert [(r.start.isoformat(), r.end.isoformat(), r.intervals, r.rows) for r in first] == [
        ("2019-12-31T00:00:00", "2020-01-05T00:00:00", 5, 1)]
    assert again == [], "nothing is due: nothing runs"
    assert [(r.intervals, r.rows, r.status) for r in unchanged] == [(1, 0, "ok")]
    assert sorted(spark.table(name).inputFiles()) == files, "a run that changes nothing keeps the table's files"


def test_a_first_load_analyses_the_source_query_once_per_build_and_asks_nothing_of_the_table_it_just_created(
        spark, isolated, monkeypatch):
    from pyspark.sql import SparkSession

    name, source = f"{isolated}.items", f"{isolated}_raw.items"
    columns = "id INT, price INT"
    _snapshot(spark, source, columns, [[1, 10], [2, 20]])
    _define(spark, name, "SCD_TYPE_2_BY_COLUMN (unique_key id, columns [price])", source, columns)
    statements: list[str] = []
    sql = SparkSession.sql
    monkeypatch.setattr(SparkSession, "sql", lambda session, query, *a, **k: (statements.append(query),
                                                                             sql(session, query, *a, **k))[1])

    first = _call(spark, "apply", execution_time="2020-01-02 00:00:00")
    at_first, statements[:] = list(statements), []
    _snapshot(spark, source, columns, [[1, 10], [2, 25]])
    second = _call(spark, "run", execution_time="2020-01-03 00:00:00")

    assert [(r.status, r.rows) for r in first] == [("ok", 2)] and [(r.status, r.rows) for r in second] == [("ok", 2)]
    source_only = [q for q in at_first if q == f"SELECT id, price FROM {isolated}_raw.items"]
    # once by the plan's validation, once by the build (creating the table and writing it share it)
    assert len(source_only) == 2, at_first
    assert not [q for q in at_first if q.endswith("LIMIT 1")], "a table created by this call is known to be empty"
    assert [q for q in statements if q.endswith("LIMIT 1")], "a later run asks whether the table holds rows"
    _assert_table(spark, name, "id INT, price INT, valid_from TIMESTAMP, valid_to TIMESTAMP", [
        [1, 10, "1970-01-01 00:00:00", None], [2, 20, "1970-01-01 00:00:00", "2020-01-03 00:00:00"],
        [2, 25, "2020-01-03 00:00:00", None]])


# --- Parquet: atomic generations ------------------------------------------------------------------------------------


def test_a_failure_between_stage_and_publish_leaves_the_previous_version_and_a_rerun_converges(
        spark, isolated, monkeypatch):
    fx = _fixture("menu_items")
    name, source = f"{isolated}.menu_items", f"{isolated}_raw.current_menu_items"
    first, second = fx["passes"][:2]
    _snapshot(spark, source, fx["source_columns"], first["source"])
    _define(spark, name, fx["kind"], source, fx["source_columns"])
    _call(spark, "apply", execution_time=first["execution_time"])
    seen_while_staged = []

    def crash(spark_, table, staged, *args, **kwargs):
        seen_while_staged.append(spark.table(name).count())
        raise RuntimeError("crash between stage and publish")

    monkeypatch.setattr(generations, "publish", crash)
    _snapshot(spark, source, fx["source_columns"], second["source"])
    failed = _call(spark, "run", execution_time=second["execution_time"])
    monkeypatch.undo()

    assert [(r.status, r.message) for r in failed] == [("failed", "Crash between stage and publish.")]
    assert seen_while_staged == [3], "readers see the previous version while the next one is staged"
    _assert_table(spark, name, fx["table_columns"], first["expected"])
    root = generations.table_root(tables.location(spark, exp.to_table(physical(spark, name), dialect="spark")))
    assert len(_generations_under(spark, root)) == 1, "the failed batch's generation is discarded"

    rerun = _call(spark, "run", execution_time=second["execution_time"])

    assert [r.status for r in rerun] == ["ok"]
    _assert_table(spark, name, fx["table_columns"], second["expected"])


def test_a_partitioned_history_rewrites_only_the_partitions_its_changes_touch(spark, isolated):
    name, source = f"{isolated}.items", f"{isolated}_raw.items"
    columns = "id INT, category STRING, price DOUBLE, updated_at TIMESTAMP"
    _snapshot(spark, source, columns, [])
    _define(spark, name, "SCD_TYPE_2 (unique_key id)", source, columns, extra=", partitioned_by category")
    day1 = [[1, "a", 1.0, "2020-01-01 00:00:00"], [2, "b", 2.0, "2020-01-01 00:00:00"], [3, "c", 3.0, "2020-01-01 00:00:00"]]
    day2 = [[1, "a", 1.5, "2020-01-02 00:00:00"], [2, "b", 2.0, "2020-01-01 00:00:00"], [3, "c", 3.0, "2020-01-01 00:00:00"]]
    list(_passes(spark, source, columns, [{"execution_time": "2020-01-01 02:00:00", "source": day1}]))
    before = _files_by_partition(spark, name)

    _snapshot(spark, source, columns, day2)
    _call(spark, "run", execution_time="2020-01-02 02:00:00")

    after = _files_by_partition(spark, name)
    assert after["b"] == before["b"] and after["c"] == before["c"], "untouched partitions keep their files"
    assert after["a"].isdisjoint(before["a"]), "the touched partition is a new generation"
    _assert_table(spark, name, "id INT, price DOUBLE, updated_at TIMESTAMP, valid_from TIMESTAMP, valid_to TIMESTAMP, "
                  "category STRING", [
                      [1, 1.0, "2020-01-01 00:00:00", "1970-01-01 00:00:00", "2020-01-02 00:00:00", "a"],
                      [1, 1.5, "2020-01-02 00:00:00", "2020-01-02 00:00:00", None, "a"],
                      [2, 2.0, "2020-01-01 00:00:00", "1970-01-01 00:00:00", None, "b"],
                      [3, 3.0, "2020-01-01 00:00:00", "1970-01-01 00:00:00", None, "c"]])


def test_partitioned_by_valid_to_closed_rows_leave_the_open_partition_which_empties_when_all_keys_go(spark, isolated):
    name, source = f"{isolated}.items", f"{isolated}_raw.items"
    columns = "id INT, updated_at TIMESTAMP"
    _snapshot(spark, source, columns, [])
    _define(spark, name, "SCD_TYPE_2 (unique_key id)", source, columns, extra=", partitioned_by valid_to")
    passes = [{"execution_time": "2020-01-01 02:00:00", "source": [[1, "2020-01-01 00:00:00"], [2, "2020-01-01 00:00:00"]]},
              {"execution_time": "2020-01-02 02:00:00", "source": []},
              {"execution_time": "2020-01-03 02:00:00", "source": [[2, "2020-01-03 00:00:00"]]}]
    partitions = []
    for p, _ in _passes(spark, source, columns, passes):
        partitions.append(sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {physical(spark, name)}").collect()))

    assert partitions[1] == ["valid_to=2020-01-02 02%3A00%3A00"], "the open (NULL) partition is emptied and forgotten"
    _assert_table(spark, name, "id INT, updated_at TIMESTAMP, valid_from TIMESTAMP, valid_to TIMESTAMP", [
        [1, "2020-01-01 00:00:00", "1970-01-01 00:00:00", "2020-01-02 02:00:00"],
        [2, "2020-01-01 00:00:00", "1970-01-01 00:00:00", "2020-01-02 02:00:00"],
        [2, "2020-01-03 00:00:00", "2020-01-03 00:00:00", None]])


# --- generated snapshot sequences against the reference -------------------------------------------------------------


def _generated(seed: int, passes: int = 4, keys: int = 8) -> list[dict]:
    """Snapshot sequences with random changes (some not visible to the comparison), deletes and re-appearances."""
    rng = random.Random(seed)
    day0 = datetime(2020, 1, 1)
    current: dict[int, list] = {}  # key -> [id, category, price, updated_at]
    gone: dict[int, list] = {}
    out = []
    for i in range(passes):
        now = day0 + timedelta(days=i)
        for k in range(1, keys + 1):
            roll = rng.random()
            if k in current:
                row = current[k]
                if roll < 0.25:
                    current[k] = [k, row[1], round(row[2] + 1, 2), now]  # a new price, a new updated_at
                elif roll < 0.35:
                    current[k] = [k, rng.choice("xyz"), row[2], row[3]]  # a change neither kind sees
                elif roll < 0.5:
                    gone[k] = current.pop(k)
            elif k in gone and roll < 0.5:
                row = gone.pop(k)  # back as it was, or with a new version
                current[k] = row if roll < 0.25 else [k, row[1], row[2] + 10, now]
            elif k not in gone and (i == 0 or roll < 0.2):
                current[k] = [k, rng.choice("xyz"), float(k), now - timedelta(hours=rng.randint(0, 30))]
        out.append({"execution_time": now + timedelta(hours=2), "rows": [list(r) for _, r in sorted(current.items())]})
    return out


@pytest.mark.parametrize("seed, kind, extra", [
    pytest.param(11, "SCD_TYPE_2 (unique_key id)", "", id="by_time"),
    pytest.param(12, "SCD_TYPE_2_BY_COLUMN (unique_key id, columns [price])", "", id="by_column"),
    pytest.param(13, "SCD_TYPE_2 (unique_key id)", ", partitioned_by category", id="partitioned"),
])
def test_random_runs_match_reference(spark, isolated, seed, kind, extra):
    """Generated snapshot sequences (changes, silent changes, deletes, re-appearances) build the reference's history."""
    by_time = kind.startswith("SCD_TYPE_2 ")
    name, source = f"{isolated}.history", f"{isolated}_raw.src"
    columns = "id INT, category STRING, price DOUBLE, updated_at TIMESTAMP"
    _snapshot(spark, source, columns, [])
    _define(spark, name, kind, source, columns, extra=extra)
    history: list[dict] = []
    for i, p in enumerate(_generated(seed)):
        rows = [dict(zip(("id", "category", "price", "updated_at"), r)) for r in p["rows"]]
        _snapshot(spark, source, columns, [[*r[:3], r[3].isoformat(sep=" ")] for r in p["rows"]])
        _call(spark, "apply" if i == 0 else "run", execution_time=p["execution_time"].isoformat(sep=" "))
        history = scd2_reference.merge(history, rows, p["execution_time"], key=("id",),
                                       **({"updated_at": "updated_at"} if by_time else {"check": ("price",)}))

        actual = spark.table(name)
        expected = spark.createDataFrame(
            [tuple(_text(r[c]) for c in actual.columns) for r in history],
            ", ".join(f"`{c}` STRING" for c in actual.columns))
        assert_df_equality(actual.select(*[F.col(c).cast("string") for c in actual.columns]), expected,
                           ignore_row_order=True, ignore_nullable=True)


# --- SQL: the Parquet changes query and the Delta MERGE -------------------------------------------------------------

SQL_CASES = {
    "by_time_initial": ("SCD_TYPE_2 (unique_key id)", True),
    "by_time_changes": ("SCD_TYPE_2 (unique_key id)", False),
    "by_column_changes": ("SCD_TYPE_2_BY_COLUMN (unique_key (id, region), columns [name, price], "
                          "invalidate_hard_deletes false, valid_from_name `from`, valid_to_name `to`)", False),
}


def _sql_model(kind: str):
    return parse_model(f"MODEL (name db.menu_items, kind {kind}); "
                       "SELECT id::INT, region, name::STRING, price::DOUBLE, updated_at::TIMESTAMP FROM stg.menu")


def _sql_case(case: str) -> tuple[scd2_spec.Scd2Spec, exp.Query]:
    kind, initial = SQL_CASES[case]
    model = _sql_model(kind)
    spec = scd2_spec.Scd2Spec.of(model, ["id", "region", "name", "price", "updated_at"], SQL_TYPES)
    target = exp.table_("menu_items", db="db", quoted=True)
    query = sqlglot.parse_one(model.query, read="spark")
    return spec, scd2_sql.changes_query(spec, query, target, to_ms("2020-01-02 02:00:00"), initial_load=initial)


#: The menu query's types, as DataFrame.dtypes names them (the key's decide how it is matched: scd2_keys).
SQL_TYPES = {"id": "int", "region": "string", "name": "string", "price": "double", "updated_at": "timestamp"}


def _check_sql(name: str, sql: str) -> None:
    path = FIXTURES / "scd2_sql" / f"{name}.sql"
    if os.environ.get("UPDATE_SQL_FIXTURES"):
        path.write_text(sql + "\n")
    assert sql + "\n" == path.read_text(), f"{path.name} differs; UPDATE_SQL_FIXTURES=1 rewrites it after review"


@pytest.mark.parametrize("case", sorted(SQL_CASES))
def test_the_changes_query_and_the_delta_merge_are_the_expected_sql(case):
    spec, changes = _sql_case(case)
    merge = scd2_sql.merge_statement(spec, exp.table_("menu_items", db="db", quoted=True), changes)

    _check_sql(f"{case}_changes", changes.sql("spark", pretty=True))
    _check_sql(f"{case}_merge", merge.sql("spark", pretty=True))


@pytest.mark.parametrize("case", sorted(c for c, (_, initial) in SQL_CASES.items() if not initial))
def test_the_next_version_query_keeps_history_and_joins_open_rows_to_the_source_once(case):
    spec, _ = _sql_case(case)
    query = sqlglot.parse_one(_sql_model(SQL_CASES[case][0]).query, read="spark")
    version = scd2_sql.next_version_query(spec, query, exp.table_("menu_items", db="db", quoted=True),
                                          to_ms("2020-01-02 02:00:00"))

    assert version.sql("spark").count(" JOIN ") == (2 if spec.by_time else 1), "one full join (and by time the closed keys)"
    _check_sql(f"{case}_next_version", version.sql("spark", pretty=True))


def test_sparks_own_parser_accepts_every_merge_statement_and_next_version_query(spark):
    parser = spark._jsparkSession.sessionState().sqlParser()
    for case in SQL_CASES:
        spec, changes = _sql_case(case)
        plan = parser.parsePlan(scd2_sql.merge_statement(spec, exp.to_table("db.t"), changes).sql("spark"))

        assert plan.nodeName() == "MergeIntoTable"
        if not SQL_CASES[case][1]:
            query = sqlglot.parse_one(_sql_model(SQL_CASES[case][0]).query, read="spark")
            version = scd2_sql.next_version_query(spec, query, exp.to_table("db.t"), 0)
            assert parser.parsePlan(version.sql("spark")).nodeName() == "UnresolvedWith"


@pytest.mark.parametrize("kind", ["SCD_TYPE_2_BY_COLUMN (unique_key id, columns [name])",
                                  "SCD_TYPE_2 (unique_key (id, region))"])
def test_the_next_version_shuffles_the_source_and_the_open_rows_once_each(spark, isolated, kind):
    table, source = f"{isolated}_db.items", f"{isolated}_db.src"
    columns = "id INT, region STRING, name STRING, updated_at TIMESTAMP"
    _snapshot(spark, source, columns, [(1, "eu", "a", "2020-01-01 00:00:00")])
    spark.sql(f"CREATE TABLE {table} ({columns}, valid_from TIMESTAMP, valid_to TIMESTAMP) USING parquet")
    model = parse_model(f"MODEL (name db.items, kind {kind}); SELECT id, region, name, updated_at FROM {source}")
    spec = scd2_spec.Scd2Spec.of(model, ["id", "region", "name", "updated_at"], dict(spark.table(source).dtypes))
    query = sqlglot.parse_one(model.query, read="spark")
    version = spark.sql(scd2_sql.next_version_query(spec, query, exp.to_table(table), 0).sql("spark"))

    plan = version._jdf.queryExecution().executedPlan().toString()

    # the dedupe's window partitions by the join's own keys (a NULL-safe join on the keys as they are would
    # shuffle and sort the source again), and the full join is computed once; by time the closed keys are a third
    shuffles = plan.count("Exchange hashpartitioning")
    assert shuffles == (3 if spec.by_time else 2), plan


class _RecordingSpark:
    """Just enough of a session for the writer's Delta path: records the SQL, answers analysis and emptiness."""

    def __init__(self, columns: list[str], empty: bool) -> None:
        self.statements: list[str] = []
        self.columns, self.empty = columns, empty

    def sql(self, text: str):
        self.statements.append(text)
        recorder = self

        class _Result:
            columns = recorder.columns
            dtypes = [(c, SQL_TYPES.get(c, "string")) for c in recorder.columns]

            def collect(self):
                if text.startswith("SELECT 1 FROM"):
                    return [] if recorder.empty else [(1,)]
                from pyspark.sql import Row
                return [Row(num_affected_rows=3, num_updated_rows=1, num_deleted_rows=0, num_inserted_rows=2)]
        return _Result()


def test_a_delta_model_runs_one_merge_statement_touching_only_changed_keys(monkeypatch):
    monkeypatch.setattr(tables, "described", lambda spark, table: None)  # no table yet: the model's format
    model = replace(_sql_model("SCD_TYPE_2 (unique_key id)"), table_format="delta")
    fake = _RecordingSpark(["id", "region", "name", "price", "updated_at"], empty=False)
    table = exp.table_("menu_items", db="db", quoted=True)
    ctx = BuildContext(fake, model, table, to_ms("2020-01-02 02:00:00"))

    rows = scd2.Scd2Writer().write(ctx, Interval(to_ms("2020-01-01"), to_ms("2020-01-02")))

    assert rows == 3
    merges = [s for s in fake.statements if s.startswith("MERGE INTO")]
    assert [sqlglot.parse_one(m, read="spark").sql("spark", pretty=True) for m in merges] == [
        _sql_fixture("by_time_changes_merge")]


def _delta_available(spark) -> str | None:
    """Why Delta tables cannot be tested here (None when they can)."""
    if not formats.delta_available(spark):
        return "io.delta classes are absent (Delta jars come from Maven, unreachable here)"
    if "delta" not in (spark.conf.get("spark.sql.extensions", "") or "").lower():
        return "the test session has no Delta SQL extension configured"
    return None


def test_on_delta_the_spec_example_comes_out_to_the_row(spark, isolated):
    reason = _delta_available(spark)
    if reason:
        pytest.skip(reason)
    fx = _fixture("menu_items")
    name, source = f"{isolated}.menu_items", f"{isolated}_raw.current_menu_items"
    _snapshot(spark, source, fx["source_columns"], [])
    _define(spark, name, fx["kind"], source, fx["source_columns"], extra=", table_format delta")

    for p, rows in _passes(spark, source, fx["source_columns"], fx["passes"]):
        _assert_table(spark, name, fx["table_columns"], p["expected"])


# --- helpers --------------------------------------------------------------------------------------------------------


def _sql_fixture(name: str) -> str:
    return (FIXTURES / "scd2_sql" / f"{name}.sql").read_text().strip()


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _text(value) -> str | None:
    """A value as Spark's CAST(... AS STRING) writes it."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return str(value)


def _as_tuples(rows: list[dict], columns: tuple[str, ...]) -> list[tuple]:
    return [tuple(r[c] for c in columns) for r in rows]


def _files_by_partition(spark, name: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for row in spark.table(name).select("category", F.input_file_name().alias("f")).collect():
        out.setdefault(row.category, set()).add(row.f)
    return out


def _generations_under(spark, root: str) -> list[str]:
    path = spark._jvm.org.apache.hadoop.fs.Path(root)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    return [s.getPath().getName() for s in fs.listStatus(path) if s.getPath().getName().startswith(generations.GEN_PREFIX)]
