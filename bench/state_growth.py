"""State growth: a no-op ``CALL incr.run()`` after thousands of recorded runs, against a fresh state.

Five hourly INCREMENTAL_BY_TIME_RANGE models are applied (the fresh state), then the state
of ``--runs`` hourly runs is recorded as each run leaves it: one intervals file per model,
a runs file, a lock-acquire and a lock-release file, and the compaction a writing call does
after it (:func:`pyspark_incr.state.compact.after_call`). The files are written with Arrow
straight into the state tables' directories, as the runs' appends would have (a real run
costs seconds; 5,000 of them would take hours), with their ``seq`` and times spread over the
past hours, so they are settled.

The same history is also recorded into a second state schema without compaction, to show
what compaction saves.

    .venv/bin/python bench/state_growth.py [--runs 5000] [--repeat 15]

Each figure is the median of ``--repeat`` no-op runs, in two ways:

- warm: one session calling repeatedly (a notebook, a Thrift server): state tables whose
  files did not change are not read again;
- cold: every process cache of state dropped before each call (what a new process, a
  scheduled job, pays for reading state; the JVM stays warm).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid

import pyarrow.parquet as pq

from pyspark_incr.state import compact
from pyspark_incr.state import store as state_store
from pyspark_incr.state import tables as t

HOUR = 3_600_000
MODELS = 5


def setup(spark, runs: int) -> tuple[list[str], int]:
    """Source data and the models; returns the model names and the execution time all is built by."""
    end = (int(time.time() * 1000) // HOUR) * HOUR
    start = end - (runs + 24) * HOUR
    spark.sql("CREATE DATABASE IF NOT EXISTS raw")
    spark.range(0, 1000).selectExpr(f"timestamp_millis({start} + id * {HOUR // 4}) AS ts", "id AS x") \
        .write.mode("overwrite").format("parquet").saveAsTable("raw.events")
    names = [f"bench.m{i}" for i in range(MODELS)]
    for name in names:
        spark.sql(_create(name, start))
    return names, end


def _create(name: str, start_ms: int) -> str:
    from pyspark_incr.sqltext import call_sql

    definition = (f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ts, batch_size 100000), "
                  f"start '{_iso(start_ms)}', cron '@hourly'); "
                  "SELECT ts, x FROM raw.events WHERE ts BETWEEN @start_dt AND @end_dt")
    return call_sql("create_model", definition=definition)


def record_history(spark, schema: str, runs: int, end_ms: int, compacting: bool) -> None:
    """The files ``runs`` hourly runs leave in ``schema``'s state tables (and the compactions after them)."""
    store = state_store.StateStore(spark, schema)
    tables = {e.model: e for e in store.environment("prod").values()}
    where = {table.name: state_store.table_location(spark, schema, table.name).toUri().getPath()
             for table in (t.INTERVALS, t.RUNS, t.LOCKS)}
    now_ns = time.time_ns()
    first_ns = now_ns - (runs + 1) * 2_000_000_000 - compact.SETTLED_MS * 1_000_000 * 2
    for k in range(runs):
        seq = first_ns + k * 2_000_000_000  # two seconds apart, all settled
        hour = end_ms - (runs - k) * HOUR
        run_id = uuid.uuid4().hex
        for i, entry in enumerate(tables.values()):
            row = {**t.interval_row(entry.table_name, entry.fingerprint, entry.model, hour, hour + HOUR, "add",
                                    run_id), "seq": seq + i, "at": _ts(seq)}
            _file(where, t.INTERVALS, [row])
        _file(where, t.RUNS, [{"run_id": run_id, "procedure": "run", "env": "prod", "model": e.model,
                               "fingerprint": e.fingerprint, "start_ms": hour, "end_ms": hour + HOUR,
                               "status": "ok", "rows": 4, "message": "build", "started_at": _ts(seq),
                               "finished_at": _ts(seq)} for e in tables.values()])
        for j, op in enumerate(("acquire", "release")):
            _file(where, t.LOCKS, [{"lock_key": f"table {e.table_name}", "owner": f"{run_id}@bench:1",
                                    "procedure": "run", "op": op, "lease_until_ms": seq // 1_000_000 + 300_000,
                                    "seq": seq + 100 + j, "at": _ts(seq)} for e in tables.values()])
        if compacting:
            compact.after_call(spark, schema)
    for table in t.ALL_TABLES:
        spark.catalog.refreshTable(table.qualified(schema))


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000))


