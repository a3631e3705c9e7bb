"""Change scenarios on a six-model project, a chain with a diamond: what each kind of change rebuilds.

    raw.events -> a -> b -> d -> e -> f        (a: by time range; b, c, d: by time range;
                    \\-> c -/                     e: FULL; f: VIEW)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chispa import assert_df_equality

from conftest import call as _call, physical

DAY3, DAY4 = "2024-01-04 00:00:00", "2024-01-05 00:00:00"
INCREMENTAL = "kind INCREMENTAL_BY_TIME_RANGE (time_column ds{}), start '2024-01-01', cron '@daily'"
WINDOW = "WHERE ds BETWEEN @start_ds AND @end_ds"


def _models(db: str, raw: str, a_select: str = "ds, shop, amount", a_where: str = "", a_props: str = "",
            b_description: str = "") -> dict[str, str]:
    described = f", description '{b_description}'" if b_description else ""
    return {
        "a": f"MODEL (name {db}.a, {INCREMENTAL.format(a_props)}); SELECT {a_select} FROM {raw} {WINDOW}{a_where}",
        "b": f"MODEL (name {db}.b, {INCREMENTAL.format('')}{described}); "
             f"SELECT ds, shop, SUM(amount) AS total FROM {db}.a {WINDOW} GROUP BY ds, shop",
        "c": f"MODEL (name {db}.c, {INCREMENTAL.format('')}); SELECT ds, COUNT(*) AS n FROM {db}.a {WINDOW} GROUP BY ds",
        "d": f"MODEL (name {db}.d, {INCREMENTAL.format('')}); SELECT b.ds, b.shop, b.total, c.n "
             f"FROM {db}.b AS b JOIN {db}.c AS c ON b.ds = c.ds WHERE b.ds BETWEEN @start_ds AND @end_ds",
        "e": f"MODEL (name {db}.e, kind FULL, cron '@daily'); SELECT shop, SUM(total) AS total FROM {db}.d GROUP BY shop",
        "f": f"MODEL (name {db}.f, kind VIEW); SELECT shop, total FROM {db}.e WHERE total > 0",
    }


def _write(root: Path, models: dict[str, str]) -> str:
    (root / "models").mkdir(exist_ok=True)
    for name, text in models.items():
        (root / "models" / f"{name}.sql").write_text(text)
    return str(root)


@pytest.fixture()
def project(spark, isolated, tmp_path):
    """The six models applied through 2024-01-03; returns (db, raw, root)."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    raw = f"{isolated}_raw.events"
    spark.sql(f"""CREATE TABLE {raw} USING parquet AS SELECT * FROM VALUES
        (DATE'2024-01-01', 'x', 1), (DATE'2024-01-01', 'y', 2), (DATE'2024-01-02', 'x', 3),
        (DATE'2024-01-03', 'y', 4), (DATE'2024-01-04', 'x', 5) AS t(ds, shop, amount)""")
    root = _write(tmp_path, _models(isolated, raw))
    _call(spark, "apply", project=root, execution_time=DAY3)
    return isolated, raw, tmp_path


def _change(spark, project, **changes) -> tuple[dict, list]:
    """Rewrite the models with ``changes``, plan and apply; (model -> (change, category), apply results)."""
    db, raw, root = project
    _write(root, _models(db, raw, **changes))
    planned = {r.model.split(".")[1]: (r.change, r.category) for r in _call(spark, "plan", project=str(root), execution_time=DAY3)}
    return planned, _call(spark, "apply", project=str(root), execution_time=DAY3)


def _built(results) -> set[str]:
    return {r.model.split(".")[1] for r in results if r.action == "build"}


def test_adding_a_column_upstream_is_non_breaking_and_rebuilds_only_that_model(spark, project):
    db = project[0]
    kept = {m: physical(spark, f"{db}.{m}") for m in "bcde"}

    planned, results = _change(spark, project, a_select="ds, shop, amount, amount * 2 AS doubled")

    assert planned["a"] == ("changed", "non-breaking")
    assert {m: planned[m] for m in "bcdef"} == {m: ("changed", "indirect non-breaking") for m in "bcdef"}
    assert _built(results) == {"a"}
    assert {m: physical(spark, f"{db}.{m}") for m in "bcde"} == kept
    assert all(r.status == "ok" for r in results)
    assert sorted(spark.table(f"{db}.f").collect()) == [("x", 4), ("y", 6)]


def test_changing_a_filter_is_breaking_and_rebuilds_the_model_and_everything_downstream(spark, project):
    db = project[0]

    planned, results = _change(spark, project, a_where=" AND amount > 1")

    assert planned["a"] == ("changed", "breaking")
    assert {m: planned[m][1] for m in "bcdef"} == {m: "indirect breaking" for m in "bcdef"}
    assert _built(results) == {"a", "b", "c", "d", "e"}
    assert sorted(spark.table(f"{db}.f").collect()) == [("x", 3), ("y", 6)]


