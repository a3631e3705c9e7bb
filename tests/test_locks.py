"""Locks: two calls writing the same model never both apply its work; a dead run's lock expires."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import pytest
from chispa import assert_df_equality

from conftest import call as _call, hold_claim, physical, state_rows
from pyspark_incr.run.locks import in_flight
from pyspark_incr.state import claims
from pyspark_incr.state import tables as t
from pyspark_incr.state.store import table_location

EQUAL = dict(ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
#: Each source row sleeps this long when read, so a build holds its lock for a while.
SLOW = "java_method('java.lang.Thread', 'sleep', CAST(150 AS BIGINT)) IS NOT NULL"
KINDS = {
    "unique_key": ("INCREMENTAL_BY_UNIQUE_KEY (unique_key id)",
                   "SELECT id, name, ds FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds AND " + SLOW
                   + " QUALIFY ROW_NUMBER() OVER (PARTITION BY id ORDER BY ds DESC) = 1"),
    "scd2": ("SCD_TYPE_2_BY_COLUMN (unique_key id, columns (name))",
             "SELECT id, name FROM {raw} WHERE " + SLOW + " QUALIFY ROW_NUMBER() OVER (PARTITION BY id ORDER BY ds DESC) = 1"),
}


@contextmanager
def _conf(spark, **values: str):
    keys = {f"spark.incr.{k}": v for k, v in values.items()}
    old = {k: spark.conf.get(k, None) for k in keys}
    for k, v in keys.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)


def _raw(spark, prefix: str, days: int) -> str:
    table = f"{prefix}_raw.items"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    rows = [(key, f"n{day}{key}", f"2024-01-{day:02d}") for day in range(1, days + 1) for key in range(3)]
    spark.createDataFrame(rows, "id INT, name STRING, day STRING") \
        .selectExpr("id", "name", "CAST(day AS DATE) AS ds").write.format("parquet").saveAsTable(table)
    return table


def _define(spark, name: str, kind: str, raw: str) -> None:
    kind_sql, query = KINDS[kind]
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind {kind_sql}, start '2024-01-01', cron '@daily'); " + query.format(raw=raw)))


@pytest.fixture()
def items(spark, isolated) -> str:
    """A unique-key model over three days, applied through the first: the next run has two days to build."""
    name = f"{isolated}.items"
    _define(spark, name, "unique_key", _raw(spark, isolated, days=3))
    _call(spark, "apply", execution_time="2024-01-02 00:00:00")
    return name


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_two_simultaneous_runs_build_each_batch_once(spark, isolated, kind):
    raw = _raw(spark, isolated, days=4)
    name, reference = f"{isolated}.contended", f"{isolated}.reference"
    _define(spark, name, kind, raw)
    _define(spark, reference, kind, raw)
    _call(spark, "apply", execution_time="2024-01-02 00:00:00")
    results: dict[int, list] = {}

    def run(i: int) -> None:
        results[i] = _call(spark, "run", execution_time="2024-01-05 00:00:00", select=name)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    built = [[r for r in rows if r.model == name and r.status == "ok"] for rows in results.values()]
    assert sorted(len(rows) > 0 for rows in built) == [False, True], "exactly one run built, the other found it done"
    loser = next(rows for rows in results.values() if not any(r.status == "ok" for r in rows))
    assert loser and all(r.status == "skipped" and "Built meanwhile by" in r.message for r in loser), loser
    _call(spark, "run", execution_time="2024-01-05 00:00:00", select=reference)
    assert_df_equality(spark.table(name), spark.table(reference), **EQUAL)
    assert in_flight(spark, f"{isolated}_state") == [], "both runs released their claims"


def test_a_claim_left_by_a_killed_run_is_taken_over_after_its_lease_and_reported_abandoned(spark, items):
    name = items
    day = (name, 1704153600000, 1704240000000)  # [2024-01-02, 2024-01-03)
    hold_claim(spark, f"table {physical(spark, name)}", "dead-run@gone:1", lease_s=3, work=(day,))
    started = time.monotonic()

    with _conf(spark, lockTimeout="30"):
        rows = _call(spark, "run", execution_time="2024-01-04 00:00:00")

    assert time.monotonic() - started >= 2.5, "the run waited for the dead run's lease to end"
    assert [r.status for r in rows if r.model == name] == ["ok"], rows
    abandoned = [r for r in _call(spark, "history") if r.status == "abandoned"]
    assert [(r.run_id, r.model, str(r.start.date())) for r in abandoned] == [("dead-run", name, "2024-01-02")]
    assert "application app-gone" in abandoned[0].message and "stopped renewing its claim" in abandoned[0].message


def test_what_a_killed_run_staged_and_never_published_is_deleted_by_the_run_taking_its_claim_over(spark, items):
    from pyspark_incr.writers import generations, tables

    name = items
    table = physical(spark, name)
    root = generations.table_root(tables.location(spark, _as_table(table)))
    dead = f"{root}/{generations.GEN_PREFIX}deadbeef"
    spark.range(3).write.parquet(dead)  # a generation staged by a writer killed before it published
    hold_claim(spark, f"table {table}", "dead-run@gone:1", lease_s=2,
               work=((name, 1704153600000, 1704240000000),))
    before = spark.table(name).count()

    with _conf(spark, lockTimeout="30"):
        rows = _call(spark, "run", execution_time="2024-01-04 00:00:00")

    assert [r.status for r in rows if r.model == name] == ["ok"], rows
    assert not _exists(spark, dead), "the dead writer's generation was deleted"
    live = tables.location(spark, _as_table(table))
    assert _exists(spark, live) and spark.table(name).count() >= before, "what readers read was kept"


@pytest.mark.parametrize("refused", ["publish", "insert into"])
def test_a_batch_whose_claim_is_lost_mid_write_makes_none_of_its_rows_public(spark, isolated, items, monkeypatch,
                                                                               refused):
    """The claim is checked again as the rows go public (a generation published, an INSERT started)."""
    from pyspark_incr.run.locks import Locks
    from pyspark_incr.writers import generations, tables

    name = items
    if refused == "insert into":  # an append kind: its rows go public by INSERT
        name = f"{isolated}.appended"
        _call(spark, "create_model", definition=(
            f"MODEL (name {name}, kind INCREMENTAL_UNMANAGED, start '2024-01-01', cron '@daily'); "
            f"SELECT id, name, ds FROM {isolated}_raw.items WHERE ds BETWEEN @start_ds AND @end_ds"))
        _call(spark, "apply", execution_time="2024-01-02 00:00:00")
    table = physical(spark, name)
    root = generations.table_root(tables.location(spark, _as_table(table)))
    before_rows, before_files = spark.table(name).collect(), _listing(spark, root)
    commit = Locks.commit

    def taken_over_meanwhile(self, key, what=""):
        if what.startswith(refused):
            self._lost[key] = f"{key} was taken over by another application (this call's lease ran out)"
        commit(self, key, what)

    monkeypatch.setattr(Locks, "commit", taken_over_meanwhile)
    rows = _call(spark, "run", execution_time="2024-01-04 00:00:00", select=name)

    assert [r.status for r in rows] == ["failed"] and "taken over" in rows[0].message, rows
    assert sorted(spark.table(name).collect()) == sorted(before_rows), "none of the batch's rows went public"
    assert _listing(spark, root) == before_files, "nothing staged was left behind"


def test_an_insert_whose_claim_is_taken_over_while_its_job_runs_commits_none_of_its_rows(spark, isolated):
    """The window a check before the INSERT leaves (its whole Spark job) is closed by the job commit's own check."""
    import json
    import os
    from urllib.parse import urlparse

    from pyspark_incr.state.store import StateStore

    raw = _raw(spark, isolated, days=2)
    name = f"{isolated}.slow_appends"
    crawl = "java_method('java.lang.Thread', 'sleep', CAST(1000 AS BIGINT)) IS NOT NULL"
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_UNMANAGED, start '2024-01-01', cron '@daily'); "
        f"SELECT id, name, ds FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds AND {crawl}"))
    _call(spark, "apply", execution_time="2024-01-02 00:00:00")
    before = spark.table(name).collect()
    locks = table_location(spark, StateStore(spark).schema, t.LOCKS.name).toString()
    key_dir = urlparse(claims.key_dir(claims.root(locks), f"table {physical(spark, name)}")).path
    earlier = set(os.listdir(key_dir))  # the apply's generations
    answer = {}
    run = threading.Thread(target=lambda: answer.update(
        rows=_call(spark, "run", execution_time="2024-01-03 00:00:00", select=name)))
    run.start()

    deadline, gen = time.monotonic() + 60, None
    while gen is None and time.monotonic() < deadline:  # the INSERT's job has started: its check is written
        for g in sorted(set(os.listdir(key_dir)) - earlier):
            for m in sorted(f for f in os.listdir(os.path.join(key_dir, g)) if f.startswith("m")):
                text = open(os.path.join(key_dir, g, m)).read()
                if text and json.loads(text).get("detail", "").startswith("insert into"):
                    gen = os.path.join(key_dir, g)
        time.sleep(0.01)
    assert gen is not None, "the run reached its INSERT"
    last = max(int(m[1:]) for m in os.listdir(gen) if m.startswith("m"))
    with open(os.path.join(gen, f"m{last + 1:08d}"), "x") as fence:  # another application takes it over
        fence.write(json.dumps({"op": "fence", "by": "taker@elsewhere:1", "at_ms": 0, "detail": ""}))
    run.join()

    rows = answer["rows"]
    assert [r.status for r in rows] == ["failed"] and "taken over" in rows[0].message, rows
    assert sorted(spark.table(name).collect()) == sorted(before), "none of the INSERT's rows were committed"


