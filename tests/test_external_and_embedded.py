"""EXTERNAL and EMBEDDED models in a project: an external model's table must exist before a model reads it,
and an embedded model is inlined where it is read, never built as a table."""

from __future__ import annotations

from pathlib import Path

import pytest
from chispa import assert_df_equality

from conftest import call as _call
from conftest import state_rows, tables_in

T = "2024-01-03 00:00:00"
VARIANTS = pytest.mark.parametrize("through_embedded", [False, True], ids=["direct", "through_embedded"])


def _project(root: Path, prefix: str, through_embedded: bool) -> tuple[str, str, str]:
    """A project whose FULL model ``totals`` reads the external ``<prefix>_ext.orders``, directly or through
    the EMBEDDED model ``big_orders``; the three model names."""
    external, embedded = f"{prefix}_ext.orders", f"{prefix}.big_orders"
    totals = f"{prefix}.totals_{'embedded' if through_embedded else 'direct'}"  # parametrized cases share a prefix
    (root / "models").mkdir(parents=True)
    (root / "external_models.yaml").write_text(f"- name: {external}\n  columns:\n    id: int\n    amount: double\n")
    source = external
    if through_embedded:
        (root / "models" / "big_orders.sql").write_text(
            f"MODEL (name {embedded}, kind EMBEDDED); SELECT id, amount FROM {external} WHERE amount > 1")
        source = embedded
    (root / "models" / "totals.sql").write_text(
        f"MODEL (name {totals}, kind FULL); SELECT COUNT(*) AS orders, SUM(amount) AS revenue FROM {source}")
    return external, embedded, totals


def _written(counts: dict[str, int]) -> dict[str, int]:
    # The state tables themselves may appear on first use, empty.
    return {table: n for table, n in counts.items() if n}


@VARIANTS
@pytest.mark.parametrize("procedure", ["plan", "apply"])
def test_reading_an_external_model_without_a_table_fails_and_changes_nothing(spark, isolated, tmp_path, procedure,
                                                                             through_embedded):
    external, _, totals = _project(tmp_path, isolated, through_embedded)
    before = state_rows(spark, isolated)

    with pytest.raises(Exception, match=rf"model {totals} reads external model {external}, whose table does not "
                                        r"exist; create it first"):
        _call(spark, procedure, project=str(tmp_path), execution_time=T)

    assert _written(state_rows(spark, isolated)) == _written(before), "no state row was written"
    assert tables_in(spark, isolated, f"{isolated}_ext", f"{isolated}_physical") == set(), "no table was created"


def test_once_the_external_table_exists_the_reader_builds_and_the_embedded_model_gets_no_table(
        spark, isolated, tmp_path):
    external, embedded, totals = _project(tmp_path, isolated, through_embedded=True)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_ext")
    spark.sql(f"CREATE TABLE {external} USING parquet AS "
              "SELECT * FROM VALUES (1, 0.5D), (2, 2.0D), (3, 3.5D) AS t(id, amount)")

    rows = _call(spark, "apply", project=str(tmp_path), execution_time=T)

    assert [(r.model, r.status) for r in rows if r.model == totals] == [(totals, "ok")]
    expected = spark.sql("SELECT 2L AS orders, 5.5D AS revenue")
    assert_df_equality(spark.table(totals), expected, ignore_nullable=True, ignore_metadata=True)
    assert not spark.catalog.tableExists(embedded), "an EMBEDDED model is inlined into its readers, never built"
    assert not [t for t in tables_in(spark, f"{isolated}_physical") if "big_orders" in t], "nor stored as a version"
    assert tables_in(spark, isolated) == {totals}
