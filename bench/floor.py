"""What a statement costs in a plain pyspark session against pyspark-incr's embedded one (a lead for #28).

    .venv/bin/python bench/floor.py plain
    .venv/bin/python bench/floor.py incr

Prints warm medians (ms) of ``spark.sql("SELECT 1").collect()``, of ``spark.sql("SELECT 1")`` alone
(parse and analysis), of ``spark.range(1).collect()`` and, in the embedded session, of
``CALL incr.environments()``. Run both, one after the other, on an idle machine: a difference in the
first line that the others do not show is a cost the plugin's session adds to every query.
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
        print(f"{mode}: CALL incr.environments() {timed(lambda: spark.sql('CALL incr.environments()').collect(), 20)} ms")
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "incr")
