"""A quick check of the hot path (a few minutes, not part of CI): compare.sh's b and c, warm, against hand-written SQL.

    .venv/bin/python bench/quick.py                                  # prints the table
    .venv/bin/python bench/quick.py --max-ratio 1.3 --max-noop-ms 60  # exits 1 when either is exceeded
    .venv/bin/python bench/quick.py --metastore                       # against a metastore service

In one warm process with one Spark session (the settings and data of compare.sh: ``bench/peers/``),
pyspark-incr (``CALL incr.run`` through Spark SQL, as ``run_incr.py``) and hand-written Spark SQL (the
``INSERT OVERWRITE`` of ``run_bare.py``, into a table of its own) each backfill the 365-day window; then
``--rounds`` interleaved rounds (the order of the two alternates) time

- b: the next day's run, each contender writing the same new day;
- c: a run with nothing due (pyspark-incr only: a hand-written job keeps no state), as a scheduled job
  issues it (``raise_on_failure => true``, its rows not read), and again with its rows collected in
  PySpark (``.collect()``: pyspark's own cost of reading any result, 2-20 ms here);
- the floor: ``SELECT 1`` collected through Spark SQL (a Spark job), and ``CALL incr.environments()``
  (a procedure that does almost nothing, not collected: what any ``CALL`` costs here, the no-op run's floor).

``--scd2 N`` adds compare.sh's f0 and f: the SCD type 2 model's first load by each contender (once each,
order alternating with nothing: one sample), then N interleaved snapshot rounds (1M keys, 1 % changing),
then 3 interleaved rounds of the first load again (each contender's table and pyspark-incr's schemas
dropped first, as compare.sh's f0), with a third contender: the hand-written first load keeping one row
per key (``ROW_NUMBER() ... = 1``), as SQLMesh's ``DISTINCT ON`` and pyspark-incr do, and the plain one
does not (its source has one row per key; a snapshot in general need not).

``--chain N`` adds compare.sh's e: both contenders backfill the chain of 50 models (set-up), then N
interleaved rounds each build the next day through the chain; pyspark-incr's JVM round trips in each round
are printed by method (calls per run, ms per model: what its bookkeeping adds to a model's write).

``--backfill N`` adds compare.sh's a: N interleaved rounds of the 365-day first backfill by each contender,
each from nothing (pyspark-incr's schemas dropped, the hand-written table dropped and created again, neither
timed, as compare.sh's reset) and with the source's file listing forgotten (``REFRESH TABLE``, not timed: in
compare.sh, a reads days its warm-up never listed, so every contender lists them). pyspark-incr's phases
(:mod:`pyspark_incr.timings`) and JVM round trips are printed, and each contender's Spark jobs over 100 ms per
round: where a first backfill's time beyond the write goes.

``--metastore`` runs it all against a Hive metastore thrift service started for the run (Derby inside the
service; with ``--postgres URL``, a PostgreSQL database, as docs/operations.md sets one up), the way separate
applications share one catalog, instead of the embedded Derby of one application: each metastore call is
then a thrift round trip. Every b and c step's Hive metastore client calls (Spark's ``HiveCatalogMetrics``)
are counted and printed either way: a count, unlike a time, does not move with the machine.

Prints medians and ``incr / bare``; ``--max-ratio`` (on b) and ``--max-noop-ms`` (on c) turn it into a
check. Figures move 10-20 % with the machine's load (docs/benchmarks.md): compare ratios, on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers"))

from common import Spec, generate, point_items, register_sources, session  # noqa: E402
from run_bare import Bare  # noqa: E402
from run_incr import Incr, _at, _with_incr  # noqa: E402

sys.path.insert(0, str(HERE))
import metastore  # noqa: E402
import spark_work  # noqa: E402
from breakdown import medians, phase_rows, round_trips, trips_table  # noqa: E402
from breakdown import table as breakdown_table  # noqa: E402
from pyspark_incr import timings  # noqa: E402

DYNAMIC = "spark.sql.sources.partitionOverwriteMode"
#: The deduplicating hand-written first load's table (beside SideBare's).
DEDUP_TABLE = "bare.items_scd2_dedup"


class SideBare(Bare):
    """Hand-written SQL writing ``bare.*`` beside pyspark-incr's ``bench.*`` in the same catalog."""

    def setup(self) -> None:
        self.spark.sql("CREATE DATABASE IF NOT EXISTS bare")

    def output(self, workload: str) -> str:
        return super().output(workload).replace("bench.", "bare.", 1)

    def objects(self, workload: str) -> list[str]:
        return [name.replace("bench.", "bare.", 1) for name in super().objects(workload)]

    def step(self, action) -> None:
        """The bare job's own session setting around its step only (pyspark-incr runs without it)."""
        self.spark.conf.set(DYNAMIC, "dynamic")
        try:
            action()
        finally:
            self.spark.conf.unset(DYNAMIC)


