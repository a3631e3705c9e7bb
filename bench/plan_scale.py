"""Plan at scale: models on a 5-minute cron since 2020-01-01, each with 10 recorded gaps.

Measures (1) computing one model's missing intervals from its coverage, and (2) planning
N such models end to end (state read from the catalog included), on the embedded default:
the state is written, every Python cache emptied, then the models are planned three times.

    .venv/bin/python bench/plan_scale.py [--models 1000] [--profile FILE] [--fresh-jvm] [--home DIR] [--upgrade]

Prints one line per figure; docs/benchmarks.md records the latest run. ``--upgrade`` times instead what
an upgrade changing the parsing and judging code costs (see :func:`bench_upgrade`).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyspark_incr.intervals import Interval, IntervalSet, to_ms
from pyspark_incr.intervals.schedule import Schedule

FIVE_MIN = 5 * 60_000
START, NOW = to_ms("2020-01-01"), to_ms("2026-01-01")


def coverage_with_gaps(gaps: int = 10) -> IntervalSet:
    """Everything from START to NOW built, except ``gaps`` single intervals spread evenly."""
    step = (NOW - START) // (gaps + 1)
    starts = [START + (i + 1) * step for i in range(gaps)]
    holes = IntervalSet([Interval(s - s % FIVE_MIN, s - s % FIVE_MIN + FIVE_MIN) for s in starts])
    return IntervalSet([Interval(START, NOW)]) - holes


def bench_missing(repeat: int = 200) -> float:
    schedule = Schedule.parse("*/5 * * * *")
    built = coverage_with_gaps()
    started = time.perf_counter()
    for k in range(repeat):  # a different execution time each time: no cached cron tick
        expected = schedule.expected(START, None, NOW - k * FIVE_MIN)
        missing = IntervalSet([expected]) - built
    elapsed = (time.perf_counter() - started) / repeat
    assert len(missing) == 10, missing
    return elapsed


def build_state(spark, models: int, objects: bool = True) -> None:
    """Write the state of ``models`` models, as ``incr.apply`` and ``incr.run`` would have (the environment
    rows go through ``StateStore.append`` with the safety judgement, like the executor's), and their views."""
    from pyspark_incr.model.definition import parse_model
    from pyspark_incr.model.fingerprint import data_hash, metadata_hash
    from pyspark_incr.plan.environment import table_for
    from pyspark_incr.safety.judge import judge
    from pyspark_incr.state import tables as t
    from pyspark_incr.state.store import StateStore

    store = StateStore(spark)
    env_rows, interval_rows = [], []
    for i in range(models):
        text = definition(i)
        model = parse_model(text)
        table = table_for(model.name, "prod").sql("spark")
        env_rows.append({"env": "prod", "model": model.name, "fingerprint": data_hash(model),
                         "metadata_hash": metadata_hash(model), "definition": text, "source": "registry",
                         "model_source": "registry", "context": "", "table_name": table, "start_ms": START, "op": "apply",
                         "judgement": judge(model, ())})  # raw.src is no model: no timeseries source
        for r in coverage_with_gaps():
            interval_rows.append({"table_name": table, "fingerprint": data_hash(model), "model": model.name,
                                  "start_ms": r.start, "end_ms": r.end, "op": "add", "run_id": "bench"})
    store.append(t.ENVIRONMENTS, env_rows)
    store.append(t.INTERVALS, interval_rows)
    register(spark, models)
    if objects:
        _create_objects(spark, [row["table_name"] for row in env_rows])


def definition(i: int) -> str:
    """Model ``i``'s definition: five-minute cron since 2020."""
    return (f"MODEL (name bench.m{i}, kind INCREMENTAL_BY_TIME_RANGE (time_column ts), start '2020-01-01', "
            f"cron '*/5 * * * *'); SELECT ts, x FROM raw.src WHERE ts BETWEEN @start_dt AND @end_dt")


def register(spark, models: int) -> None:
    """The models in the catalog registry (as ``incr.create_model`` records them), when they are not: what an
    ``incr.apply`` without a project makes the environment match."""
    from pyspark_incr.state import tables as t
    from pyspark_incr.state.store import StateStore

    store = StateStore(spark)
    if not store.registry():
        store.append(t.MODELS, [{"name": f"bench.m{i}", "definition": definition(i), "op": "create"}
                                for i in range(models)])


def ensure_built(spark, home: str, models: int) -> None:
    """The state and catalog objects of ``models`` models in ``home``: built once; when they were built by
    other code (its snapshots and judgements stale: each would be parsed and judged again), the state is
    written again, the catalog's objects kept."""
    from pyspark_incr import ddl
    from pyspark_incr.config import STATE_SCHEMA, setting
    from pyspark_incr.runtime import discard
    from pyspark_incr.safety.judge import _code
    from pyspark_incr.state.snapshot import format_version

    marker, version = Path(home) / f"built-{models}", f"{format_version()} {_code()}"
    if marker.exists() and marker.read_text() == version:
        return
    if marker.exists():
        spark.sql(ddl.drop_schema(setting(spark, STATE_SCHEMA)) + " CASCADE")
        discard(spark)
    build_state(spark, models, objects=not marker.exists())
    marker.write_text(version)


def _create_objects(spark, names: list[str]) -> None:
    """The catalog objects the models' state points at (a view each, the cheapest catalog object: 10,000 took
    about three minutes in the embedded Derby metastore; ``--home`` keeps them): without them the plan finds
    every table missing and plans each model's whole history rebuilt, not its ten gaps."""
    from pyspark_incr import ddl

    spark.sql(ddl.create_schema("bench"))
    for name in names:
        spark.sql(f"CREATE VIEW IF NOT EXISTS {name} AS SELECT 1 AS x")


def forget_process_caches(spark) -> None:
    """Empty what building the state left in this process (parsed models, read tables, ...): the first plan
    must find what a fresh process finds. Only the JVM stays warm (see ``--fresh-jvm``)."""
    from pyspark_incr.runtime import discard

    discard(spark)
    for name, module in list(sys.modules.items()):
        if name.startswith("pyspark_incr"):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


def bench_plan(models: int, profile: str | None = None, fresh_jvm: bool = False,
               home: str | None = None) -> tuple[float, float]:
    """Plan ``models`` models three times: the first call finds no Python cache (see
    :func:`forget_process_caches`), later calls find what repeated runs in one session find.

    ``fresh_jvm``: another process builds the state, so the first call also pays what a new JVM pays
    once (starting the metastore client, compiling the Parquet and Arrow paths), whatever the model count.
    ``home``: where the state and the catalog are built, and found built by a later invocation (one home, one
    model count).
    """
    from pyspark_incr.bridge.session import embedded_session
    from pyspark_incr.plan.planner import Window, plan_run
    from pyspark_incr.state.store import StateStore

    home = home or tempfile.mkdtemp()
    if fresh_jvm:
        subprocess.run([sys.executable, __file__, "--models", str(models), "--build", home], check=True)
    spark = embedded_session(home)
    spark.sparkContext.setLogLevel("ERROR")
    ensure_built(spark, home, models)
    if not fresh_jvm:  # the JVM as warm as building the state leaves it, when an earlier invocation built it
        plan_run(StateStore(spark), "prod", Window(NOW), None)
    forget_process_caches(spark)
    timings = []
    for call in range(3):
        profiler = cProfile.Profile() if profile and call == 0 else None
        started = time.perf_counter()
        if profiler:
            profiler.enable()
        plan = plan_run(StateStore(spark), "prod", Window(NOW), None)
        if profiler:
            profiler.disable()
        timings.append(time.perf_counter() - started)
        if profiler:
            profiler.dump_stats(profile)
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    assert len(plan.models) == models
    spark.stop()
    return timings[0], min(timings[1:])


def bench_upgrade(models: int, home: str) -> tuple[float, float, float]:
    """An upgrade changing the parsing and judging code, in this process: every snapshot and judgement the state
    keeps is stale. Times the first plan finding them so, the ``incr.apply`` (of the registry, as of the models'
    start: nothing to build) recording the kept versions again with fresh ones, and the first plan after it.
    The state is left as a later version would find it: the next invocation writes it again."""
    from pyspark_incr.bridge.session import embedded_session
    from pyspark_incr.plan.planner import Window, plan_run
    from pyspark_incr.safety import judge
    from pyspark_incr.state import snapshot
    from pyspark_incr.state.store import StateStore

    spark = embedded_session(home)
    spark.sparkContext.setLogLevel("ERROR")
    ensure_built(spark, home, models)
    register(spark, models)
    plan_run(StateStore(spark), "prod", Window(NOW), None)  # the JVM warm, as in bench_plan
    marker, parsing, judging = Path(home) / f"built-{models}", snapshot.format_version(), judge._code()
    snapshot.format_version = lambda: f"{parsing} upgraded"
    judge._code = lambda: f"{judging} upgraded"
    marker.write_text("written by an upgraded version")

    def first_plan() -> float:
        forget_process_caches(spark)
        started = time.perf_counter()
        plan_run(StateStore(spark), "prod", Window(NOW), None)
        return time.perf_counter() - started

    stale = first_plan()
    forget_process_caches(spark)
    started = time.perf_counter()
    rows = spark.sql("CALL incr.apply(execution_time => '2020-01-01 00:05:00')").collect()
    applied = time.perf_counter() - started
    assert not [r for r in rows if r["status"] != "ok"], rows[:3]
    fresh = first_plan()
    spark.stop()
    return stale, applied, fresh


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--profile", metavar="FILE",
                        help="profile the first plan (cProfile): print the top functions, save the stats to FILE")
    parser.add_argument("--fresh-jvm", action="store_true",
                        help="build the state in another process, so the first plan also starts this JVM's catalog")
    parser.add_argument("--home", metavar="DIR",
                        help="build the state and the catalog's objects here once; later invocations reuse them")
    parser.add_argument("--upgrade", action="store_true",
                        help="time a plan after an upgrade changing the parsing code, the apply refreshing the "
                             "state's snapshots, and a plan after it (needs --home)")
    parser.add_argument("--build", metavar="HOME", help=argparse.SUPPRESS)  # the state-building process
    args = parser.parse_args()
    if args.upgrade:
        if not args.home:
            raise SystemExit("--upgrade needs --home (the state it makes stale is written again by the next run)")
        stale, applied, fresh = bench_upgrade(args.models, args.home)
        print(f"after an upgrade, {args.models} models: first plan {stale:.2f} s; the apply recording them again "
              f"{applied:.2f} s; first plan after it {fresh:.2f} s")
        return
    if args.build:
        from pyspark_incr.bridge.session import embedded_session

        spark = embedded_session(args.build)
        ensure_built(spark, args.build, args.models)
        spark.stop()
        return
    print(f"missing intervals of one model (5-minute cron since 2020, 10 gaps): {bench_missing() * 1000:.3f} ms")
    first, best = bench_plan(args.models, args.profile, args.fresh_jvm, args.home)
    where = " (fresh JVM)" if args.fresh_jvm else ""
    print(f"plan of {args.models} such models, state read included: first call{where} {first:.2f} s, "
          f"later calls {best:.2f} s")


if __name__ == "__main__":
    main()