def _listing(spark, root: str) -> set[str]:
    path = spark._jvm.org.apache.hadoop.fs.Path(root)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    return {str(s.getPath().getName()) for s in fs.listStatus(path) if not s.getPath().getName().startswith(".")}


def _as_table(name: str):
    from sqlglot import exp

    return exp.to_table(name, dialect="spark")


def _exists(spark, location: str) -> bool:
    path = spark._jvm.org.apache.hadoop.fs.Path(location)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()).exists(path)


def test_a_held_claim_makes_run_report_it_in_progress_naming_the_holder_and_changes_nothing(spark, isolated, items):
    name = items
    hold_claim(spark, f"table {physical(spark, name)}", "busy-run@host:42", lease_s=600,
           work=((name, 1704153600000, 1704240000000),))
    before = state_rows(spark, isolated)

    rows = _call(spark, "run", execution_time="2024-01-04 00:00:00", wait="1 second")

    assert {(r.model, r.status) for r in rows} == {(name, "claimed")}, rows
    assert all("claimed by busy-run@host:42 (incr.run, application app-gone on" in r.message for r in rows), rows
    building = [r for r in _call(spark, "status", model=name) if r.state == "building"]
    assert [(str(r.start.date()), r.claimed_by.split(" ")[0]) for r in building] == [("2024-01-02", "busy-run@host:42")]
    assert state_rows(spark, isolated) == {**before, "runs": before["runs"]}


def test_a_held_claim_fails_restate_naming_the_holder_and_changes_nothing(spark, isolated, items):
    name = items
    hold_claim(spark, f"table {physical(spark, name)}", "busy-run@host:42", lease_s=600)
    before = state_rows(spark, isolated)

    with pytest.raises(Exception) as failed:
        _call(spark, "restate", model=name, execution_time="2024-01-04 00:00:00", wait="PT1S")

    assert "is claimed by busy-run@host:42 (incr.run, application app-gone on" in str(failed.value)
    assert "Nothing was changed" in str(failed.value) and "wait =>" in str(failed.value)
    assert state_rows(spark, isolated) == before


def test_a_call_with_nothing_to_write_takes_no_claim(spark, isolated, items):
    root = claims.root(table_location(spark, f"{isolated}_state", t.LOCKS.name).toString())
    before = claims._tree(spark, root, 2)

    assert _call(spark, "run", execution_time="2024-01-02 00:00:00") == []

    assert claims._tree(spark, root, 2) == before