def timed_ms(action) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default=str(HERE / "out" / "hotpath"),
                        help="data and catalog (shared with breakdown.py)")
    parser.add_argument("--rows", type=int, default=Spec.rows, help="events over the 365 days")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-ratio", type=float, help="fail when b's incr / bare is above this")
    parser.add_argument("--max-noop-ms", type=float, help="fail when c's median is above this (ms)")
    parser.add_argument("--scd2", type=int, default=0, metavar="N",
                        help="also time the SCD type 2 first load and N snapshot rounds (f0, f)")
    parser.add_argument("--chain", type=int, default=0, metavar="N",
                        help="also time N interleaved rounds of the chain of 50's next day (e)")
    parser.add_argument("--backfill", type=int, default=0, metavar="N",
                        help="also time N interleaved rounds of the 365-day first backfill (a), with its phases")
    metastore.add_options(parser)
    args = parser.parse_args(argv)
    if args.rounds < 5:
        parser.error("--rounds: at least 5 (medians of fewer move with every hiccup of the machine)")
    metastore.check(parser, args)
    spec = Spec(work=str(Path(args.work).resolve()), rows=args.rows)
    Path(spec.work).mkdir(parents=True, exist_ok=True)
    os.chdir(spec.work)
    service = metastore.started(Path(spec.work), args) if args.metastore else None
    try:
        return measured(args, spec, service)
    finally:
        if service is not None:
            service.stop()


def measured(args: argparse.Namespace, spec: Spec, service: metastore.MetastoreService | None) -> int:
    """Set up, time the rounds, print the report (its exit code)."""
    home, extra = "quick", _with_incr
    if service is not None:  # a home of its own: tables of the embedded catalog's names live in "quick"'s
        home, extra = f"quick_{metastore.kind(args)}", \
            (lambda builder: _with_incr(builder).config(metastore.URIS, service.uri))
    spark = session(spec, home, extra)
    generate(spark, spec)
    register_sources(spark, spec)
    incr, bare = Incr(spark, spec), SideBare(spark, spec)
    for tool in (incr, bare):
        tool.setup()
        tool.reset("a")
    print(f"# backfill of {spec.days} days by both (set-up, not timed)", file=sys.stderr)
    incr.backfill("a", spec.days)
    bare.step(lambda: bare.backfill("a", spec.days))
    newest = spec.days
    incr.run("a", newest)  # warm-up: each path once
    bare.step(lambda: bare.run("a", newest))
    incr.run("a", newest)
    spark.sql("SELECT 1").collect()
    spark.sql("CALL incr.environments()").collect()
    samples: dict[str, list[float]] = {"b incr": [], "b bare": [], "c incr": [], "c rows": [], "floor": [], "call": []}
    calls: dict[str, list[int]] = {"b incr": [], "b bare": [], "c incr": []}
    for k in range(args.rounds):
        newest += 1
        day = newest
        runs = [("b incr", lambda: incr.run("a", day)), ("b bare", lambda: bare.step(lambda: bare.run("a", day)))]
        for name, action in runs if k % 2 == 0 else runs[::-1]:
            with metastore_calls(spark) as counted:
                samples[name].append(timed_ms(action))
            calls[name].append(counted[0])
        with metastore_calls(spark) as counted:
            samples["c incr"].append(timed_ms(lambda: incr.run("a", day)))
        calls["c incr"].append(counted[0])
        samples["c rows"].append(timed_ms(lambda: spark.sql(f"CALL incr.run(execution_time => '{_at(day + 1)}')").collect()))
        samples["floor"].append(timed_ms(lambda: spark.sql("SELECT 1").collect()))
        samples["call"].append(timed_ms(lambda: spark.sql("CALL incr.environments()")))
    incr.check("a", newest)
    bare.check("a", newest)
    if args.scd2:
        samples.update(scd2_rounds(incr, bare, args.scd2))
    if args.chain:
        samples.update(chain_rounds(incr, bare, args.chain))
    if args.backfill:
        samples.update(backfill_rounds(incr, bare, args.backfill))
    spark.stop()
    return report(samples, args.max_ratio, args.max_noop_ms, calls)


