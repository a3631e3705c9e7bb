"""The scheduled job's hot path: what a run with nothing due, or one model due among many, asks of Spark.

Counted, never timed (the machine is shared): the Spark SQL statements a ``CALL incr.run`` issues, the Spark
jobs it starts, and its round trips into the JVM (py4j commands). Each is what a warm call pays however
loaded the machine is. Reusing what an earlier call read must never hide what another application wrote
since: those writes are simulated here by appending state files the way another process does (its own
file, unknown to this process's caches).
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timezone

import pytest
from conftest import call

from pyspark_incr import trips

#: Incremental models that are not due when the daily model is (a monthly cron).
IDLE = 4
DAILY = "daily"


def _model(db: str, name: str, cron: str, start: str) -> str:
    return (f"MODEL (name {db}.{name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), cron '{cron}', "
            f"start '{start}');\nSELECT CAST(@start_ds AS DATE) AS ds, 1 AS v\n")


@pytest.fixture(scope="module")
def project(spark, module_isolated, tmp_path_factory):
    """One daily model and IDLE monthly ones, applied up to 2024-03-01; yields (project dir, db)."""
    db = f"{module_isolated}_db"
    root = tmp_path_factory.mktemp("fast_path")
    (root / "models").mkdir()
    (root / "models" / f"{DAILY}.sql").write_text(_model(db, DAILY, "@daily", "2024-02-26"))
    for i in range(IDLE):
        (root / "models" / f"monthly_{i}.sql").write_text(_model(db, f"monthly_{i}", "@monthly", "2024-02-01"))
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    rows = call(spark, "apply", project=str(root), execution_time="2024-03-01 00:00:00")
    assert {r.status for r in rows} == {"ok"} and len({r.model for r in rows}) == IDLE + 1
    return root, db


class Counts:
    """What one call asked of Spark: statements through SparkSession.sql, jobs, JVM round trips."""

    def __init__(self) -> None:
        self.statements: list[str] = []
        self.jobs = 0
        self.round_trips = 0


@contextmanager
def counted(spark):
    """Count, on every thread, the statements, jobs and py4j commands of what runs inside."""
    from pyspark.sql import SparkSession

    counts = Counts()
    sql = SparkSession.sql

    def counting_sql(session, query, *args, **kwargs):
        counts.statements.append(query)
        return sql(session, query, *args, **kwargs)

    scheduler = spark.sparkContext._jsc.sc().dagScheduler()
    first_job = scheduler.nextJobId()
    SparkSession.sql = counting_sql
    try:
        with trips.recorded() as sent:
            yield counts
    finally:
        SparkSession.sql = sql
    counts.round_trips = len(sent)
    counts.jobs = scheduler.nextJobId() - first_job


def _run(spark, at: str, **args):
    with counted(spark) as counts:
        rows = call(spark, "run", execution_time=at, **args)
    return rows, counts


def _other_application_records(spark, db: str, model: str, start: str, end: str, op: str) -> None:
    """An interval row appended as another application appends it: a new state file this process never saw."""
    from pyspark_incr.intervals import to_ms
    from pyspark_incr.state import files
    from pyspark_incr.state import tables as t
    from pyspark_incr.state.store import StateStore, table_root

    store = StateStore(spark)
    entry = store.environment("prod")[f"{db}.{model}"]
    row = t.interval_row(entry.table_name, entry.fingerprint, f"{db}.{model}", to_ms(start), to_ms(end), op, "other-app")
    row.update(seq=t.next_seq(), at=datetime.now(timezone.utc))
    files.append(spark, table_root(spark, store.schema, t.INTERVALS.name), t.to_arrow(t.INTERVALS, [row]))


def test_a_warm_run_with_nothing_due_issues_no_spark_statement_no_job_and_a_dozen_round_trips(spark, project):
    _run(spark, "2024-03-01 12:00:00")  # warm: this application has read the state files once

    rows, counts = _run(spark, "2024-03-01 12:00:00")

    assert rows == []
    assert len(counts.statements) == 1, f"only the CALL itself: {counts.statements}"
    assert counts.jobs == 0
    # 12 are the CALL's own (statement, callback, rows); 3 the run's: the two state tables listed (what another
    # application wrote is seen), the physical and view schemas listed together (a dropped table is rebuilt);
    # the session's id and settings come with the call (before: six more round trips); none per model (before:
    # the run's own were 23 for one model, and 3 more for each other)
    assert counts.round_trips <= 15, counts.round_trips


def test_several_schemas_are_listed_in_one_jvm_call_and_a_schema_that_does_not_exist_has_no_tables(spark, project):
    from pyspark_incr.writers import tables

    _, db = project

    with counted(spark) as counts:
        found = tables.names_in_each(spark, [db, "no_such_schema_anywhere", db])

    assert counts.round_trips == 1
    assert found == {db: tables.names_in(spark, db), "no_such_schema_anywhere": set()}
    assert DAILY in found[db], "the project's views are listed"


def test_a_models_schema_that_exists_is_asked_of_the_catalog_not_created_again(spark, isolated):
    from sqlglot import exp

    from pyspark_incr.writers import tables

    there, missing = (exp.table_("t", db=f"{isolated}_{name}", quoted=True) for name in ("there", "missing"))
    spark.sql(f"CREATE DATABASE {isolated}_there")

    with counted(spark) as counts:
        tables.ensure_schema(spark, there)
        tables.ensure_schema(spark, missing)

    assert counts.statements == [f"CREATE DATABASE IF NOT EXISTS `{isolated}_missing`"]
    assert spark.catalog.databaseExists(f"{isolated}_missing")


def test_a_cold_applications_first_run_asks_the_catalog_of_all_state_tables_in_one_round_trip(spark, project):
    from pyspark_incr.runtime import discard

    discard(spark)  # what this application remembers is gone, as in a new application's first call

    rows, counts = _run(spark, "2024-03-01 12:00:00")

    assert rows == []
    # 30: the warm call's 15, the state tables' columns and directories asked in one call, the two state tables'
    # files read (before: 279, a dozen round trips and two metastore queries for each of the five state tables)
    assert counts.round_trips <= 45, counts.round_trips


def test_one_model_due_among_many_costs_what_that_model_alone_costs(spark, project):
    _, db = project
    _, alone = _run(spark, "2024-03-02 00:30:00", select=f"{db}.{DAILY}")  # plans the daily model only

    rows, among = _run(spark, "2024-03-03 00:30:00")  # plans all IDLE + 1 models; the daily one is due

    assert [(r.model, r.start.date().isoformat(), r.status) for r in rows] == [(f"{db}.{DAILY}", "2024-03-02", "ok")]
    assert len(among.statements) == len(alone.statements) and among.jobs == alone.jobs
    # the same work, and no round trip for the idle models (before: five each, labels and cache refreshes); the
    # count moves by one or two with what the shared session did before (125 against 123 seen once, under load),
    # less than one round trip per idle model would add
    assert among.round_trips <= alone.round_trips + 2 < alone.round_trips + IDLE, (among.round_trips, alone.round_trips)


def test_an_interval_another_application_built_meanwhile_is_not_built_again(spark, project):
    _, db = project
    _run(spark, "2024-03-03 12:00:00")  # warm, nothing due
    _other_application_records(spark, db, DAILY, "2024-03-03", "2024-03-04", "add")

    rows, counts = _run(spark, "2024-03-04 00:30:00")

    assert rows == [] and counts.jobs == 0, [(r.model, r.start, r.status) for r in rows]


def test_an_interval_another_application_marked_missing_is_built_by_the_next_run(spark, project):
    _, db = project
    _run(spark, "2024-03-04 12:00:00")  # warm, nothing due
    _other_application_records(spark, db, DAILY, "2024-03-02", "2024-03-03", "remove")

    rows, counts = _run(spark, "2024-03-04 12:00:00")  # the same time: only the other application's row changed

    assert [(r.model, r.start.date().isoformat(), r.status) for r in rows] == [(f"{db}.{DAILY}", "2024-03-02", "ok")]
    assert counts.jobs >= 1


def test_a_model_another_application_dropped_from_the_environment_is_no_longer_planned(spark, project):
    from pyspark_incr.state import files
    from pyspark_incr.state import tables as t
    from pyspark_incr.state.store import StateStore, table_root

    _, db = project
    gone = f"{db}.monthly_0"
    assert gone in {r.model for r in call(spark, "status", execution_time="2024-03-04 12:00:00")}
    store = StateStore(spark)
    entry = store.environment("prod")[gone]
    row = {"env": "prod", "model": gone, "fingerprint": entry.fingerprint, "metadata_hash": entry.metadata_hash,
           "definition": entry.definition, "source": entry.source, "table_name": entry.table_name, "op": "remove",
           "run_id": "other-app", "seq": t.next_seq(), "at": datetime.now(timezone.utc)}
    files.append(spark, table_root(spark, store.schema, t.ENVIRONMENTS.name), t.to_arrow(t.ENVIRONMENTS, [row]))

    status = call(spark, "status", execution_time="2024-03-04 12:00:00")

    assert gone not in {r.model for r in status}
    assert f"{db}.monthly_1" in {r.model for r in status}


def test_a_changed_model_file_is_seen_by_the_next_plan(spark, project):
    root, db = project
    call(spark, "plan", project=str(root), execution_time="2024-03-04 12:00:00")  # warm
    path = root / "models" / "monthly_1.sql"
    path.write_text(path.read_text().replace("1 AS v", "2 AS v"))

    rows = call(spark, "plan", project=str(root), execution_time="2024-03-04 12:00:00")

    assert {r.model: r.change for r in rows}[f"{db}.monthly_1"] == "changed"


def test_a_daily_build_asks_the_catalog_of_its_table_once(spark, project, monkeypatch):
    from pyspark_incr.writers import formats, tables

    _, db = project
    asked = []
    for module, name in ((tables, "described_each"), (tables, "location"), (formats, "existing")):
        monkeypatch.setattr(module, name, _noting(getattr(module, name), asked, name))

    rows, _ = _run(spark, "2024-03-05 00:30:00", select=f"{db}.{DAILY}")

    assert [(r.start.date().isoformat(), r.status) for r in rows] == [("2024-03-04", "ok")]
    # its format, schema and directory from one catalog call (before: three, and an analysis of the table)
    assert asked == ["described_each"]


def _noting(function, asked: list[str], name: str):
    def noted(*args, **kwargs):
        asked.append(name)
        return function(*args, **kwargs)
    return noted


def test_a_listing_of_several_schemas_keeps_names_holding_line_breaks_other_than_newline(monkeypatch):
    from pyspark_incr.writers import tables

    class Reads:
        @staticmethod
        def tableNamesIn(session, dbs):
            assert dbs == "a\nb"
            return "a\tx\ry\nb\tZ\n"

    monkeypatch.setattr(tables, "shim_class", lambda spark, name: Reads)
    spark = type("Spark", (), {"_jsparkSession": None})()

    assert tables.names_in_each(spark, ["a", "b", "a"]) == {"a": {"x\ry"}, "b": {"z"}}


def test_a_first_apply_asks_where_its_new_state_tables_live_in_one_call(spark, isolated, tmp_path):
    # compare.sh's a and f0: a new project's first apply creates the state schema's tables; each metastore
    # question is ~10 ms on the embedded Derby metastore, a thrift round trip on a metastore service
    db = f"{isolated}_db"
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "t.sql").write_text(_model(db, "t", "@daily", "2024-02-28"))

    with trips.recorded() as sent:
        rows = call(spark, "apply", project=str(tmp_path), execution_time="2024-03-01 00:00:00")

    assert [(r.status, r.start.date().isoformat()) for r in rows] == [("ok", "2024-02-28")]  # both days, one batch
    methods = [t.method for t in sent]
    # before: five getTableMetadata (one per new state table, ~20 round trips each), after the describe that
    # found none; now the tables just created are described together (the call's own describe is the third)
    assert "getTableMetadata" not in methods
    assert methods.count("describe") == 3, methods.count("describe")


def test_the_runs_of_a_warm_process_share_each_idle_models_records_and_a_build_changes_none_of_them(
        spark, project, monkeypatch):
    from pyspark_incr.procedures import running
    from pyspark_incr.sqltext import table_sql
    from pyspark_incr.state.store import StateStore

    _, db = project
    plans, plan_run = [], running.plan_run
    monkeypatch.setattr(running, "plan_run", lambda *a, **k: plans.append(plan_run(*a, **k)) or plans[-1])
    built, _ = _run(spark, "2024-03-06 00:30:00")  # the daily model due: built
    first = {mp.name: mp for mp in plans[-1].models}
    idle, _ = _run(spark, "2024-03-06 12:00:00")  # nothing due
    second = {mp.name: mp for mp in plans[-1].models}

    assert {r.model for r in built} == {f"{db}.{DAILY}"} and idle == []
    monthly = [name for name in second if name != f"{db}.{DAILY}"]
    # the records every idle model's plan holds are made once, not once a run (most of what 1,000 idle models left
    # for the cycle collector: 9,000 objects a run, and a full collection every few runs in bench/many_models.py)
    for name in [*monthly, f"{db}.{DAILY}"]:
        assert second[name].table is first[name].table and second[name].view is first[name].view, name
    assert all(second[name].missing is first[name].missing for name in monthly)
    # and their names, written once with them: what writing each record again would give
    for mp in second.values():
        assert (mp.table_name, mp.view_name) == (table_sql(mp.table), table_sql(mp.view)), mp.name
        assert mp.table_name is first[mp.name].table_name, mp.name
    assert len({id(second[name].expected) for name in monthly}) == 1
    # shared, so never changed in place: the build left the daily model's as they were
    daily = second[f"{db}.{DAILY}"]
    assert daily.table.sql("spark") == StateStore(spark).environment("prod")[f"{db}.{DAILY}"].table_name
    assert daily.view.sql("spark") == f"`{db}`.`{DAILY}`"
