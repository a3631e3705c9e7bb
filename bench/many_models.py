"""Many models, one of them due: what the idle ones add to a scheduled run (not part of CI).

    .venv/bin/python bench/many_models.py                          # 1,000 models, prints the table
    .venv/bin/python bench/many_models.py --models 50 --rounds 5   # a quick look
    .venv/bin/python bench/many_models.py --max-ms 300             # exits 1 when (a) is above 300 ms
    .venv/bin/python bench/many_models.py --home /tmp/many --keep  # set up once, then reuse the set-up
    .venv/bin/python bench/many_models.py --metastore              # against a metastore service

Issue #28's goal: a run over 1,000 models of which one is due takes under 300 ms warm. In one warm process
with one embedded session (``embedded_session``, in a fresh temporary home, or in ``--home``), a project of
``--models`` models, one daily and the others monthly (the models of ``tests/test_run_fast_path.py``), is
written and applied by one ``CALL incr.apply`` (the set-up, timed once and printed); then ``--warm-up``
untimed rounds (the daily model's last day restated, and a run with nothing due), two checked warm-up runs, and
``--rounds`` interleaved rounds (the order of a and b alternates) time

- a: ``CALL incr.run`` over all the models, the daily one due (a new day), the monthly ones not;
- b: the same for the daily model alone (``select => '<db>.daily'``, another new day);
- c: ``CALL incr.run`` over all the models with nothing due (b's execution time again),

each issued as a scheduled job issues it (``raise_on_failure => true``, its rows not read: the CALL runs
when ``spark.sql`` returns). Prints medians and a - b, what the idle models cost, each also as this process's
CPU (its Python side: the plan and the run's bookkeeping, not the JVM's work); ``--max-ms`` (on a) turns
it into a check. The set-up builds every model once in one apply (1,000 took four minutes on a 2-core
machine); ``--home DIR --keep`` keeps it for the next invocation. Figures move 10-20 % with the machine's
load (docs/benchmarks.md), far more on a busy one: read them on an idle machine. ``--metastore`` (and
``--postgres URL``) runs it against a Hive metastore service started in the home (``bench/metastore.py``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import metastore  # noqa: E402

#: The database of the models; the state and physical schemas are named after it.
DB = "many"
DAILY = "daily"
#: The set-up's execution time: the daily model built from DAILY_START, the monthly ones for MONTHLY_START's month.
APPLIED_AT = date(2024, 3, 1)
DAILY_START, MONTHLY_START = "2024-02-26", "2024-02-01"
#: Written into the home once the set-up succeeded: what --keep reuses.
MARKER = "many_models.json"
#: Days each round builds (a and b each build one), and the warm-up's (a and b once each).
DAYS_PER_ROUND, WARM_UP_DAYS = 2, 2
#: Untimed warm-up rounds before the checked warm-up: each restates the daily model's last built day and runs
#: every model with nothing due. A process that reuses a kept set-up starts with a cold JVM, and two warm-up runs
#: left a and b 2x slower than after the set-up had warmed it (597/484 against 274/226 ms at 8603117).
WARM_UP_ROUNDS = 20
#: Every timed run must fall in one month, or the monthly models become due: 30 execution dates at most.
MAX_ROUNDS = 14


def model_text(db: str, name: str, cron: str, start: str) -> str:
    """tests/test_run_fast_path.py's model: a one-row time-range model (cheap to build: the run is what is timed)."""
    return (f"MODEL (name {db}.{name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), cron '{cron}', "
            f"start '{start}');\nSELECT CAST(@start_ds AS DATE) AS ds, 1 AS v\n")


def write_project(root: Path, models: int) -> None:
    folder = root / "models"
    if folder.exists():
        shutil.rmtree(folder)  # a failed set-up's leftovers: the project must hold exactly --models models
    folder.mkdir(parents=True)
    (folder / f"{DAILY}.sql").write_text(model_text(DB, DAILY, "@daily", DAILY_START))
    width = len(str(models))
    for i in range(models - 1):
        name = f"monthly_{i:0{width}d}"
        (folder / f"{name}.sql").write_text(model_text(DB, name, "@monthly", MONTHLY_START))


def at(execution: date) -> str:
    """The execution time of a run on ``execution``: half past midnight, when the day before it is complete."""
    return f"{execution:%Y-%m-%d} 00:30:00"