@contextmanager
def metastore_calls(spark):
    """The Hive metastore client calls made while the block runs, in a one-element list filled at its end."""
    metrics = spark._jvm.org.apache.spark.metrics.source.HiveCatalogMetrics.METRIC_HIVE_CLIENT_CALLS()
    before, counted = metrics.getCount(), [0]
    yield counted
    counted[0] = metrics.getCount() - before


def scd2_rounds(incr: Incr, bare: SideBare, rounds: int) -> dict[str, list[float]]:
    """f0 (the first load, once each) and ``rounds`` interleaved f rounds (one snapshot each), checked."""
    spark = incr.spark
    samples: dict[str, list[float]] = {"f0 incr": [], "f0 bare": [], "f incr": [], "f bare": []}
    for tool in (incr, bare):
        tool.reset("f")
        tool.create_state("f")  # set-up, as in compare.sh (there timed as its own row, s)
    point_items(spark, 0)
    samples["f0 incr"].append(timed_ms(lambda: incr.run("f", 0)))
    samples["f0 bare"].append(timed_ms(lambda: bare.run("f", 0)))
    for snap in range(1, rounds + 1):
        point_items(spark, snap)
        runs = [("f incr", lambda: incr.run("f", snap)), ("f bare", lambda: bare.run("f", snap))]
        for name, action in runs if snap % 2 else runs[::-1]:
            samples[name].append(timed_ms(action))
    incr.check("f", rounds)
    bare.check("f", rounds)
    samples.update(first_loads_again(incr, bare))
    return samples


def chain_rounds(incr: Incr, bare: SideBare, rounds: int) -> dict[str, list[float]]:
    """``rounds`` interleaved next days of compare.sh's chain (e), after both backfill it; pyspark-incr's JVM
    round trips of each run printed per model, by method."""
    spec = incr.spec
    for tool in (incr, bare):
        tool.reset("e")
    print(f"# the chain's backfill by both ({spec.chain} models, set-up, not timed)", file=sys.stderr)
    incr.backfill("e", spec.days)
    bare.step(lambda: bare.backfill("e", spec.days))
    samples: dict[str, list[float]] = {"e incr": [], "e bare": []}
    sent: list[list[tuple[str, float]]] = []
    for k in range(rounds):
        newest = spec.days + k

        def incr_run() -> None:
            with round_trips() as trips:
                incr.run("e", newest)
            sent.append(trips)

        runs = [("e incr", incr_run), ("e bare", lambda: bare.step(lambda: bare.run("e", newest)))]
        for name, action in runs if k % 2 == 0 else runs[::-1]:
            samples[name].append(timed_ms(action))
    incr.check("e", spec.days + rounds - 1)
    bare.check("e", spec.days + rounds - 1)
    per_model = [[(m, ms / spec.chain) for m, ms in s] for s in sent]
    print(trips_table(f"e: pyspark-incr's JVM round trips by method, per run (calls) and per model (ms), "
                      f"medians of {rounds}", per_model, top=15))
    return samples


def backfill_rounds(incr: Incr, bare: SideBare, rounds: int) -> dict[str, list[float]]:
    """``rounds`` interleaved first backfills of the 365 days (a) by each contender from nothing, checked; per
    round, pyspark-incr's phases and JVM round trips and each contender's Spark jobs over 100 ms."""
    spark, days = incr.spark, incr.spec.days
    samples: dict[str, list[float]] = {"a incr": [], "a bare": []}
    timings.enable()
    phases: list[dict[str, dict[str, float]]] = []
    sent: list[list[tuple[str, float]]] = []

    def incr_backfill() -> None:
        with round_trips() as trips:
            incr.backfill("a", days)
        sent.append(trips)

    try:
        for k in range(rounds):
            runs = [("a incr", incr_backfill),
                    ("a bare", lambda: bare.step(lambda: bare.backfill("a", days)))]
            for name, action in runs if k % 2 == 0 else runs[::-1]:
                (incr if name == "a incr" else bare).reset("a")
                (incr if name == "a incr" else bare).create_state("a")  # set-up, as in compare.sh
                # compare.sh's a reads days its warm-up never listed: each contender lists the source here
                spark.catalog.refreshTable("src.events")
                ms, work = spark_work.timed(spark, action)
                samples[name].append(ms)
                if name == "a incr":
                    phases.append(phase_rows(timings.last(), work))
                jobs = ", ".join(f"{w.label[:40]!r} {w.ms:.0f}" for w in work if w.kind == "job" and w.ms > 100)
                print(f"# round {k + 1} {name}: {ms:.0f} ms; {sum(w.kind == 'job' for w in work)} jobs, "
                      f"over 100 ms: {jobs}", file=sys.stderr)
    finally:
        timings.disable()
    incr.check("a", days - 1)
    bare.check("a", days - 1)
    print(breakdown_table(f"a: pyspark-incr's first backfill by phase, medians of {rounds}", medians(phases)))
    print(trips_table(f"a: pyspark-incr's JVM round trips by method, medians of {rounds}", sent, top=12))
    return samples


