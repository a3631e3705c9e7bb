"""A scheduled spark-sql job, cold: pyspark-incr's daily run against the hand-written one, each a whole process.

    bash bench/compare.sh                          # first: its data, and each home's a built through its cold days
    .venv/bin/python bench/sql_job.py --rounds 5   # ~3 min at normal speed

compare.sh times its cold rows in PySpark processes (``bench/peers/run_<tool>.py``); a platform that schedules
SQL runs ``spark-sql -f`` instead, with the SQL-only settings of docs/operations.md ("Installing on a cluster"),
where the plugin's Python worker starts beside the JVM (``spark.incr.worker.eager``). Each round here builds the
next day of compare.sh's workload a (``bench.daily``) in fresh ``spark-sql -e`` processes, timed from launch to
exit, the order rotating:

- ``bare``: the hand-written job, ``INSERT OVERWRITE TABLE bench.daily PARTITION (ds) SELECT ...`` of that day;
- ``incr``: ``CALL incr.run(execution_time => ..., raise_on_failure => true)``, the worker started with the session;
- ``incr-late``: the same with ``spark.incr.worker.eager=false``, the worker started at the CALL (before 61206a1).

Both pyspark-incr variants share compare.sh's incr home, so a round builds two days there, one each in the
order they run, and the bare job the first of them. Every contender gets compare.sh's Spark settings (``local[2]``,
its shuffle partitions and driver memory) and the same console log configuration; the files each reads are read
through first (``common.read_through``). At the end one process per home checks that every day built holds the
source's rows. Not part of CI; figures in docs/benchmarks.md ("A scheduled spark-sql job").
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers"))

from common import (  # noqa: E402
    DAILY_SQL, OUTPUTS, Spec, compiled_as_installed, day, day_start, own_reads, read_through, save_samples, spark_conf,
)

CONTENDERS = ("bare", "incr", "incr-late")
OUTPUT = OUTPUTS["a"]


def home_of(contender: str) -> str:
    """Whose compare.sh home a contender's job runs in: both pyspark-incr variants share pyspark-incr's."""
    return "bare" if contender == "bare" else "incr"


def schedule(rounds: int, first_day: int) -> list[list[tuple[str, int]]]:
    """Each round's ``(contender, day)`` jobs in the order they run: who goes first rotates; of the round's two
    days the pyspark-incr variant running first builds the first (a run builds every day due up to its execution
    time, so the other order would build both in one job), the hand-written job the first too."""
    plan = []
    for r in range(rounds):
        order = CONTENDERS[r % 3:] + CONTENDERS[:r % 3]
        incr_days = iter((first_day + 2 * r, first_day + 2 * r + 1))
        plan.append([(name, first_day + 2 * r if name == "bare" else next(incr_days)) for name in order])
    return plan


def statement(contender: str, k: int) -> str:
    """The job's SQL building day ``k``."""
    if contender == "bare":
        select = DAILY_SQL.format(start=f"DATE '{day(k)}'", end=f"DATE '{day(k)}'")
        return f"INSERT OVERWRITE TABLE {OUTPUT} PARTITION (ds) {select}"
    return f"CALL incr.run(execution_time => '{day_start(k + 1):%Y-%m-%d %H:%M:%S}', raise_on_failure => true)"


def settings(spec: Spec, contender: str) -> dict[str, str]:
    """compare.sh's Spark settings for the contender's home, plus the job's own (the plugin's, SQL-only)."""
    from pyspark_incr.bridge.session import (
        CATALOG_CLASS, CATALOG_CONF, CLI_LOG_CONFIG, EXTENSIONS_CLASS, PYTHON_CONF,
    )

    conf = spark_conf(spec, home_of(contender))
    conf["spark.driver.extraJavaOptions"] += f" -Dlog4j2.configurationFile={CLI_LOG_CONFIG.as_uri()}"
    if contender == "bare":
        return {**conf, "spark.sql.sources.partitionOverwriteMode": "dynamic"}
    return {**conf, "spark.sql.extensions": EXTENSIONS_CLASS, CATALOG_CONF: CATALOG_CLASS, PYTHON_CONF: sys.executable,
            "spark.incr.stateSchema": "incr_state_a", "spark.incr.physicalSchema": "incr_physical_a",
            "spark.incr.worker.eager": "false" if contender == "incr-late" else "auto"}


