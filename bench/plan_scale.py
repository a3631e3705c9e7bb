"""Plan at scale: models on a 5-minute cron since 2020-01-01, each with 10 recorded gaps.

Measures (1) computing one model's missing intervals from its coverage, and (2) planning
N such models end to end (state read from the catalog included), on the embedded default.

    .venv/bin/python bench/plan_scale.py [--models 1000]

Prints one line per figure; docs/benchmarks.md records the latest run.
"""

from __future__ import annotations

import argparse
import tempfile
import time

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
    for _ in range(repeat):
        expected = schedule.expected(START, None, NOW)
        missing = IntervalSet([expected]) - built
    elapsed = (time.perf_counter() - started) / repeat
    assert len(missing) == 10, missing
    return elapsed


def bench_plan(models: int) -> tuple[float, float]:
    from pyspark_incr.bridge.session import embedded_session
    from pyspark_incr.plan.environment import table_for
    from pyspark_incr.plan.planner import Window, plan_run
    from pyspark_incr.model.definition import parse_model
    from pyspark_incr.model.fingerprint import data_hash, metadata_hash
    from pyspark_incr.state import tables as t
    from pyspark_incr.state.store import StateStore

    spark = embedded_session(tempfile.mkdtemp())
    spark.sparkContext.setLogLevel("ERROR")
    store = StateStore(spark)
    env_rows, interval_rows = [], []
    for i in range(models):
        text = (f"MODEL (name bench.m{i}, kind INCREMENTAL_BY_TIME_RANGE (time_column ts), start '2020-01-01', "
                f"cron '*/5 * * * *'); SELECT ts, x FROM raw.src WHERE ts BETWEEN @start_dt AND @end_dt")
        model = parse_model(text)
        table = table_for(model.name, "prod").sql("spark")
        env_rows.append({"env": "prod", "model": model.name, "fingerprint": data_hash(model),
                         "metadata_hash": metadata_hash(model), "definition": text, "source": "registry",
                         "model_source": "registry", "context": "", "table_name": table, "start_ms": START, "op": "apply"})
        for r in coverage_with_gaps():
            interval_rows.append({"table_name": table, "fingerprint": data_hash(model), "model": model.name,
                                  "start_ms": r.start, "end_ms": r.end, "op": "add", "run_id": "bench"})
    store.append(t.ENVIRONMENTS, env_rows)
    store.append(t.INTERVALS, interval_rows)
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        plan = plan_run(StateStore(spark), "prod", Window(NOW), None)
        timings.append(time.perf_counter() - started)
    assert len(plan.models) == models
    spark.stop()
    return timings[0], min(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=1000)
    args = parser.parse_args()
    print(f"missing intervals of one model (5-minute cron since 2020, 10 gaps): {bench_missing() * 1000:.3f} ms")
    first, best = bench_plan(args.models)
    print(f"plan of {args.models} such models, state read included: first {first:.2f} s, best of 3 {best:.2f} s")


if __name__ == "__main__":
    main()
