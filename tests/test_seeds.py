"""SEED models: declared column types, and rows that do not fit them reported with their line numbers."""

from __future__ import annotations

from chispa import assert_df_equality

from conftest import state_rows, tables_in
from pyspark_incr.sqltext import call_sql


def _seed_model(name: str, path, columns: str = "id INT, price DOUBLE, day DATE") -> str:
    return f"MODEL (name {name}, kind SEED (path '{path}'), columns ({columns}))"


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
