"""Virtual environments: versions live in physical tables, environments are views, promotion is a view swap."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from conftest import call as _call, physical

T = "2024-01-04 00:00:00"


def _events(name: str, raw: str, extra: str = "") -> str:
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
            f"cron '@daily'); SELECT ds, amount{extra} FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds")


def _totals(name: str, events: str) -> str:
    return f"MODEL (name {name}, kind FULL, cron '@daily'); SELECT SUM(amount) AS total FROM {events}"


@pytest.fixture()
def project(spark, isolated):
    """A raw table, an incremental model over it and a FULL total over that; returns their names."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"""CREATE TABLE {isolated}_raw.sales USING parquet AS SELECT * FROM VALUES
        (DATE'2024-01-01', 10), (DATE'2024-01-02', 20), (DATE'2024-01-03', 30) AS t(ds, amount)""")
    events, totals = f"{isolated}.events", f"{isolated}.totals"
    _call(spark, "create_model", definition=_events(events, f"{isolated}_raw.sales"))
    _call(spark, "create_model", definition=_totals(totals, events))
    return f"{isolated}_raw.sales", events, totals


def _dev(name: str) -> str:
    schema, table = name.split(".")
    return f"{schema}__dev.{table}"


def _is_view(spark, name: str) -> bool:
    schema, table = name.split(".")
    return spark._jsparkSession.catalog().getTable(schema, table).tableType().upper() == "VIEW"


def test_an_environment_shows_each_model_as_a_view_over_its_versions_physical_table(spark, isolated, project):
    _, events, totals = project

    _call(spark, "apply", execution_time=T)

    assert _is_view(spark, events) and _is_view(spark, totals)
    assert physical(spark, events).startswith(f"`{isolated}_physical`.`{isolated}__events__")
    assert_df_equality(spark.table(events), spark.table(physical(spark, events)), ignore_row_order=True)
    assert spark.table(totals).collect()[0].total == 60


def test_promoting_dev_to_prod_recomputes_nothing_and_shares_the_physical_tables(spark, isolated, project):
    _, events, totals = project
    built = _call(spark, "apply", env="dev", execution_time=T)
    assert {r.action for r in built} == {"build"}

    promoted = _call(spark, "apply", env="prod", execution_time=T)

    assert [(r.model, r.action, r.status) for r in promoted] == [(events, "promote", "ok"), (totals, "promote", "ok")]
    for name in (events, totals):
        assert physical(spark, name, "prod") == physical(spark, name, "dev")
        assert_df_equality(spark.table(name), spark.table(_dev(name)), ignore_row_order=True)


def test_a_change_applied_in_dev_leaves_prod_as_it_was_until_prod_applies_it(spark, isolated, project):
    raw, events, totals = project
    _call(spark, "apply", execution_time=T)
    before = spark.table(events).collect()

    _call(spark, "create_model", definition=_events(events, raw, ", amount * 2 AS doubled"))
    planned = _call(spark, "plan", env="dev", execution_time=T)
    _call(spark, "apply", env="dev", execution_time=T)

    assert {r.model: r.table for r in planned} == {events: f"`{isolated}__dev`.`events`", totals: f"`{isolated}__dev`.`totals`"}
    assert sorted(spark.table(events).collect()) == sorted(before)
    assert spark.table(_dev(events)).columns == ["amount", "doubled", "ds"]
    assert physical(spark, events, "dev") != physical(spark, events, "prod")

    promoted = _call(spark, "apply", execution_time=T)

    assert {r.action for r in promoted} == {"promote"}
    assert spark.table(events).columns == ["amount", "doubled", "ds"]


def test_reverting_a_change_reuses_the_earlier_versions_table(spark, isolated, project):
    raw, events, _ = project
    _call(spark, "apply", execution_time=T)
    first = physical(spark, events)
    _call(spark, "create_model", definition=_events(events, raw, ", 1 AS one"))
    _call(spark, "apply", execution_time=T)

    _call(spark, "create_model", definition=_events(events, raw))
    reverted = _call(spark, "apply", execution_time=T)

    assert physical(spark, events) == first
    assert {(r.model, r.action) for r in reverted} == {(events, "promote"), (f"{isolated}.totals", "promote")}


def test_environments_lists_them_and_drop_environment_removes_views_but_keeps_shared_tables(spark, isolated, project):
    _, events, totals = project
    _call(spark, "apply", execution_time=T)
    _call(spark, "apply", env="dev", execution_time=T)
    shared = physical(spark, events)

    listed = {r.env: (r.models, r.schemas) for r in _call(spark, "environments")}
    dropped = _call(spark, "drop_environment", env="dev")

    assert listed == {"dev": (2, f"{isolated}__dev"), "prod": (2, isolated)}
    assert sorted((r.model, r.status) for r in dropped) == [(events, "dropped"), (totals, "dropped")]
    assert not spark.catalog.databaseExists(f"{isolated}__dev")
    assert [r.env for r in _call(spark, "environments")] == ["prod"]
    assert spark.table(shared).count() == 3 and spark.table(events).count() == 3


@pytest.mark.parametrize("env, message", [
    ("prod", "env 'prod' cannot be dropped"),
    ("nowhere", "environment 'nowhere' holds no models"),
    ("x; DROP", "not a valid environment name"),
])
def test_drop_environment_refuses_prod_unknown_and_malformed_names(spark, isolated, project, env, message):
    _call(spark, "apply", execution_time=T)

    with pytest.raises(Exception, match=message):
        _call(spark, "drop_environment", env=env)

    assert spark.table(project[1]).count() == 3


def test_a_table_standing_where_a_view_goes_is_refused_before_anything_is_built(spark, isolated, project):
    _, events, totals = project
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}")
    spark.sql(f"CREATE TABLE {totals} USING parquet AS SELECT 1 AS mine")

    with pytest.raises(Exception, match=f"{isolated}`.`totals` is a table pyspark-incr did not create"):
        _call(spark, "apply", execution_time=T)

    assert spark.table(totals).columns == ["mine"]
    assert not spark.catalog.tableExists(events)


def _child(name: str, events: str) -> str:
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
            f"cron '@daily'); SELECT ds, amount + 1 AS next FROM {events} WHERE ds BETWEEN @start_ds AND @end_ds")


@pytest.fixture()
def chain(spark, isolated, project):
    """``project`` plus an incremental child of events, all applied to prod."""
    raw, events, totals = project
    child = f"{isolated}.child"
    _call(spark, "create_model", definition=_child(child, events))
    _call(spark, "apply", execution_time=T)
    return raw, events, child


def test_a_non_breaking_change_rebuilds_the_model_while_its_children_keep_their_tables(spark, isolated, chain):
    raw, events, child = chain
    kept = physical(spark, child)

    _call(spark, "create_model", definition=_events(events, raw, ", amount * 2 AS doubled"))
    planned = {r.model: (r.change, r.category) for r in _call(spark, "plan", execution_time=T)}
    applied = _call(spark, "apply", execution_time=T)

    assert planned[events] == ("changed", "non-breaking")
    assert planned[child] == ("changed", "indirect non-breaking")
    assert planned[f"{isolated}.totals"] == ("changed", "indirect non-breaking")
    assert physical(spark, child) == kept
    assert {r.model for r in applied if r.action == "build"} == {events}
    assert spark.table(child).count() == 3


def test_a_breaking_change_rebuilds_the_model_and_its_children(spark, isolated, chain):
    raw, events, child = chain
    old = physical(spark, child)

    _call(spark, "create_model", definition=_events(events, f"(SELECT * FROM {raw} WHERE amount > 10) AS r"))
    planned = {r.model: r.category for r in _call(spark, "plan", execution_time=T)}
    applied = _call(spark, "apply", execution_time=T)

    assert planned[events] == "breaking" and planned[child] == "indirect breaking"
    assert physical(spark, child) != old
    assert {r.model for r in applied if r.action == "build"} == {events, child, f"{isolated}.totals"}
    assert sorted(r.next for r in spark.table(child).collect()) == [21, 31]


def test_categorize_overrides_the_automatic_category_of_a_directly_changed_model(spark, isolated, chain):
    raw, events, child = chain
    _call(spark, "create_model", definition=_events(events, raw, ", 0 AS zero"))

    planned = {r.model: r.category for r in _call(spark, "plan", execution_time=T, categorize=f"{events}:breaking")}

    assert planned[events] == "breaking" and planned[child] == "indirect breaking"


def test_a_new_dev_environment_starts_from_prod_and_builds_only_what_the_change_needs(spark, isolated, chain):
    raw, events, child = chain
    _call(spark, "create_model", definition=_events(events, raw, ", amount * 2 AS doubled"))

    applied = _call(spark, "apply", env="dev", execution_time=T)

    assert {r.model for r in applied if r.action == "build"} == {events}
    assert physical(spark, child, "dev") == physical(spark, child, "prod")
    assert spark.table(_dev(events)).columns == ["amount", "doubled", "ds"]
    assert spark.table(events).columns == ["amount", "ds"]
    assert_df_equality(spark.table(_dev(child)), spark.table(child), ignore_row_order=True)


@pytest.mark.parametrize("value, message", [
    ("nobody.model:breaking", "categorize item 'nobody.model:breaking'"),
    ("{events}:sideways", "categorize item"),
])
def test_a_bad_categorize_argument_is_refused_naming_the_item(spark, isolated, chain, value, message):
    with pytest.raises(Exception, match=message):
        _call(spark, "plan", execution_time=T, categorize=value.format(events=chain[1]))


def test_an_apply_planned_before_another_apply_changed_the_environment_promotes_nothing(spark, isolated, project,
                                                                                        monkeypatch):
    raw, events, totals = project
    _call(spark, "apply", execution_time=T)
    _call(spark, "create_model", definition=_events(events, raw, ", 1 AS one"))

    from pyspark_incr.run import executor, guard

    def concurrent_apply_lands_first(self, built, _promote=executor.Executor._promote):
        monkeypatch.undo()  # the other apply runs the real code ...
        # ... in another Spark application, which (unlike this process's other sessions) does not wait
        # for this process's locks: the previous-plan check is what stops the first apply then
        monkeypatch.setattr(guard, "written", lambda plan: set())
        _call(spark, "apply", env="prod", execution_time=T)
        monkeypatch.undo()
        return _promote(self, built)

    monkeypatch.setattr(executor.Executor, "_promote", concurrent_apply_lands_first)
    seen = physical(spark, events)
    results = _call(spark, "apply", execution_time=T)

    failed = [(r.model, r.action, r.status) for r in results if r.status == "failed"]
    assert failed == [(events, "promote", "failed"), (totals, "promote", "failed")]
    assert "changed since this apply was planned" in [r.message for r in results if r.status == "failed"][0]
    assert physical(spark, events) != seen  # the other apply's promotion stands
    assert spark.table(events).columns == ["amount", "one", "ds"]


def test_a_dev_plan_limited_by_start_and_end_builds_a_table_prod_never_reuses(spark, isolated, project):
    raw, events, totals = project
    _call(spark, "create_model", definition=_events(events, raw, ", 2 AS two"))

    _call(spark, "apply", env="dev", start="2024-01-03", end="2024-01-03", execution_time=T)
    partial = physical(spark, events, "dev")
    promoted = _call(spark, "apply", execution_time=T)

    assert partial.endswith("__dev`") and spark.table(partial).count() == 1
    assert physical(spark, events) != partial
    assert {(r.model, r.action) for r in promoted if r.model == events} == {(events, "build")}
    assert spark.table(events).count() == 3
