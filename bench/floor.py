"""What a statement costs in a plain pyspark session against pyspark-incr's embedded one (a lead for #28).

    .venv/bin/python bench/floor.py plain
    .venv/bin/python bench/floor.py incr

Prints warm medians (ms) of ``spark.sql("SELECT 1").collect()``, of ``spark.sql("SELECT 1")`` alone
(parse and analysis), of ``spark.range(1).collect()`` and, in the embedded session, where one daily
model is applied, a no-op ``CALL incr.run`` four ways: collected as PySpark users do, without the
collect (the command runs at ``sql()``), with ``raise_on_failure => true`` as a scheduled job issues it
(bench/compare.sh's c; 200 samples), and the procedure's body alone (``procedures.dispatch``, no
Spark SQL); then ``CALL incr.environments()``, a CALL doing almost nothing. Run both, one after the
other, on an idle machine: what separates the no-op figures from the body alone is pyspark's collect
and Spark's CALL path, not the procedure.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path


def timed(action, rounds: int = 60) -> float:
    """The median wall time of ``action`` in ms."""
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(samples), 1)


def session(mode: str):
    """A warm local session: pyspark's own, or the plugin's embedded one in a fresh home."""
    if mode == "plain":
        from pyspark.sql import SparkSession

        return (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    from pyspark_incr.bridge.session import embedded_session

    return embedded_session(Path(tempfile.mkdtemp(prefix="incr-floor-")))


def main(mode: str) -> None:
    spark = session(mode)
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("SELECT 1").collect()
    print(f"{mode}: sql('SELECT 1').collect() {timed(lambda: spark.sql('SELECT 1').collect())} ms")
    print(f"{mode}: sql('SELECT 1') {timed(lambda: spark.sql('SELECT 1'))} ms")
    print(f"{mode}: range(1).collect() {timed(lambda: spark.range(1).collect())} ms")
    if mode == "incr":
        noop_run(spark)
        trivial = timed(lambda: spark.sql("CALL incr.environments()").collect(), 20)
        print(f"{mode}: CALL incr.environments() {trivial} ms")
    spark.stop()


#: One daily model over ten days of a raw table, applied, so that a run at the same time has nothing to do.
MODEL = ("MODEL (name floor.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
         "cron '@daily'); SELECT ds, SUM(v) AS total FROM floor_raw.events WHERE ds BETWEEN @start_ds AND @end_ds "
         "GROUP BY ds")


def noop_run(spark) -> None:
    """Apply MODEL, then time a no-op run: collected, not collected, and its body alone."""
    from pyspark_incr.procedures import dispatch
    from pyspark_incr.sqltext import call_sql

    spark.sql("CREATE DATABASE IF NOT EXISTS floor_raw")
    spark.sql("CREATE TABLE floor_raw.events USING parquet AS "
              "SELECT date_add(DATE'2024-01-01', CAST(id AS INT)) AS ds, id AS v FROM range(10)")
    spark.sql(call_sql("create_model", definition=MODEL))
    spark.sql(call_sql("apply", execution_time="2024-01-05")).collect()
    run = call_sql("run", execution_time="2024-01-05")
    spark.sql(run).collect()
    print(f"incr: no-op {run} collected {timed(lambda: spark.sql(run).collect(), 40)} ms")
    print(f"incr: the same, not collected {timed(lambda: spark.sql(run), 40)} ms")
    scheduled = call_sql("run", execution_time="2024-01-05", raise_on_failure=True)
    spark.sql(scheduled)
    print(f"incr: as a scheduled job issues it, {scheduled}, not collected {timed(lambda: spark.sql(scheduled), 200)} ms")
    body = timed(lambda: dispatch(spark, "run", {"execution_time": "2024-01-05"}), 40)
    print(f"incr: its body, dispatch(spark, 'run', ...) {body} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "incr")