def _file(where: dict[str, str], table: t.StateTable, rows: list[dict]) -> None:
    pq.write_table(t.to_arrow(table, rows), f"{where[table.name]}/part-{uuid.uuid4().hex}.snappy.parquet")


def _ts(seq_ns: int):
    from datetime import datetime, timezone

    return datetime.fromtimestamp(seq_ns / 1e9, timezone.utc)


def noop_runs(spark, schema: str, end_ms: int, repeat: int, cold: bool) -> float:
    """Median seconds of ``CALL incr.run()`` with nothing due, state read from ``schema``."""
    from pyspark_incr.sqltext import call_sql

    spark.conf.set("spark.incr.stateSchema", schema)
    sql = call_sql("run", execution_time=_iso(end_ms))
    assert spark.sql(sql).collect() == [], "the bench expects nothing to be due"
    timings = []
    for _ in range(repeat):
        if cold:
            state_store._session_cache.clear()
        started = time.perf_counter()
        rows = spark.sql(sql).collect()
        timings.append(time.perf_counter() - started)
        assert rows == []
    return statistics.median(timings)


def file_count(spark, schema: str) -> int:
    return sum(len(compact.data_files(spark, schema, table.name)) for table in t.ALL_TABLES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    from pyspark_incr.bridge.session import embedded_session
    from pyspark_incr.sqltext import call_sql

    spark = embedded_session(tempfile.mkdtemp(prefix="incr_state_growth_"))
    spark.sparkContext.setLogLevel("ERROR")
    schemas = {"fresh": "state_fresh", "compacted": "state_compacted", "uncompacted": "state_uncompacted"}
    for schema in schemas.values():
        spark.conf.set("spark.incr.stateSchema", schema)
        spark.conf.set("spark.incr.physicalSchema", schema + "_physical")
        if schema == schemas["fresh"]:
            names, end_ms = setup(spark, args.runs)
        else:
            for name in names:
                spark.sql(_create(name, end_ms - (args.runs + 24) * HOUR))
        phase = time.perf_counter()
        spark.sql(call_sql("apply", execution_time=_iso(end_ms)))
        print(f"applied {len(names)} models to {schema} in {time.perf_counter() - phase:.0f} s", flush=True)
    started = time.perf_counter()
    record_history(spark, schemas["compacted"], args.runs, end_ms, compacting=True)
    recorded = time.perf_counter() - started
    record_history(spark, schemas["uncompacted"], args.runs, end_ms, compacting=False)
    figures = {}
    for label, schema in schemas.items():
        figures[label] = {how: noop_runs(spark, schema, end_ms, args.repeat, how == "cold") for how in ("warm", "cold")}
        figures[label]["files"] = file_count(spark, schema)
    print(f"{args.runs} recorded runs of {MODELS} hourly models (history with compaction written in {recorded:.0f} s)")
    print(f"{'state':<28}{'files':>8}{'no-op run, warm':>18}{'ratio':>8}{'no-op run, cold':>18}{'ratio':>8}")
    for label, f in figures.items():
        base = figures["fresh"]
        print(f"{label:<28}{f['files']:>8}{f['warm'] * 1000:>15.0f} ms{f['warm'] / base['warm']:>8.2f}"
              f"{f['cold'] * 1000:>15.0f} ms{f['cold'] / base['cold']:>8.2f}")
    spark.stop()


if __name__ == "__main__":
    main()
