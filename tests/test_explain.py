"""incr.explain: a model's tables, rendered SQL, safety verdict and source bounds, one row per item."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import call as _call, physical, state_rows, tables_in

T = "2024-01-04 00:00:00"
RANKED = ("MODEL (name {ranked}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', cron '@daily'); "
          "SELECT ds, shop, ROW_NUMBER() OVER (ORDER BY amount) AS rn\nFROM {daily} WHERE ds BETWEEN @start_ds AND @end_ds")


@pytest.fixture()
def models(spark, isolated):
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"CREATE TABLE {isolated}_raw.events USING parquet AS "
              f"SELECT * FROM VALUES (DATE'2024-01-01', 'a', 1) AS t(ds, shop, amount)")
    daily, ranked = f"{isolated}.daily", f"{isolated}.ranked"
    _call(spark, "create_model", definition=(
        f"MODEL (name {daily}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', cron '@daily'); "
        f"SELECT ds, shop, amount FROM {isolated}_raw.events WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "create_model", definition=RANKED.format(ranked=ranked, daily=daily))
    _call(spark, "apply", execution_time=T, allow_downgrade=True)
    return daily, ranked


def test_explain_shows_tables_sql_a_safe_verdict_and_a_partition_local_bound(spark, isolated, models):
    daily, ranked = models
    _call(spark, "create_model", definition=(
        f"MODEL (name {isolated}.copy, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
        f"cron '@daily'); SELECT ds, shop FROM {daily} WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "apply", execution_time=T)

    rows = {(r.item, r.name): r for r in _call(spark, "explain", model=f"{isolated}.copy", execution_time=T)}

    assert rows[("table", f"{isolated}.copy")].detail == physical(spark, f"{isolated}.copy")
    assert rows[("view", f"{isolated}.copy")].detail == f"`{isolated}`.`copy`"
    assert physical(spark, daily) in rows[("sql", f"{isolated}.copy")].detail
    assert rows[("safety", f"{isolated}.copy")].detail == "safe"
    assert json.loads(rows[("bound", daily)].json) == {"type": "bounded", "partition_col": "ds",
                                                       "before": "PT0S", "after": "PT0S"}
    assert rows[("pushdown", daily)].detail == "ds >= run start - PT0S AND ds < run end + PT0S"
    assert rows[("batch_safety", f"{isolated}.copy")].detail == "fully batch safe"


def test_explain_lists_each_unsafe_construct_with_its_position(spark, isolated, models):
    _, ranked = models

    rows = _call(spark, "explain", model=ranked, execution_time=T)

    findings = [(r.name, json.loads(r.json)["line"], json.loads(r.json)["column"]) for r in rows if r.item == "finding"]
    # positions are in the definition's text: the query follows the MODEL block on its first line
    assert findings == [("window", 1, RANKED.format(ranked=ranked, daily="d").index("ROW_NUMBER") + 1)]
    assert [r.detail for r in rows if r.item == "batch_safety"] == ["per-partition only"]


def test_explain_of_an_applied_model_renders_the_next_batch_else_its_whole_range(spark, isolated, models):
    daily, _ = models

    def interval(execution_time):
        rows = _call(spark, "explain", model=daily, execution_time=execution_time)
        return next(json.loads(r.json)["interval"] for r in rows if r.item == "sql")

    assert interval(T) == "[2024-01-01, 2024-01-04)"  # all built: the whole range
    assert interval("2024-01-06 00:00:00").startswith("[2024-01-04, ")  # two days due: the batch starting at the first


def test_explain_of_a_model_the_environment_lacks_is_refused_saying_to_pass_project_or_definition(spark, isolated,
                                                                                                  models):
    with pytest.raises(Exception, match=r"explain: model 'nope.nothing' is not in environment prod .*pass "
                                        r"project => '<project dir>' or definition => 'MODEL"):
        _call(spark, "explain", model="nope.nothing")


# -- models not applied yet: from a project directory or a definition (incr.render is the same procedure) -------

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"


@pytest.fixture()
def project(isolated, tmp_path):
    """The quickstart project, its schemas renamed after this test."""
    root = tmp_path / "project"
    shutil.copytree(QUICKSTART, root)
    for path in (root / "models").glob("*.sql"):
        text = path.read_text().replace("quickstart_raw.", f"{isolated}_raw.").replace("quickstart.", f"{isolated}.")
        path.write_text(text)
    return root


def test_explain_renders_a_project_model_not_applied_yet_for_the_latest_whole_interval(spark, isolated, project):
    daily = f"{isolated}.daily_revenue"

    rows = {(r.item, r.name): r for r in _call(spark, "explain", model=daily, project=str(project), execution_time=T)}

    table = rows[("table", daily)]
    assert table.detail.startswith(f"`{isolated}_physical`.`")
    assert json.loads(table.json) == {"change": "added"}
    assert rows[("view", daily)].detail == f"`{isolated}`.`daily_revenue`"
    sql = rows[("sql", daily)]
    assert json.loads(sql.json) == {"interval": "[2024-01-03, 2024-01-04)"}
    assert "BETWEEN '2024-01-03' AND '2024-01-03'" in sql.detail and f"{isolated}_raw" in sql.detail
    assert rows[("safety", daily)].detail == "safe"
    assert rows[("batch_safety", daily)].detail == "fully batch safe"


def test_explain_of_a_project_model_reads_its_unapplied_parents_from_the_tables_apply_would_build(spark, isolated,
                                                                                                  project):
    daily, totals = f"{isolated}.daily_revenue", f"{isolated}.customer_totals"

    parent = {(r.item, r.name): r.detail for r in _call(spark, "explain", model=daily, project=str(project))}
    child = {(r.item, r.name): r.detail for r in _call(spark, "explain", model=totals, project=str(project))}

    assert parent[("table", daily)] in child[("sql", totals)]
    assert ("safety", totals) not in child  # a FULL model is rebuilt whole: no incremental verdict


def test_explain_renders_a_definition_alone_from_the_models_start_when_that_is_later(spark, isolated):
    name = f"{isolated}.ranked"
    definition = RANKED.replace("start '2024-01-01'", "start '2024-01-10'").format(ranked=name,
                                                                                  daily=f"{isolated}_raw.daily")

    rows = _call(spark, "explain", definition=definition, execution_time=T)

    by_item = {r.item: r for r in rows}
    assert json.loads(by_item["sql"].json) == {"interval": "[2024-01-10, 2024-01-11)"}
    assert "BETWEEN '2024-01-10' AND '2024-01-10'" in by_item["sql"].detail
    assert by_item["safety"].detail != "safe"
    assert [r.name for r in rows if r.item == "finding"] == ["window"]
    assert json.loads(by_item["table"].json) == {"change": "added"}


def test_a_definition_of_an_applied_model_explains_as_the_applied_model_does(spark, isolated, models):
    _, ranked = models
    same = RANKED.format(ranked=ranked, daily=f"{isolated}.daily")
    args = {"model": ranked, "execution_time": T, "start": "2024-01-02", "end": "2024-01-03"}

    applied = _call(spark, "explain", **args)
    defined = _call(spark, "explain", definition=same, **args)

    assert [r for r in defined if r.item != "table"] == [r for r in applied if r.item != "table"]
    assert [(r.detail, json.loads(r.json)) for r in defined if r.item == "table"] == [
        (physical(spark, ranked), {"change": "unchanged"})]


def test_start_and_end_choose_the_interval_one_side_alone_a_single_interval(spark, isolated, models):
    daily, _ = models

    def interval(**bounds):
        rows = _call(spark, "explain", model=daily, execution_time=T, **bounds)
        return next(json.loads(r.json)["interval"] for r in rows if r.item == "sql")

    assert interval(start="2024-01-01", end="2024-01-02") == "[2024-01-01, 2024-01-03)"  # a bare end: through that day
    assert interval(start="2024-01-02") == "[2024-01-02, 2024-01-03)"
    assert interval(end="2024-01-02 00:00:00") == "[2024-01-01, 2024-01-02)"
    with pytest.raises(Exception, match=r"start '2024-01-02 06:00:00' is not aligned to the day intervals of model"):
        interval(start="2024-01-02 06:00:00")


def test_render_is_explain_under_sqlmeshs_name(spark, isolated, models, project):
    _, ranked = models
    for args in ({"model": ranked}, {"model": f"{isolated}.daily_revenue", "project": str(project)},
                 {"definition": RANKED.format(ranked=f"{isolated}.other", daily=ranked)}):
        assert _call(spark, "render", execution_time=T, **args) == _call(spark, "explain", execution_time=T, **args)
    listed = {row[-1] for row in spark.sql("SHOW PROCEDURES IN incr").collect()}
    described = " ".join(str(v) for row in spark.sql("DESCRIBE PROCEDURE incr.render").collect() for v in row)
    assert {"explain", "render"} <= listed
    assert all(p in described for p in ("model", "project", "definition", "start", "end", "execution_time"))


def test_explaining_models_not_applied_writes_no_state_table_or_view(spark, isolated, models, project):
    _, ranked = models
    schemas = (f"{isolated}_state", f"{isolated}_physical", isolated, f"{isolated}_raw")
    before = (state_rows(spark, isolated), tables_in(spark, *schemas), _databases(spark))

    _call(spark, "explain", model=f"{isolated}.top_customers", project=str(project), execution_time=T)
    _call(spark, "render", definition=RANKED.format(ranked=f"{isolated}.new", daily=ranked), execution_time=T)
    _call(spark, "explain", model=ranked, definition=RANKED.format(ranked=ranked, daily=f"{isolated}_raw.events"))

    assert (state_rows(spark, isolated), tables_in(spark, *schemas), _databases(spark)) == before


def test_explaining_a_definition_in_a_fresh_session_creates_no_state_schema(spark, isolated):
    _call(spark, "explain", definition=RANKED.format(ranked=f"{isolated}.ranked", daily=f"{isolated}_raw.daily"))

    assert not spark.catalog.databaseExists(f"{isolated}_state")


def test_a_project_without_the_model_is_refused_listing_what_it_defines(spark, isolated, project):
    with pytest.raises(Exception, match=rf"render: model 'shop.nope' is defined neither in project .* nor registered "
                                        rf"\(known: {isolated}.customer_totals, {isolated}.daily_revenue"):
        _call(spark, "render", model="shop.nope", project=str(project))


def test_a_bad_definition_or_project_file_gets_the_loaders_error_naming_where(spark, isolated, project):
    (project / "models" / "broken.sql").write_text("MODEL (\n  name shop.broken,\n  kind NOPE\n);\nSELECT 1 AS x\n")

    with pytest.raises(Exception, match=r"broken\.sql.*unknown model kind 'NOPE'"):
        _call(spark, "explain", model=f"{isolated}.daily_revenue", project=str(project))
    with pytest.raises(Exception, match=r"model definition.*MODEL needs a name"):
        _call(spark, "explain", definition="MODEL (kind FULL); SELECT 1 AS x")


def _databases(spark) -> set[str]:
    return {d.name for d in spark.catalog.listDatabases()}
