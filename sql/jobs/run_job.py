"""The scheduled job for spark-submit: ``CALL incr.run(...)``, print the rows, exit non-zero on a failure.

    spark-submit [--master ... --conf ...] sql/jobs/run_job.py --env prod --execution-time '2024-01-09 06:00:00'

The cluster's catalog and warehouse come from spark-submit's own ``--conf`` (or
``spark-defaults.conf``); this script adds the plugin with
``configure_spark_with_incr``. pyspark-incr must be importable by the driver's
Python (installed, or on ``PYTHONPATH``).

Exit codes: 0 every step succeeded (or nothing was due); 1 a step failed (each
failed model and interval is printed on stderr; the rows of every step are in
``incr.history``); 2 the call itself failed (bad argument, lock timeout, ...).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

FAILED = 1
CALL_FAILED = 2


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The job's arguments; each one left out takes the procedure's default."""
    parser = argparse.ArgumentParser(prog="run_job.py", description=__doc__.splitlines()[0])
    parser.add_argument("--env", default=None, help="environment (default: spark.incr.defaultEnv, else prod)")
    parser.add_argument("--select", default=None, help="models to run, as incr.run's select (default: all)")
    parser.add_argument("--execution-time", default=None, help="what 'now' is, ISO timestamp in UTC (default: now)")
    parser.add_argument("--concurrency", type=int, default=None, help="models built at once")
    parser.add_argument("--fail-fast", action="store_true", help="start nothing after the first failed batch")
    return parser.parse_args(argv)


def run(spark: Any, args: argparse.Namespace) -> int:
    """Run the job in ``spark``; the exit code."""
    from pyspark_incr.sqltext import call_sql
    from pyspark_incr.writers.base import first_line

    # Rows rather than raise_on_failure: the job prints every step, then decides its exit code.
    statement = call_sql("run", env=args.env, select=args.select, execution_time=args.execution_time,
                         concurrency=args.concurrency, fail_fast=True if args.fail_fast else None,
                         raise_on_failure=False)
    try:
        df = spark.sql(statement)
        rows = df.collect()
    except Exception as error:  # noqa: BLE001 - any failure of the call is the job's failure
        _error(spark, f"run_job: {statement} failed: {first_line(error)}")
        return CALL_FAILED
    print("\t".join(df.columns))
    for row in rows:
        print("\t".join("" if v is None else str(v) for v in row))
    failed = [r for r in rows if r.status == "failed"]
    for r in failed:
        _error(spark, f"run_job: model {r.model} [{r.start}, {r.end}) failed: {r.message}")
    if failed:
        _error(spark, f"run_job: {len(failed)} step(s) failed; every step's row is in CALL incr.history()")
        return FAILED
    _error(spark, f"run_job: {len(rows)} step(s), none failed")
    return 0


def _error(spark: Any, line: str) -> None:
    """Write ``line`` to the job's stderr.

    Through the JVM's: spark-submit's PythonRunner merges the Python driver's own
    stderr into spark-submit's stdout, where an orchestrator would not look for errors.
    """
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:  # Spark Connect: no JVM here, and no spark-submit in between
        print(line, file=sys.stderr, flush=True)
        return
    sys.stdout.flush()
    jvm.System.err.println(line)
    jvm.System.err.flush()



def main(argv: list[str] | None = None) -> int:
    """Build the session with the plugin, run the job, stop the session."""
    from pyspark.sql import SparkSession

    from pyspark_incr import configure_spark_with_incr

    args = parse_args(argv)
    # no appName: spark-submit's --name (default: this file's name) is what the cluster's UI shows
    spark = configure_spark_with_incr(SparkSession.builder).getOrCreate()
    try:
        return run(spark, args)
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