def command(spec: Spec, contender: str, sql: str) -> list[str]:
    """``spark-submit --class SparkSQLCLIDriver`` (what ``bin/spark-sql`` runs) with the contender's settings."""
    import pyspark

    from pyspark_incr.bridge.session import SPARK_SQL_CLASS

    submit = Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"
    argv = ["bash", str(submit), "--class", SPARK_SQL_CLASS]
    if contender != "bare":
        from pyspark_incr.bridge.jar import shim_jar

        argv += ["--driver-class-path", str(shim_jar())]
    for key, value in settings(spec, contender).items():
        argv += ["--conf", f"{key}={value}"]
    return argv + ["-e", sql]


def job(spec: Spec, contender: str, k: int) -> float:
    """Run one job building day ``k``; its seconds from launch to exit. Fails loudly when it built nothing."""
    tool = home_of(contender)
    read_through(*own_reads(spec, tool))
    argv = command(spec, contender, statement(contender, k))
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=spec.home(tool), capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{contender} day {k}: exit {done.returncode}\n{done.stderr[-3000:]}")
    if tool == "incr" and f"\tbuild\t{day(k)} 00:00:00\t" not in done.stdout:
        raise SystemExit(f"{contender} built no day {day(k)} (already built? pass --first-day after the last day "
                         f"incr_state_a holds):\n{done.stdout[-2000:]}")
    return seconds


def check(spec: Spec, tool: str, days: list[int]) -> None:
    """One process in ``tool``'s home: every day built holds exactly the source's rows of that day."""
    built = ", ".join(f"DATE '{day(k)}'" for k in sorted(days))
    sql = (f"SELECT (SELECT COUNT(*) FROM {OUTPUT} WHERE ds IN ({built})) = "
           f"(SELECT COUNT(*) FROM src.events WHERE ds IN ({built}))")
    contender = "bare" if tool == "bare" else "incr-late"  # a check needs no early worker
    done = subprocess.run(command(spec, contender, sql), cwd=spec.home(tool), capture_output=True, text=True)
    if done.returncode != 0 or done.stdout.strip().splitlines()[-1:] != ["true"]:
        raise SystemExit(f"{tool}: the days built do not hold the source's rows:\n{done.stdout}{done.stderr[-2000:]}")


def report(samples: dict[str, list[float]]) -> str:
    """A table of medians, and each contender's ratio to the hand-written job's."""
    base = statistics.median(samples["bare"])
    lines = ["| contender | samples (s) | median | / bare |", "|---|---|---|---|"]
    for name in CONTENDERS:
        median = statistics.median(samples[name])
        lines.append(f"| {name} | {' / '.join(f'{s:.2f}' for s in samples[name])} | {median:.2f} s | "
                     f"{median / base:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=HERE / "out" / "work", help="compare.sh's work directory")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--first-day", type=int, default=None,
                        help="the first day built (default: the day after compare.sh's last cold b day)")
    args = parser.parse_args(argv)
    spec = Spec.load(args.work / "spec.json")
    first_day = args.first_day if args.first_day is not None else spec.days + spec.reps_b + 3
    if first_day + 2 * args.rounds > spec.days + spec.extra_days:
        parser.error(f"days {first_day}-{first_day + 2 * args.rounds - 1} run past the data "
                     f"(its last day is {spec.days + spec.extra_days - 1}): fewer --rounds or an earlier --first-day")
    compiled_as_installed()
    samples: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    built: dict[str, list[int]] = {"bare": [], "incr": []}
    for number, jobs in enumerate(schedule(args.rounds, first_day), start=1):
        for contender, k in jobs:
            samples[contender].append(job(spec, contender, k))
            built[home_of(contender)].append(k)
        print(f"# round {number}: " + ", ".join(f"{c} {samples[c][-1]:.2f} s" for c, _ in jobs), file=sys.stderr)
    for tool, days in built.items():
        check(spec, tool, days)
    print(report(samples))
    print(f"samples in {save_samples('sql-job', {'first_day': first_day, 'samples': samples})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
