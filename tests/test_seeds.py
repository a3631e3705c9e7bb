"""SEED models: declared column types, rows that do not fit them reported with their line numbers, atomic reloads."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from conftest import call as _call
from conftest import state_rows, tables_in
from pyspark_incr.sqltext import call_sql
from pyspark_incr.writers import generations

EQUAL = dict(ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
FIRST, SECOND = "2024-01-03 00:00:00", "2024-01-04 00:00:00"
OLD_CSV = "id,price,day\n1,2.5,2024-01-01\n2,3.0,2024-01-02\n3,4.0,2024-01-03\n"
#: Row 1 is gone, row 2 changed, row 4 is new; day 2024-01-01 and 2024-01-03 have no rows any more.
NEW_CSV = "id,price,day\n2,3.5,2024-01-02\n4,1.0,2024-01-04\n"


def _seed_model(name: str, path, columns: str = "id INT, price DOUBLE, day DATE", extra: str = "") -> str:
    return f"MODEL (name {name}, kind SEED (path '{path}'), columns ({columns}){extra})"


def test_a_seed_with_declared_types_loads_them(spark, isolated, tmp_path):
    csv = tmp_path / "prices.csv"
    csv.write_text("id,price,day\n1,2.5,2024-01-01\n2,,2024-01-02\n")
    name = f"{isolated}.prices"
    spark.sql(call_sql("create_model", definition=_seed_model(name, csv))).collect()

    spark.sql(call_sql("apply", execution_time="2024-01-03 00:00:00")).collect()

    expected = spark.sql("SELECT * FROM VALUES (1, 2.5D, DATE'2024-01-01'), (2, CAST(NULL AS DOUBLE), DATE'2024-01-02') "
                         "AS t(id, price, day)")
    assert_df_equality(spark.table(name), expected, ignore_row_order=True, ignore_nullable=True)


def test_seed_rows_that_do_not_fit_the_declared_types_are_reported_by_line_and_nothing_changes(spark, isolated, tmp_path):
    csv = tmp_path / "prices.csv"
    csv.write_text("id,price,day\n1,2.5,2024-01-01\n2,3.0,2024-01-02\n3,cheap,2024-01-03\nx,1.0,2024-13-40\n")
    name = f"{isolated}.prices"
    spark.sql(call_sql("create_model", definition=_seed_model(name, csv))).collect()
    before = state_rows(spark, isolated)

    rows = spark.sql(call_sql("apply", execution_time="2024-01-03 00:00:00")).collect()

    assert [(r.action, r.status) for r in rows] == [("create", "failed")]
    message = rows[0].message
    assert "2 row(s) of seed file" in message
    assert "line 4: price 'cheap' does not convert to DOUBLE" in message
    assert "line 5: id 'x' does not convert to INT" in message
    assert "line 5: day '2024-13-40' does not convert to DATE" in message
    assert tables_in(spark, isolated) == set(), "no table was created from the bad file"
    assert state_rows(spark, isolated).get("intervals", 0) == before.get("intervals", 0)


def _prices(spark, rows: str, types: str = "INT, DOUBLE"):
    """Expected seed rows: ``rows`` is VALUES text of (id, price, day), cast to ``types`` for id and price."""
    id_type, price_type = types.split(", ")
    return spark.sql(f"SELECT CAST(id AS {id_type}) AS id, CAST(price AS {price_type}) AS price, day "
                     f"FROM VALUES {rows} AS t(id, price, day)")


OLD_ROWS = "(1, 2.5, DATE'2024-01-01'), (2, 3.0, DATE'2024-01-02'), (3, 4.0, DATE'2024-01-03')"
NEW_ROWS = "(2, 3.5, DATE'2024-01-02'), (4, 1.0, DATE'2024-01-04')"


def _loaded_seed(spark, isolated, tmp_path, layout: str = "unpartitioned") -> tuple[str, object]:
    """A seed model over OLD_CSV, applied once; its name and CSV path.

    The isolated prefix is cut to 40 characters, so both layouts of a test share it: names carry the layout.
    """
    csv = tmp_path / "prices.csv"
    csv.write_text(OLD_CSV)
    name = f"{isolated}.prices_{layout}"
    extra = ", partitioned_by day" if layout == "partitioned" else ""
    _call(spark, "create_model", definition=_seed_model(name, csv, extra=extra))
    assert [r.status for r in _call(spark, "apply", execution_time=FIRST)] == ["ok"]
    return name, csv


LAYOUTS = pytest.mark.parametrize("layout", ["unpartitioned", "partitioned"])


@LAYOUTS
def test_a_changed_seed_file_reloads_the_table_with_exactly_the_new_rows(spark, isolated, tmp_path, layout):
    name, csv = _loaded_seed(spark, isolated, tmp_path, layout)
    csv.write_text(NEW_CSV)

    rows = _call(spark, "apply", execution_time=SECOND)

    assert [(r.model, r.status) for r in rows] == [(name, "ok")]
    assert_df_equality(spark.table(name), _prices(spark, NEW_ROWS), **EQUAL)


@LAYOUTS
def test_a_reload_failing_inside_the_write_leaves_the_previous_rows_and_a_reapply_converges(
        spark, isolated, tmp_path, monkeypatch, layout):
    name, csv = _loaded_seed(spark, isolated, tmp_path, layout)
    csv.write_text(NEW_CSV)
    seen = {}

    def crash(spark_, table, staged, *args, **kwargs):
        seen["readers"] = spark.table(name).collect()
        raise RuntimeError("injected crash between stage and publish")

    monkeypatch.setattr(generations, "publish", crash)
    failed = _call(spark, "apply", execution_time=SECOND)
    after_failure = spark.table(name).collect()
    monkeypatch.undo()
    reapplied = _call(spark, "apply", execution_time=SECOND)

    assert [(r.status, "Injected crash" in r.message) for r in failed] == [("failed", True)]
    schema = spark.table(name).schema
    for version in (seen["readers"], after_failure):
        assert_df_equality(spark.createDataFrame(version, schema), _prices(spark, OLD_ROWS), **EQUAL)
    assert [r.status for r in reapplied] == ["ok"]
    assert_df_equality(spark.table(name), _prices(spark, NEW_ROWS), **EQUAL)


def test_a_reload_with_rows_that_do_not_fit_keeps_the_previous_rows(spark, isolated, tmp_path):
    name, csv = _loaded_seed(spark, isolated, tmp_path)
    csv.write_text("id,price,day\n2,3.5,2024-01-02\n4,cheap,2024-01-04\n")

    rows = _call(spark, "apply", execution_time=SECOND)

    assert [(r.status, "line 3: price 'cheap' does not convert to DOUBLE" in r.message) for r in rows] == [
        ("failed", True)]
    assert_df_equality(spark.table(name), _prices(spark, OLD_ROWS), **EQUAL)


def test_a_seed_whose_declared_types_change_is_recreated_with_the_new_types(spark, isolated, tmp_path):
    name, csv = _loaded_seed(spark, isolated, tmp_path)
    csv.write_text(NEW_CSV)
    _call(spark, "create_model", definition=_seed_model(name, csv, "id BIGINT, price DECIMAL(5,2), day DATE"))

    rows = _call(spark, "apply", execution_time=SECOND)

    assert [r.status for r in rows] == ["ok"]
    assert [(f.name, f.dataType.simpleString()) for f in spark.table(name).schema] == [
        ("id", "bigint"), ("price", "decimal(5,2)"), ("day", "date")]
    assert_df_equality(spark.table(name), _prices(spark, NEW_ROWS, "BIGINT, DECIMAL(5,2)"), **EQUAL)