def schedule(last_built: date, days: int) -> tuple[date | None, date]:
    """(a catch-up run's execution date or None, the first timed run's) for ``days`` runs, one new day each.

    The runs take consecutive execution dates, all in one month and none on its first day: the monthly
    models were built up to the month before it, so they stay idle. When the month left is too short (a
    --keep home after earlier invocations), a catch-up run on the next month's first day builds them first.
    """
    first = last_built + timedelta(days=2)  # the day after last_built's execution date
    catch_up = None
    while first.day == 1 or (first + timedelta(days=days - 1)).month != first.month:
        catch_up = first if first.day == 1 else (first.replace(day=28) + timedelta(days=4)).replace(day=1)
        first = catch_up + timedelta(days=1)
    return catch_up, first


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=1000, help="models in the project: one daily, the others monthly")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--home", help="the embedded session's home, kept (default: a fresh temporary one, removed)")
    parser.add_argument("--keep", action="store_true", help="reuse --home's set-up of a previous invocation")
    parser.add_argument("--warm-up", type=int, default=WARM_UP_ROUNDS,
                        help="untimed rounds first (a restatement of the daily model's last day and a run with "
                             "nothing due each), so a process reusing a kept set-up is read warm")
    parser.add_argument("--max-ms", type=float, help="fail when a's median (all the models, one due) is above this")
    metastore.add_options(parser)
    args = check_args(parser, parser.parse_args(argv))

    from pyspark_incr.bridge.session import embedded_builder
    from pyspark_incr.sqltext import call_sql

    home = Path(args.home).resolve() if args.home else Path(tempfile.mkdtemp(prefix="incr-many-"))
    marker = home / MARKER
    if marker.exists() and not args.keep:
        parser.error(f"--home {home} holds a set-up already: add --keep to reuse it, or give another --home")
    made = json.loads(marker.read_text()) if marker.exists() else {}
    kept = made.get("models")
    if kept is not None and kept != args.models:
        parser.error(f"--home {home} holds a set-up of {kept} models: --models {kept}, or another --home")
    if kept is not None and made.get("metastore", "embedded") != metastore.kind(args):
        parser.error(f"--home {home} holds a set-up whose metastore is {made.get('metastore', 'embedded')!r}: "
                     "the same --metastore/--postgres options, or another --home")
    service = metastore.started(home, args) if args.metastore else None
    spark = None
    try:
        builder = embedded_builder(home)
        spark = (builder.config(metastore.URIS, service.uri) if service else builder).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        spark.conf.set("spark.incr.stateSchema", f"{DB}_state")
        spark.conf.set("spark.incr.physicalSchema", f"{DB}_physical")
        table = f"{DB}.{DAILY}"

        def run(execution: date, collect: bool = False, **select):
            # raise_on_failure: a failed step fails the statement, so a scheduled job reads no rows
            df = spark.sql(call_sql("run", execution_time=at(execution), raise_on_failure=True, **select))
            return df.collect() if collect else None

        if kept is None:
            project = home / "project"
            started = time.perf_counter()
            write_project(project, args.models)
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
            rows = spark.sql(call_sql("apply", project=str(project), execution_time=f"{APPLIED_AT} 00:00:00")).collect()
            setup_s = time.perf_counter() - started
            check_applied(rows, args.models)
            marker.write_text(json.dumps({"models": args.models, "metastore": metastore.kind(args)}))
            print(f"set-up: {args.models} models written and applied by one CALL incr.apply in {setup_s:.1f} s",
                  flush=True)
        last_built = built_through(spark, table)
        days = WARM_UP_DAYS + DAYS_PER_ROUND * args.rounds
        catch_up, day = schedule(last_built, days)
        if catch_up is not None:
            print(f"# catch-up run on {catch_up} (the monthly models' month ended; not timed)", file=sys.stderr)
            started = time.perf_counter()
            run(catch_up, collect=True)
            print(f"# catch-up: {time.perf_counter() - started:.1f} s", file=sys.stderr)
        warm_up(run, spark, table, last_built, day - timedelta(days=1), args.warm_up)
        first_day = day - timedelta(days=1)  # what check_daily looks at: a catch-up's batch spans days in one row
        # Warm-up, collected so that the set-up is checked once: one model due, then nothing.
        for select in ({}, {"select": table}):
            rows = run(day, collect=True, **select)
            expect_one_due(rows, table, day)
            day += timedelta(days=1)
        if rows := run(day - timedelta(days=1), collect=True):
            raise SystemExit(f"a run with nothing due did something: {[(r.model, r.status) for r in rows]}")
        samples: dict[str, list[float]] = {"all": [], "alone": [], "noop": []}
        cpu: dict[str, list[float]] = {name: [] for name in samples}
        for k in range(args.rounds):
            # a and b each get a day of their own: the second at the first's time would find nothing due
            runs = [("all", {}), ("alone", {"select": table})]
            for name, select in [*(runs if k % 2 == 0 else runs[::-1]), ("noop", None)]:
                if select is None:  # c: the last day again, nothing due
                    spent = timed(lambda: run(day - timedelta(days=1)))
                else:
                    spent = timed(lambda: run(day, **select))
                    day += timedelta(days=1)
                samples[name].append(spent[0])
                cpu[name].append(spent[1])
        check_daily(spark, table, first_day, day - timedelta(days=2))
    finally:
        if spark is not None:
            spark.stop()
        if service is not None:
            service.stop()
        if not args.home:
            shutil.rmtree(home, ignore_errors=True)
    return report(samples, args.models, args.max_ms, cpu)


