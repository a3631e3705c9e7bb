"""incr.plan / incr.apply: change categories, environments, removal, projects."""

from __future__ import annotations

import pytest

from conftest import call as _call, physical

T = "2024-01-04 00:00:00"


def _full(name: str, query: str, **extra: str) -> str:
    props = "".join(f", {k} {v}" for k, v in extra.items())
    return f"MODEL (name {name}, kind FULL, start '2024-01-01'{props}); {query}"


@pytest.fixture()
def parent(spark, isolated):
    name = f"{isolated}.parent"
    _call(spark, "create_model", definition=_full(name, "SELECT CAST(id AS INT) AS id FROM range(5)"))
    return name


def test_plan_changes_nothing(spark, isolated, parent):
    rows = _call(spark, "plan", execution_time=T)

    assert [(r.model, r.change, r.intervals, r.batches) for r in rows] == [(parent, "added", 3, 1)]
    assert not spark.catalog.tableExists(parent)


def test_metadata_change_keeps_the_table_and_its_intervals(spark, isolated, parent):
    _call(spark, "apply", execution_time=T)
    _call(spark, "create_model", definition=_full(parent, "SELECT CAST(id AS INT) AS id FROM range(5)", description="'now described'"))

    planned = _call(spark, "plan", execution_time=T)
    applied = _call(spark, "apply", execution_time=T)

    assert [(r.change, r.intervals) for r in planned] == [("metadata", 0)]
    assert applied == []


def test_changed_query_rebuilds_the_table(spark, isolated, parent):
    _call(spark, "apply", execution_time=T)
    _call(spark, "create_model", definition=_full(parent, "SELECT CAST(id AS INT) AS id, 'x' AS tag FROM range(2)"))

    planned = _call(spark, "plan", execution_time=T)
    applied = _call(spark, "apply", execution_time=T)

    assert [r.change for r in planned] == ["changed"]
    assert [(r.action, r.status) for r in applied] == [("build", "ok")]
    assert sorted(spark.table(parent).columns) == ["id", "tag"]
    assert spark.table(parent).count() == 2


def test_dev_environment_reads_its_own_parent_tables(spark, isolated, parent):
    child = f"{isolated}.child"
    _call(spark, "create_model", definition=_full(child, f"SELECT COUNT(*) AS n FROM {parent}"))

    rows = _call(spark, "apply", env="dev", execution_time=T)

    assert {r.model for r in rows} == {parent, child}
    assert spark.table(f"{isolated}__dev.child").collect()[0].n == 5
    assert not spark.catalog.tableExists(parent), "prod must be untouched by a dev apply"
    assert _call(spark, "status", env="prod") == []


def test_dropped_model_is_removed_from_the_environment_by_the_next_apply(spark, isolated, parent):
    _call(spark, "apply", execution_time=T)
    _call(spark, "drop_model", name=parent)

    planned = _call(spark, "plan", execution_time=T)
    applied = _call(spark, "apply", execution_time=T)

    assert [(r.model, r.change) for r in planned] == [(parent, "removed")]
    assert [(r.model, r.action) for r in applied] == [(parent, "drop")]
    assert not spark.catalog.tableExists(parent)


def test_failed_parent_skips_its_children_and_reports_sparks_error(spark, isolated, parent):
    child = f"{isolated}.child"
    _call(spark, "create_model", definition=_full(child, f"SELECT 10 / (id - id) AS boom FROM {parent}"))
    spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        rows = _call(spark, "apply", execution_time=T)
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")

    by_model = {r.model: r for r in rows}
    assert by_model[parent].status == "ok"
    assert by_model[child].status == "failed" and "DIVIDE_BY_ZERO" in by_model[child].message
    assert [(r.state) for r in _call(spark, "status", model=child, execution_time=T)] == ["missing"]


def test_project_models_are_applied_and_removed_with_their_file(spark, isolated, tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "a.sql").write_text(_full(f"{isolated}.a", "SELECT 1 AS x"))
    (models / "b.sql").write_text(_full(f"{isolated}.b", f"SELECT x + 1 AS y FROM {isolated}.a"))
    first = _call(spark, "apply", project=str(tmp_path), execution_time=T)
    (models / "b.sql").unlink()

    second = _call(spark, "apply", project=str(tmp_path), execution_time=T)

    assert [r.model for r in first] == [f"{isolated}.a", f"{isolated}.b"]
    assert [(r.model, r.action) for r in second] == [(f"{isolated}.b", "drop")]
    assert spark.table(f"{isolated}.a").collect()[0].x == 1


def test_select_limits_apply_to_the_matching_models(spark, isolated, parent):
    other = f"{isolated}.other"
    _call(spark, "create_model", definition=_full(other, "SELECT 1 AS x"))

    rows = _call(spark, "apply", select=f"{isolated}.oth*", execution_time=T)

    assert [r.model for r in rows] == [other]
    assert not spark.catalog.tableExists(parent)


def test_run_rebuilds_a_table_dropped_behind_its_back(spark, isolated):
    name = f"{isolated}.days"
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01'); "
        "SELECT DATE_ADD(DATE'2024-01-01', CAST(id AS INT)) AS ds, id FROM range(10) "
        "WHERE DATE_ADD(DATE'2024-01-01', CAST(id AS INT)) BETWEEN @start_ds AND @end_ds"
    ))
    _call(spark, "apply", execution_time=T)
    table = physical(spark, name)
    spark.sql(f"DROP TABLE {table}")

    planned = _call(spark, "plan", execution_time=T)
    rebuilt = _call(spark, "run", execution_time=T)

    assert [(r.reason, r.intervals) for r in planned] == [(f"Table {table} is missing: rebuild.", 3)]
    assert [(r.intervals, r.status) for r in rebuilt] == [(3, "ok")]
    assert spark.table(name).count() == 3


def test_plan_counts_the_full_rebuild_that_covers_a_new_interval(spark, isolated, parent):
    _call(spark, "apply", execution_time=T)

    rows = _call(spark, "plan", execution_time="2024-01-05 00:00:00")

    assert [(r.change, r.intervals, r.batches) for r in rows] == [("unchanged", 1, 1)]
