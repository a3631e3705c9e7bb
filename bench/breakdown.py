"""Where the time of a scheduled run goes: pyspark-incr's phases, Spark's own jobs and queries, and a profile.

    .venv/bin/python bench/breakdown.py                 # compare.sh's data (20M events over 365 days)
    .venv/bin/python bench/breakdown.py --rows 2000000  # a lighter source, same days

In one warm process (the data of ``bench/peers/generate.py``, the model of compare.sh's workloads a-d,
driven as ``bench/peers/run_incr.py`` drives it: ``CALL incr.run`` / ``CALL incr.apply`` in Spark SQL),
after a 365-day backfill and a warm-up run, it measures ``--rounds`` rounds of

- a no-op run (nothing due: compare.sh's c),
- a daily run (one new day: compare.sh's b),
- a batch_size 1 backfill of a few days (compare.sh's d), reported per batch,

with profiling on (:mod:`pyspark_incr.timings`). Per phase it prints medians over the rounds of: wall ms
(the phase and what it holds), self ms (less its sub-phases), statements through SparkSession.sql and
their ms, and the Spark jobs and SQL executions (from Spark's status stores) that started inside the
phase, with their ms. ``call`` is the client's whole ``spark.sql("CALL ...").collect()``. Then it runs a
no-op and a daily run under cProfile (in the thread that executes the procedure) and writes the top 20
(cumulative) to ``bench/out/breakdown-profile-<run>.txt`` (the whole profile beside it, ``.prof``); every
figure goes to ``bench/out/breakdown.json``. Last, a few daily runs each after 1.5 s of idle (what
compare.sh's lockstep leaves between a contender's steps) are timed JVM call by JVM call: per method the
calls and ms a run spent in it (``catalog``'s metastore reads, the write, the publish ...).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
sys.path[:0] = [str(HERE / "peers"), str(HERE)]

from common import START, Spec, generate, register_sources, session  # noqa: E402
from run_incr import Incr, _with_incr  # noqa: E402

import spark_work  # noqa: E402
from pyspark_incr import timings, trips  # noqa: E402
from pyspark_incr.config import CONCURRENCY  # noqa: E402

COLUMNS = ("wall ms", "self ms", "n", "stmts", "stmt ms", "jobs", "job ms", "sqls", "sql ms")
#: Daily runs timed round trip by round trip, each after IDLE_S seconds without work (as compare.sh's lockstep
#: leaves a contender between its steps: every JVM call is slower then than back to back).
TRIP_ROUNDS, IDLE_S = 3, 1.5


def phase_rows(profile: timings.Profile, work: list[spark_work.Work]) -> dict[str, dict[str, float]]:
    """Per phase path of one call: its figures summed over its occurrences (Spark's work by start time)."""
    rows: dict[str, dict[str, float]] = {}
    for p in profile.phases:
        row = rows.setdefault(p.path, dict.fromkeys(COLUMNS, 0.0))
        row["wall ms"] += p.ms
        row["n"] += 1
        row["stmts"] += p.statements
        row["stmt ms"] += p.statement_ms
        for w in work:
            if p.start <= w.start <= p.end:
                row["jobs" if w.kind == "job" else "sqls"] += 1
                row["job ms" if w.kind == "job" else "sql ms"] += w.ms
    for path, row in rows.items():
        children = [r for q, r in rows.items() if q.startswith(path + "/") and "/" not in q[len(path) + 1:]]
        row["self ms"] = row["wall ms"] - sum(c["wall ms"] for c in children)
    return rows


def measured(spark, action) -> tuple[float, timings.Profile, list[spark_work.Work]]:
    """Run ``action`` (one CALL); the client's ms, the call's profile and Spark's work during it."""
    before = timings.last()  # not the count of profiles kept: it stops growing at the newest 32
    ms, work = spark_work.timed(spark, action)
    found = timings.last()
    assert found is not None and found is not before, "the call was not profiled"
    return ms, found, work


def medians(samples: list[dict[str, dict[str, float]]], per: str | None = None) -> dict[str, dict[str, float]]:
    """Per path, the median of each figure over the samples (``per``: divided by that path's count first)."""
    paths = list(dict.fromkeys(p for s in samples for p in s))
    out = {}
    for path in paths:
        rows = [s.get(path, dict.fromkeys(COLUMNS, 0.0)) for s in samples]
        if per is not None:
            rows = [{k: v / max(1.0, s[per]["n"]) for k, v in r.items()} for r, s in zip(rows, samples) if per in s]
        out[path] = {k: statistics.median(r[k] for r in rows) for k in COLUMNS}
    return out


def table(title: str, rows: dict[str, dict[str, float]]) -> str:
    """A plain-text table of one scenario's medians."""
    width = max(len(p) for p in rows) + 2
    lines = [f"\n## {title}", "phase".ljust(width) + "".join(c.rjust(9) for c in COLUMNS)]
    for path, row in rows.items():
        lines.append(path.ljust(width) + "".join(
            (f"{row[c]:.0f}" if c in ("n", "stmts", "jobs", "sqls") else f"{row[c]:.1f}").rjust(9) for c in COLUMNS))
    return "\n".join(lines)


def with_call(samples: list[dict], clients: list[float]) -> list[dict]:
    """Each sample with the client's whole CALL as the ``call`` row (self: outside the procedure)."""
    out = []
    for s, ms in zip(samples, clients):
        inside = next(row["wall ms"] for path, row in s.items() if "/" not in path)
        out.append({"call": {**dict.fromkeys(COLUMNS, 0.0), "wall ms": ms, "self ms": ms - inside, "n": 1}, **s})
    return out


def profiled(tool: Incr, name: str, action) -> None:
    """Run ``action`` with cProfile on in the thread executing the procedure; top 20 cumulative to a file."""
    import pyspark_incr.bridge.handler as handler

    profiler, original = cProfile.Profile(), handler.dispatch
    handler.dispatch = lambda *a, **k: profiler.runcall(original, *a, **k)
    tool.spark.conf.set(CONCURRENCY, "1")  # every batch in the profiled thread (cProfile sees one thread)
    try:
        action()
    finally:
        handler.dispatch = original
        tool.spark.conf.unset(CONCURRENCY)
    text = io.StringIO(f"# incr.run ({name}) with {CONCURRENCY}=1, in the thread executing the procedure\n")
    text.seek(0, io.SEEK_END)
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(20)
    OUT.mkdir(exist_ok=True)
    path = OUT / f"breakdown-profile-{name}.txt"
    path.write_text(text.getvalue())
    profiler.dump_stats(path.with_suffix(".prof"))  # the whole profile, for pstats or snakeviz
    print(f"# cProfile of the {name} run: {path}", file=sys.stderr)


@contextmanager
def round_trips():
    """The py4j commands the procedure sends inside the block, as (method, ms): those of any thread but the
    caller's own (its CALL statement, which holds them all)."""
    caller = threading.get_ident()
    picked: list[tuple[str, float]] = []
    with trips.recorded() as sent:
        yield picked
    picked.extend((t.method, t.ms) for t in sent if t.thread != caller)


def trips_table(title: str, samples: list[list[tuple[str, float]]], top: int = 10) -> str:
    """Per JVM method: the median count and ms of a call over the samples, the costliest first."""
    methods = {m for sample in samples for m, _ in sample}
    rows = {m: (statistics.median(sum(1 for n, _ in s if n == m) for s in samples),
                statistics.median(sum(ms for n, ms in s if n == m) for s in samples)) for m in methods}
    lines = [f"\n## {title}", "method".ljust(24) + "calls".rjust(9) + "ms".rjust(9),
             "(all)".ljust(24) + f"{statistics.median(len(s) for s in samples):.0f}".rjust(9)
             + f"{statistics.median(sum(ms for _, ms in s) for s in samples):.1f}".rjust(9)]
    for method, (n, ms) in sorted(rows.items(), key=lambda r: -r[1][1])[:top]:
        lines.append(method[:24].ljust(24) + f"{n:.0f}".rjust(9) + f"{ms:.1f}".rjust(9))
    return "\n".join(lines)


def built(spark, tool: Incr) -> int | None:
    """The newest day the model of compare.sh's a holds (None: not built in this catalog)."""
    if not spark.catalog.tableExists(tool.output("a")):
        return None
    newest = spark.sql(f"SELECT max(ds) FROM {tool.output('a')}").first()[0]
    return None if newest is None else (newest - START).days


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default=str(OUT / "hotpath"), help="data and catalog (shared with quick.py)")
    parser.add_argument("--rows", type=int, default=Spec.rows, help="events over the 365 days")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=5, help="days of the batch_size 1 backfill, per round")
    parser.add_argument("--keep", action="store_true", help="go on from the runs of a previous breakdown (no backfill)")
    args = parser.parse_args()
    if args.rounds < 3:
        parser.error("--rounds: at least 3 (a median of fewer is one sample's hiccup)")
    spec = Spec(work=str(Path(args.work).resolve()), rows=args.rows)
    Path(spec.work).mkdir(parents=True, exist_ok=True)
    os.chdir(spec.work)
    timings.enable()
    spark = session(spec, "incr", _with_incr)
    generate(spark, spec)
    register_sources(spark, spec)
    tool = Incr(spark, spec)
    tool.setup()
    newest = built(spark, tool) if args.keep else None
    if newest is None:
        print(f"# backfill of {spec.days} days (set-up, not measured)", file=sys.stderr)
        tool.reset("a")
        tool.backfill("a", spec.days)
        newest = spec.days - 1
    if newest + 2 + args.rounds + 2 + TRIP_ROUNDS >= spec.days + spec.extra_days:
        raise SystemExit("the data ends before the runs would: run again without --keep")
    for _ in range(2):  # warm-up: a daily run and a no-op compile their paths once
        newest += 1
        tool.run("a", newest)
    tool.run("a", newest)
    results: dict[str, dict] = {}
    noop, daily, batch, clients = [], [], [], {"no-op": [], "daily": [], "backfill": []}
    for _ in range(args.rounds):  # interleaved, so a change in the machine's load hits every scenario alike
        ms, profile, work = measured(spark, lambda: tool.run("a", newest))
        noop.append(phase_rows(profile, work))
        clients["no-op"].append(ms)
        newest += 1
        ms, profile, work = measured(spark, lambda: tool.run("a", newest))
        daily.append(phase_rows(profile, work))
        clients["daily"].append(ms)
        tool.reset("d")
        ms, profile, work = measured(spark, lambda: tool.backfill("d", args.batches))
        batch.append(phase_rows(profile, work))
        clients["backfill"].append(ms)
    batch_path = next(p for p in batch[0] if p.endswith("/batch"))
    results["no-op run"] = medians(with_call(noop, clients["no-op"]))
    results["daily run (one new day)"] = medians(with_call(daily, clients["daily"]))
    results[f"batch_size 1 backfill of {args.batches} days: the call"] = medians(with_call(batch, clients["backfill"]))
    per_batch = medians(batch, per=batch_path)
    one_batch = {p: r for p, r in per_batch.items() if p.startswith(batch_path)}
    results["batch_size 1: one batch (figures per batch)"] = one_batch
    for title, rows in results.items():
        print(table(f"{title}: medians of {args.rounds}", rows))
    profiled(tool, "noop", lambda: tool.run("a", newest))
    newest += 1
    profiled(tool, "daily", lambda: tool.run("a", newest))
    trips = []
    for _ in range(TRIP_ROUNDS):
        newest += 1
        time.sleep(IDLE_S)
        with round_trips() as sent:
            tool.run("a", newest)
        trips.append(sent)
    print(trips_table(f"daily run, each after {IDLE_S} s idle: JVM round trips by method, medians of {TRIP_ROUNDS}",
                      trips))
    OUT.mkdir(exist_ok=True)
    (OUT / "breakdown.json").write_text(json.dumps({"rows": spec.rows, "rounds": args.rounds, "at": time.time(),
                                                    "results": results}, indent=1))
    spark.stop()


if __name__ == "__main__":
    main()