def timed(action) -> tuple[float, float]:
    """``action``'s wall-clock ms, and the CPU ms this process spent meanwhile: every Python thread's (the py4j
    callback thread serving the CALL too), not the JVM's. A busy machine moves the second far less than the first."""
    wall, cpu = time.perf_counter(), time.process_time()
    action()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def warm_up(run, spark, table: str, built: date, idle: date, rounds: int) -> None:
    """``rounds`` untimed rounds: ``built`` (a day the daily model holds) restated, then a run on ``idle`` (nothing due).

    A restatement builds and publishes a day as a run does, without using up one of the month's execution dates.
    """
    from pyspark_incr.sqltext import call_sql

    started = time.perf_counter()
    for _ in range(rounds):
        spark.sql(call_sql("restate", model=table, start=str(built), end=str(built), execution_time=at(idle),
                           raise_on_failure=True))
        run(idle)
    print(f"# warm-up: {rounds} rounds in {time.perf_counter() - started:.1f} s", file=sys.stderr)


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    if args.rounds < 5:
        parser.error("--rounds: at least 5 (medians of fewer move with every hiccup of the machine)")
    if args.rounds > MAX_ROUNDS:
        parser.error(f"--rounds: at most {MAX_ROUNDS} (the runs must fit in one month, the idle models' period)")
    if args.warm_up < 0:
        parser.error("--warm-up: 0 or more rounds")
    if args.models < 2:
        parser.error("--models: at least 2 (the daily model and an idle one)")
    if args.keep and not args.home:
        parser.error("--keep needs --home (the temporary home is removed at the end)")
    metastore.check(parser, args)
    return args


def check_applied(rows: list, models: int) -> None:
    bad = [r for r in rows if r.status != "ok"]
    if bad:
        raise SystemExit(f"the set-up's apply: {len(bad)} of {len(rows)} steps not ok, first {bad[0].model}: "
                         f"{bad[0].message}")
    if len({r.model for r in rows}) != models:
        raise SystemExit(f"the set-up's apply built {len({r.model for r in rows})} models, not {models}")


def expect_one_due(rows: list, table: str, execution: date) -> None:
    """The run built the daily model's day before ``execution``, and nothing else."""
    got = [(r.model, r.start.date(), r.status) for r in rows]
    if got != [(table, execution - timedelta(days=1), "ok")]:
        raise SystemExit(f"expected only {table} due on {execution}, the run did: {got}")


def built_through(spark, table: str) -> date:
    """The last day the daily model's state holds (its table cannot tell: a batch of several days is one row)."""
    from pyspark_incr.sqltext import call_sql

    ends = [r.end for r in spark.sql(call_sql("status", model=table)).collect() if r.state == "covered"]
    if not ends:
        raise SystemExit(f"{table} has nothing built: the set-up did not finish (another --home, without --keep)")
    return max(ends).date() - timedelta(days=1)


def check_daily(spark, table: str, oldest: date, newest: date) -> None:
    """One row per day from ``oldest`` to ``newest``: each of this invocation's runs built its day, once."""
    count, distinct, first, last = spark.sql(
        f"SELECT count(*), count(DISTINCT ds), min(ds), max(ds) FROM {table} WHERE ds >= DATE'{oldest}'").first()
    expected = (newest - oldest).days + 1
    if (count, distinct, first, last) != (expected, expected, oldest, newest):
        raise SystemExit(f"{table} holds {count} rows ({distinct} days, {first} to {last}) from {oldest}; expected "
                         f"{expected}, one per day to {newest}: the runs did not all build their day")


def report(samples: dict[str, list[float]], models: int, max_ms: float | None,
           cpu: dict[str, list[float]]) -> int:
    """Print the table (wall-clock medians, and the medians of this process's CPU: its Python side); 1 when a's
    median is above ``max_ms``."""
    med = {name: statistics.median(values) for name, values in samples.items()}
    used = {name: statistics.median(values) for name, values in cpu.items()}
    print(f"medians of {len(samples['all'])} interleaved rounds, warm (ms)\n")
    print("| run | ms | Python CPU ms |\n|---|---|---|")
    print(f"| a: {models} models, one due | {med['all']:.0f} | {used['all']:.0f} |")
    print(f"| b: the due model alone | {med['alone']:.0f} | {used['alone']:.0f} |")
    print(f"| c: {models} models, nothing due | {med['noop']:.1f} | {used['noop']:.1f} |")
    print(f"| a - b: cost of the {models - 1} idle models | {med['all'] - med['alone']:.0f} | "
          f"{used['all'] - used['alone']:.0f} |")
    if max_ms is not None and med["all"] > max_ms:
        print(f"FAILED a: {med['all']:.0f} ms is above --max-ms {max_ms:g}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
