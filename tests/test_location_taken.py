"""A table pyspark-incr would create where files already lie (a metastore reset over a kept warehouse, a table
dropped from another catalog): a clear ``INCR_LOCATION_TAKEN`` naming the directory, the files kept, and
the call going through once they are moved away."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from chispa import assert_df_equality

from conftest import call, physical, tables_in


def _warehouse(spark) -> Path:
    return Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))


def test_a_state_table_directory_holding_files_is_refused_creating_no_state_table(spark, isolated, tmp_path):
    left = _warehouse(spark) / f"{isolated}_state.db" / "environments"
    left.mkdir(parents=True)
    (left / "part-00000.parquet").write_bytes(b"someone else's rows")

    with pytest.raises(Exception) as info:
        call(spark, "environments")

    message = str(info.value)
    assert "[INCR_LOCATION_TAKEN]" in message and "SQLSTATE: 42710" in message
    assert f"{isolated}_state.db/environments already holds files" in message
    assert "spark.incr.stateSchema" in message
    assert tables_in(spark, f"{isolated}_state") == set(), "no state table created beside the refused one"
    assert (left / "part-00000.parquet").read_bytes() == b"someone else's rows"

    shutil.move(left, tmp_path / "moved")
    assert call(spark, "environments") == []
    assert f"{isolated}_state.environments" in tables_in(spark, f"{isolated}_state")


def test_a_models_table_directory_holding_files_fails_that_model_alone_and_keeps_them(spark, isolated, tmp_path):
    model, other = f"{isolated}.daily", f"{isolated}.other"
    query = "SELECT CAST(id AS INT) AS id FROM range(3)"
    for name in (model, other):
        call(spark, "create_model", definition=f"MODEL (name {name}, kind FULL); {query}")
    call(spark, "apply", execution_time="2024-01-02")
    table = physical(spark, model).replace("`", "")
    directory = _warehouse(spark) / f"{isolated}_physical.db" / table.split(".")[1]
    kept = tmp_path / "kept"
    shutil.copytree(directory, kept)
    spark.sql(f"DROP TABLE {table}")  # the catalog forgets the table; its files come back below
    shutil.rmtree(directory, ignore_errors=True)
    shutil.copytree(kept, directory)

    rows = call(spark, "run", execution_time="2024-01-03")

    failed = [r for r in rows if r.model == model]
    assert [r.status for r in failed] == ["failed"]
    assert f"Cannot create model {model}'s table" in failed[0].message
    assert f"{directory.name} already holds files" in failed[0].message
    assert sorted(p.name for p in directory.rglob("*")) == sorted(p.name for p in kept.rglob("*"))
    assert [r.status for r in rows if r.model == other] == ["ok"], "the other model built its day"

    shutil.move(directory, tmp_path / "moved")
    rows = call(spark, "run", execution_time="2024-01-03")
    assert {r.status for r in rows if r.model == model} == {"ok"}
    assert_df_equality(spark.table(model), spark.sql(query),
                       ignore_row_order=True, ignore_nullable=True)
