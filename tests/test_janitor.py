"""incr.janitor: physical tables and views no environment references are listed, then dropped; nothing else is."""

from __future__ import annotations

import os
from urllib.parse import urlparse

import pytest
from sqlglot import exp

from pyspark_incr.writers import generations, tables

from conftest import call as _call, hold_claim, physical

T = "2024-01-04 00:00:00"


def _events(name: str, raw: str, extra: str = "") -> str:
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
            f"cron '@daily'); SELECT ds, amount{extra} FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds")


@pytest.fixture()
def project(spark, isolated):
    """A raw table and one incremental model over it, applied to prod; returns (raw, model)."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"""CREATE TABLE {isolated}_raw.sales USING parquet AS SELECT * FROM VALUES
        (DATE'2024-01-01', 10), (DATE'2024-01-02', 20), (DATE'2024-01-03', 30) AS t(ds, amount)""")
    events = f"{isolated}.events"
    _call(spark, "create_model", definition=_events(events, f"{isolated}_raw.sales"))
    _call(spark, "apply", execution_time=T)
    return f"{isolated}_raw.sales", events


def _change(spark, raw: str, events: str, env: str = "prod") -> None:
    """A breaking change of the model, applied: a new version in a new table."""
    _call(spark, "create_model", definition=_events(events, raw, ", amount * 2 AS doubled"))
    _call(spark, "apply", env=env, execution_time=T)


def _now(spark):
    return spark.sql("SELECT current_timestamp() AS now").collect()[0].now


def _listed(rows) -> list[tuple]:
    return [(r.table, r.model, r.action) for r in rows]


def _exists(spark, quoted: str) -> bool:
    table = exp.to_table(quoted, dialect="spark")
    return spark.catalog.tableExists(f"{table.db}.{table.name}")


def _root_dir(spark, quoted: str) -> str:
    return urlparse(generations.table_root(tables.location(spark, exp.to_table(quoted, dialect="spark")))).path


def _built(spark, quoted: str):
    from pyspark_incr.state.store import StateStore

    return StateStore(spark).coverage().get(quoted)


def test_a_dry_run_lists_the_superseded_version_and_drops_nothing(spark, isolated, project):
    raw, events = project
    old = physical(spark, events)
    before = _now(spark)
    _change(spark, raw, events)
    after = _now(spark)
    new = physical(spark, events)

    listed = _call(spark, "janitor", older_than="0 days")

    assert new != old
    assert _listed(listed) == [(old, events, "would drop")]
    assert before <= listed[0].unreferenced_since <= after
    assert _exists(spark, old) and _exists(spark, new)
    assert _built(spark, old)
    assert spark.table(events).count() == 3


def test_a_version_unreferenced_for_less_than_older_than_is_not_listed(spark, isolated, project):
    raw, events = project
    old = physical(spark, events)
    _change(spark, raw, events)

    assert _call(spark, "janitor", older_than="7 days") == []
    assert _call(spark, "janitor") == []
    assert _call(spark, "janitor", older_than="PT12H", dry_run=False) == []
    assert _exists(spark, old)


def test_dropping_removes_the_old_table_its_directory_and_its_intervals_and_keeps_everything_else(
        spark, isolated, project):
    raw, events = project
    old = physical(spark, events)
    _change(spark, raw, events)
    new = physical(spark, events)
    old_dir = _root_dir(spark, old)
    mine = f"{isolated}_physical.mine"
    lookalike = f"{isolated}_physical.{isolated}__events__0123456789"
    spark.sql(f"CREATE TABLE {mine} USING parquet AS SELECT 1 AS x")
    spark.sql(f"CREATE TABLE {lookalike} USING parquet AS SELECT 2 AS x")
    assert os.path.isdir(old_dir)

    dropped = _call(spark, "janitor", older_than="0 days", dry_run=False)

    assert _listed(dropped) == [(old, events, "dropped")]
    assert not _exists(spark, old) and not os.path.exists(old_dir)
    assert not _built(spark, old)
    assert _exists(spark, new) and _built(spark, new)
    assert spark.table(events).columns == ["amount", "doubled", "ds"] and spark.table(events).count() == 3
    assert spark.table(mine).collect()[0].x == 1 and spark.table(lookalike).collect()[0].x == 2
    assert _call(spark, "janitor", older_than="0 days", dry_run=False) == []


def test_a_table_whose_location_moved_to_a_generation_leaves_no_directory_behind(spark, isolated, project):
    _, events = project
    total = f"{isolated}.total"
    full = f"MODEL (name {total}, kind FULL, cron '@daily'); SELECT COUNT(*){{}} AS n FROM {events}"
    _call(spark, "create_model", definition=full.format(""))
    _call(spark, "apply", execution_time=T)
    _call(spark, "run", execution_time="2024-01-05 01:00:00")  # a FULL rebuild publishes a generation
    old = physical(spark, total)
    old_dir = _root_dir(spark, old)
    assert "/_incr_gen_" in tables.location(spark, exp.to_table(old, dialect="spark"))
    _call(spark, "create_model", definition=full.format(" + 1"))
    _call(spark, "apply", execution_time=T)

    dropped = _call(spark, "janitor", older_than="0 days", dry_run=False)

    assert _listed(dropped) == [(old, total, "dropped")]
    assert not _exists(spark, old) and not os.path.exists(old_dir)
    assert spark.table(total).collect()[0].n == 4


def test_a_version_another_environment_shows_is_kept_until_that_environment_is_dropped(spark, isolated, project):
    raw, events = project
    _call(spark, "apply", env="dev", execution_time=T)
    shared = physical(spark, events, "dev")
    _change(spark, raw, events)
    assert physical(spark, events) != shared

    kept = _call(spark, "janitor", older_than="0 days", dry_run=False)
    _call(spark, "drop_environment", env="dev")
    dropped = _call(spark, "janitor", older_than="0 days", dry_run=False)

    assert kept == []
    assert _listed(dropped) == [(shared, events, "dropped")]
    assert not _exists(spark, shared)
    assert spark.table(events).count() == 3


def test_a_forward_only_preview_table_goes_with_its_environment_and_the_kept_table_stays(spark, isolated, project):
    raw, events = project
    kept = physical(spark, events)
    _call(spark, "create_model", definition=(
        f"MODEL (name {events}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, forward_only true), "
        f"start '2024-01-01', cron '@daily'); SELECT ds, amount, 1 AS one FROM {raw} "
        "WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "apply", env="dev", execution_time=T)
    preview = physical(spark, events, "dev")
    assert preview.endswith("__dev`")

    while_shown = _call(spark, "janitor", older_than="0 days")
    _call(spark, "drop_environment", env="dev")
    dropped = _call(spark, "janitor", older_than="0 days", dry_run=False)

    assert while_shown == []
    assert _listed(dropped) == [(preview, events, "dropped")]
    assert not _exists(spark, preview)
    assert physical(spark, events) == kept and spark.table(events).count() == 3


def test_a_removed_view_models_physical_view_is_dropped_as_a_view(spark, isolated, project):
    _, events = project
    view = f"{isolated}.recent"
    _call(spark, "create_model", definition=f"MODEL (name {view}, kind VIEW); SELECT ds FROM {events}")
    _call(spark, "apply", execution_time=T)
    physical_view = physical(spark, view)
    _call(spark, "drop_model", name=view)
    _call(spark, "apply", execution_time=T)

    listed = _call(spark, "janitor", older_than="0 days")
    dropped = _call(spark, "janitor", older_than="0 days", dry_run=False)

    assert _listed(listed) == [(physical_view, view, "would drop")]
    assert _listed(dropped) == [(physical_view, view, "dropped")]
    assert not _exists(spark, physical_view)
    assert _exists(spark, physical(spark, events)) and spark.table(events).count() == 3


@pytest.mark.parametrize("older_than", ["soon", "7", "-1 days", "7 weeks", "P", "PT"])
def test_a_bad_older_than_is_refused(spark, isolated, project, older_than):
    raw, events = project
    old = physical(spark, events)
    _change(spark, raw, events)

    with pytest.raises(Exception, match="older_than .* is not a duration; give .*'7 days'.*'PT12H'"):
        _call(spark, "janitor", older_than=older_than, dry_run=False)

    assert _exists(spark, old)


def test_the_janitor_never_drops_a_table_a_running_call_holds(spark, isolated, project):
    from pyspark_incr.run.locks import table_key

    raw, events = project
    old = physical(spark, events)
    _change(spark, raw, events)
    hold_claim(spark, table_key(old), "busy-apply@host:7", lease_s=600, procedure="apply")
    with pytest.raises(Exception) as held:
        _call(spark, "janitor", older_than="0 days", dry_run=False, wait="1 second")

    assert "is claimed by busy-apply@host:7 (incr.apply" in str(held.value)
    assert _exists(spark, old) and _built(spark, old)
    assert _listed(_call(spark, "janitor", older_than="0 days")) == [(old, events, "would drop")]