def first_loads_again(incr: Incr, bare: SideBare, rounds: int = 3) -> dict[str, list[float]]:
    """``rounds`` interleaved first loads by pyspark-incr, the hand-written job and a deduplicating one, warm."""
    spark = incr.spark
    point_items(spark, 0)
    samples: dict[str, list[float]] = {"f0w incr": [], "f0w bare": [], "f0w dedup": []}
    runs = [("f0w incr", lambda: (incr.reset("f"), incr.create_state("f")), lambda: incr.run("f", 0)),
            ("f0w bare", lambda: bare.reset("f"), lambda: bare.run("f", 0)),
            ("f0w dedup", lambda: spark.sql(f"DROP TABLE IF EXISTS {DEDUP_TABLE}"),
             lambda: bare.first_load(DEDUP_TABLE, deduplicated=True))]
    for k in range(rounds):
        for name, reset, action in runs[k % 3:] + runs[:k % 3]:
            reset()  # each first load starts from nothing but pyspark-incr's empty state, as compare.sh's f0
            samples[name].append(timed_ms(action))
    incr.check("f", 0)
    bare.check("f", 0)
    if spark.table(DEDUP_TABLE).count() != spark.table("src.items").select("item_id").distinct().count():
        raise AssertionError(f"{DEDUP_TABLE}: not one row per key")
    spark.sql(f"DROP TABLE {DEDUP_TABLE}")
    return samples


def report(samples: dict[str, list[float]], max_ratio: float | None, max_noop_ms: float | None,
           calls: dict[str, list[int]] | None = None) -> int:
    """Print the table (and ``calls``, each step's metastore client calls); 1 when a given limit is exceeded."""
    med = {name: statistics.median(values) for name, values in samples.items()}
    ratio = med["b incr"] / med["b bare"]
    rounds = len(samples["b incr"])
    print(f"medians of {rounds} interleaved rounds, warm (ms)\n")
    print("| workload | bare | incr | incr / bare |\n|---|---|---|---|")
    print(f"| b: the next day | {med['b bare']:.0f} | {med['b incr']:.0f} | {ratio:.2f} |")
    print(f"| c: nothing due | n/a | {med['c incr']:.1f} | - |")
    if "c rows" in med:
        print(f"| c, its rows collected in PySpark | n/a | {med['c rows']:.1f} | - |")
    print(f"| floor: SELECT 1 through Spark SQL | {med['floor']:.1f} | | |")
    if "call" in med:
        print(f"| floor: CALL incr.environments() | | {med['call']:.1f} | |")
    for key, what in (("a", f"a: first backfill (median of {len(samples.get('a incr', ()))})"),
                      ("e", f"e: chain of 50, one new day (median of {len(samples.get('e incr', ()))})"),
                      ("f0", "f0: SCD2 first load (one sample)"), ("f", "f: SCD2 one snapshot"),
                      ("f0w", "f0 again, warm (median of 3)")):
        if f"{key} incr" in med:
            bare_ms, incr_ms = med[f"{key} bare"], med[f"{key} incr"]
            print(f"| {what} | {bare_ms:.0f} | {incr_ms:.0f} | {incr_ms / bare_ms:.2f} |")
    if "f0w dedup" in med:
        dedup_ms = med["f0w dedup"]
        print(f"| f0 again, against a hand-written first load keeping one row per key | {dedup_ms:.0f} "
              f"| {med['f0w incr']:.0f} | {med['f0w incr'] / dedup_ms:.2f} |")
    if calls:
        counts = ", ".join(f"{name} {'/'.join(map(str, sorted(set(n))))}" for name, n in calls.items())
        print(f"\nHive metastore client calls a step (every count seen): {counts}")
    failed = []
    if max_ratio is not None and ratio > max_ratio:
        failed.append(f"b: incr / bare {ratio:.2f} is above --max-ratio {max_ratio}")
    if max_noop_ms is not None and med["c incr"] > max_noop_ms:
        failed.append(f"c: {med['c incr']:.1f} ms is above --max-noop-ms {max_noop_ms}")
    for line in failed:
        print(f"FAILED {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
