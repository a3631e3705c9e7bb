"""What runs in a child process, each with its own Spark JVM on the embedded home.

Embedded Derby admits one process per home, and a Spark application cannot switch metastores:
so every step that touches the home is a process of its own, started by the parent
(``bench/crash.py --child MODE HOME WORK``). Each prints one ``RESULT <json>`` line at its end.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

from crash_harness import checks, phases
from crash_harness import project as p

READY = "READY"


def session(home: Path):
    from pyspark_incr.bridge.session import embedded_session

    spark = embedded_session(home)
    spark.sparkContext.setLogLevel("ERROR")
    spark.conf.set("spark.incr.lockLease", p.LOCK_LEASE_S)
    return spark


def call(spark, procedure: str, **args) -> list:
    from pyspark_incr.sqltext import call_sql

    return spark.sql(call_sql(procedure, **args)).collect()


def result(**values) -> None:
    print("RESULT " + json.dumps(values, default=str), flush=True)


def setup(home: Path, work: Path) -> None:
    """The base state: sources, models applied through the base days; then new data arrives and the
    tables as they are now are saved as the ``before`` references."""
    spark = session(home)
    p.create_sources(spark)
    for m in p.MODELS:
        call(spark, "create_model", definition=m.definition)
    failed = [r for r in call(spark, "apply", execution_time=p.BASE_AT) if r.status != "ok"]
    assert not failed, failed
    p.arrive(spark)
    for m in p.MODELS:
        checks.save(spark.table(m.name), work, "before", m.name)
    result(ok=True)


def work(home: Path, work_dir: Path, save_after: bool = False) -> None:
    """The trial's work, as the killed child runs it: markers on, READY once the session is up, one run.

    With ``save_after`` (the reference run, never killed) the tables are saved as the ``after`` references.
    """
    spark = session(home)
    phases.instrument()
    print(READY, flush=True)
    started = time.monotonic()
    rows = call(spark, "run", execution_time=p.RUN_AT)
    seconds = time.monotonic() - started
    failed = [r for r in rows if r.status != "ok"]
    if save_after:
        for m in p.MODELS:
            checks.save(spark.table(m.name), work_dir, "after", m.name)
        assert rows_sane(spark), "the reference run's unique-key table is not the closed form of its batches"
    result(ok=not failed, seconds=seconds, batches=len(rows), failed=[str(r) for r in failed])


def rows_sane(spark) -> bool:
    """The reference agrees with the unique-key model's closed form after every batch (the checker relies on it)."""
    return checks.rows(spark.table("crash.customer_last")) == checks.rows(p.unique_key_after(spark, p.NEW_DAYS))


def check(home: Path, work_dir: Path) -> None:
    """After a kill: check 1 on what the kill left, then the rerun, then check 2."""
    spark = session(home)
    problems, seen = checks.check_state(spark, work_dir)
    started = time.monotonic()
    try:
        failed = [str(r) for r in call(spark, "run", execution_time=p.RUN_AT) if r.status != "ok"]
    except Exception as e:  # noqa: BLE001 - a failing rerun is a finding, reported with the rest
        failed = [f"rerun raised: {str(e).splitlines()[0][:400]}"]
    problems += [f"rerun step failed: {f}" for f in failed]
    problems += checks.check_converged(spark, work_dir)
    result(problems=problems, seen=seen, rerun_seconds=round(time.monotonic() - started, 1))


CONTENDED = ("crash.customer_last", "crash.customer_tiers")


def concurrency(home: Path, work_dir: Path, use_apply: bool) -> None:
    """Two sessions of one application run the unique-key and SCD2 models at the same time (the first
    one through ``incr.apply`` when ``use_apply``); each batch must be built once, the tables as the reference."""
    from pyspark_incr.bridge.session import attach

    spark = session(home)
    sessions = [attach(spark.newSession()), attach(spark.newSession())]
    for s in sessions:  # the waiting call must outwait the other, however loaded the machine
        s.conf.set("spark.incr.lockTimeout", "900")
    start = threading.Barrier(2)
    results: dict[int, list] = {}

    def run(i: int) -> None:
        start.wait()
        procedure = "apply" if use_apply and i == 0 else "run"
        try:
            results[i] = call(sessions[i], procedure, execution_time=p.RUN_AT, select=",".join(CONTENDED))
        except Exception as e:  # noqa: BLE001 - reported as a problem
            results[i] = [f"raised: {str(e).splitlines()[0][:300]}"]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    problems = once_each(spark, results) + same_as_reference(spark, work_dir)
    result(problems=problems, built={i: sum(1 for r in rs if getattr(r, "status", "") == "ok") for i, rs in results.items()})


def once_each(spark, results: dict[int, list]) -> list[str]:
    """Every new interval of each contended model was built by exactly one call (result rows and runs table)."""
    from pyspark_incr.state import tables as t
    from pyspark_incr.state.store import StateStore

    problems = [f"call {i} {r}" for i, rs in results.items() for r in rs if isinstance(r, str)]
    runs = StateStore(spark).read(t.RUNS).to_pylist()
    for model in CONTENDED:
        recorded = [(r["start_ms"], r["end_ms"]) for r in runs
                    if r["model"] == model and r["status"] == "ok" and r["start_ms"] is not None
                    and r["start_ms"] >= checks.day_ms(p.new_days()[0])]
        returned = [(r.start, r.end) for rs in results.values() for r in rs
                    if not isinstance(r, str) and r.model == model and r.status == "ok" and r.action == "build"]
        if len(recorded) != len(set(recorded)) or len(returned) != len(set(returned)):
            problems.append(f"{model}: a batch was applied twice: runs table {sorted(recorded)}, results {returned}")
        if len(recorded) != len(returned):
            problems.append(f"{model}: {len(returned)} batches returned but {len(recorded)} in the runs table")
        days = sum((e - s) // checks.DAY_MS for s, e in set(recorded))
        if days != p.NEW_DAYS:
            problems.append(f"{model}: the batches built cover {days} days, not {p.NEW_DAYS}")
    return problems


def same_as_reference(spark, work_dir: Path) -> list[str]:
    from chispa import assert_df_equality

    problems = []
    for model in CONTENDED:
        try:
            assert_df_equality(spark.table(model), checks.reference(spark, work_dir, "after", model), **checks.EQUAL)
        except Exception as e:  # noqa: BLE001 - chispa's DataFramesNotEqualError is no AssertionError
            problems.append(f"{model}: differs from the sequential reference: {str(e)[:400]}")
    return problems


def main(mode: str, home: str, work_dir: str, flag: bool = False) -> None:
    home_path, work_path = Path(home), Path(work_dir)
    if mode == "setup":
        setup(home_path, work_path)
    elif mode == "work":
        work(home_path, work_path, save_after=flag)
    elif mode == "check":
        check(home_path, work_path)
    elif mode == "concurrency":
        concurrency(home_path, work_path, use_apply=flag)
    else:
        sys.exit(f"unknown child mode {mode}")