def test_editing_a_description_is_metadata_only_and_rebuilds_nothing(spark, project):
    db = project[0]
    before = physical(spark, f"{db}.b")

    planned, results = _change(spark, project, b_description="totals per shop and day")

    assert planned["b"] == ("metadata", None)
    assert {m: planned[m][0] for m in "acdef"} == {m: "unchanged" for m in "acdef"}
    assert results == []
    assert physical(spark, f"{db}.b") == before
    assert spark.sql(f"DESCRIBE TABLE EXTENDED {db}.b").where("col_name = 'Comment'").collect()[0].data_type \
        == "totals per shop and day"


def test_a_forward_only_change_rebuilds_nothing_and_only_new_intervals_use_the_new_logic(spark, project):
    db, raw, root = project
    old_rows = spark.table(f"{db}.a").where("ds < DATE'2024-01-04'")
    old_files = sorted(spark.table(physical(spark, f"{db}.a")).where("ds < DATE'2024-01-04'").inputFiles())

    planned, results = _change(spark, project, a_select="ds, shop, amount * 10 AS amount",
                               a_props=", forward_only true")
    after_apply = _built(results)
    ran = _call(spark, "run", execution_time=DAY4)

    assert planned["a"] == ("changed", "forward-only")
    assert after_apply == set()
    assert {r.model.split(".")[1] for r in ran if r.action == "build"} == {"a", "b", "c", "d", "e"}
    assert_df_equality(spark.table(f"{db}.a").where("ds < DATE'2024-01-04'"), old_rows, ignore_row_order=True)
    assert sorted(spark.table(physical(spark, f"{db}.a")).where("ds < DATE'2024-01-04'").inputFiles()) == old_files
    assert [r.amount for r in spark.table(f"{db}.a").where("ds = DATE'2024-01-04'").collect()] == [50]


def test_a_destructive_forward_only_change_is_refused_by_default_and_applied_when_allowed(spark, project):
    db = project[0]
    table = physical(spark, f"{db}.a")

    with pytest.raises(Exception, match="drops column amount int"):
        _change(spark, project, a_select="ds, shop", a_props=", forward_only true")
    assert spark.table(f"{db}.a").count() == 4

    planned, results = _change(spark, project, a_select="ds, shop",
                               a_props=", forward_only true, on_destructive_change allow")
    ran = _call(spark, "run", execution_time=DAY4)

    assert planned["a"] == ("changed", "forward-only") and _built(results) == set()
    assert [(r.action, r.status) for r in results if r.model == f"{db}.a"] == [("alter", "ok")]
    assert all(r.status == "ok" for r in ran), [(r.model, r.message) for r in ran if r.status != "ok"]
    assert physical(spark, f"{db}.a") == table
    assert sorted(spark.table(f"{db}.a").select("ds", "amount").collect()) == [
        (d, a) for d, a in sorted(spark.table(f"{db}.a").select("ds", "amount").collect())]
    assert [r.amount for r in spark.table(f"{db}.a").where("ds = DATE'2024-01-04'").collect()] == [None]
    assert spark.table(f"{db}.a").where("ds < DATE'2024-01-04' AND amount IS NULL").count() == 0


def test_promoting_dev_to_prod_runs_no_batch_and_prod_reads_devs_tables(spark, project):
    db, raw, root = project
    _write(root, _models(db, raw, a_where=" AND amount > 1"))
    _call(spark, "apply", project=str(root), env="dev", execution_time=DAY3)

    results = _call(spark, "apply", project=str(root), env="prod", execution_time=DAY3)
    history = _call(spark, "history", env="prod", limit=100)
    latest = [r for r in history if r.run_id == history[0].run_id]

    assert {r.action for r in results} == {"promote"}
    assert all(r.start is None and r.rows is None for r in latest)
    for m in "abcdef":
        assert physical(spark, f"{db}.{m}", "prod") == physical(spark, f"{db}.{m}", "dev")


def test_restating_three_days_upstream_reprocesses_exactly_those_days_downstream(spark, project):
    db, raw, _ = project
    spark.sql(f"INSERT OVERWRITE {raw} SELECT ds, shop, amount * 100 AS amount FROM VALUES "
              f"(DATE'2024-01-01', 'x', 1), (DATE'2024-01-01', 'y', 2), (DATE'2024-01-02', 'x', 3), "
              f"(DATE'2024-01-03', 'y', 4), (DATE'2024-01-04', 'x', 5) AS t(ds, shop, amount)")

    results = _call(spark, "restate", model=f"{db}.a", start="2024-01-01", end="2024-01-03", execution_time=DAY3)

    batches = sorted((r.model.split(".")[1], str(r.start.date()), str(r.end.date()), r.intervals)
                     for r in results if r.action == "build" and r.model.split(".")[1] != "e")
    assert batches == [(m, "2024-01-01", "2024-01-04", 3) for m in "abcd"]
    assert _built(results) == {"a", "b", "c", "d", "e"}
    assert sorted(spark.table(f"{db}.f").collect()) == [("x", 400), ("y", 600)]
