"""State tables stay small: appends are atomic files, and settled files fold into one without changing state."""

from __future__ import annotations

import time

import pyarrow.parquet as pq
import pytest

from conftest import call as _call, physical
from pyspark_incr.intervals import to_ms
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.state import compact
from pyspark_incr.state import tables as t
from pyspark_incr.state.store import StateStore, table_location

DAY = 86_400_000
#: Rows written an hour ago: settled, so compaction may fold them.
AN_HOUR_AGO_NS = (time.time_ns() - 3_600_000_000_000)


def _files(spark, schema: str, table: t.StateTable) -> set[str]:
    return set(compact.data_files(spark, schema, table.name))


def _history(spark, table_name: str, changes: list[tuple[str, int, int]], seq0: int = AN_HOUR_AGO_NS) -> None:
    """One append per change, as batches of many runs would have left them (settled: an hour old)."""
    store = StateStore(spark)
    for i, (op, start, end) in enumerate(changes):
        row = t.interval_row(table_name, "f1", "db.m", start * DAY, end * DAY, op, f"run{i}")
        store.append(t.INTERVALS, [{**row, "seq": seq0 + i}])


def _coverage(spark, table_name: str) -> IntervalSet:
    return StateStore(spark).coverage().get(table_name, IntervalSet())


def test_an_append_is_one_file(spark, isolated):
    store = StateStore(spark)
    store.append(t.INTERVALS, [t.interval_row(f"db.t{i}", "f", "db.m", 0, DAY, "add", "r") for i in range(50)])

    assert len(_files(spark, store.schema, t.INTERVALS)) == 1


def test_compaction_folds_settled_files_into_one_keeping_coverage(spark, isolated):
    changes = [("add", d, d + 1) for d in range(12)] + [("remove", 4, 6), ("add", 5, 6), ("remove", 9, 20)]
    _history(spark, "db.a", changes)
    _history(spark, "db.b", [("add", 0, 5), ("remove", 0, 5)], seq0=AN_HOUR_AGO_NS + 1000)
    schema = StateStore(spark).schema
    before = {name: _coverage(spark, name) for name in ("db.a", "db.b")}

    folded = compact.compact_all(spark, schema, threshold=6)

    assert folded == {"intervals": len(changes) + 2}
    assert len(_files(spark, schema, t.INTERVALS)) == 1
    assert {name: _coverage(spark, name) for name in ("db.a", "db.b")} == before
    assert before["db.a"] == IntervalSet([Interval(0, 4 * DAY), Interval(5 * DAY, 9 * DAY)])
    rows = StateStore(spark).read(t.INTERVALS)
    assert rows.num_rows == 1 + 2 + 1, "db.a: a reset and two ranges; db.b: its reset only"


def test_deciding_whether_to_compact_lists_every_state_table_in_one_call(spark, isolated, monkeypatch):
    from pyspark_incr.state import files

    store = StateStore(spark)
    store.append(t.INTERVALS, [t.interval_row("db.t", "f", "db.m", 0, DAY, "add", "r")])
    asked = []
    for name in ("listing", "listings"):
        monkeypatch.setattr(files, name, lambda *a, _real=getattr(files, name), _name=name: (asked.append(_name),
                                                                                           _real(*a))[1])

    assert compact.compact_all(spark, store.schema, threshold=6) == {}
    assert asked == ["listings"], "one JVM call for all five tables, as a writing call asks after it wrote"


def test_rows_younger_than_the_settling_time_are_not_folded(spark, isolated):
    _history(spark, "db.a", [("add", d, d + 1) for d in range(5)])
    _history(spark, "db.a", [("remove", 0, 5)], seq0=time.time_ns())  # just now: an append may still be landing
    schema = StateStore(spark).schema

    compact.compact_all(spark, schema, threshold=2)

    assert len(_files(spark, schema, t.INTERVALS)) == 2, "the settled five folded, the fresh one left alone"
    assert _coverage(spark, "db.a") == IntervalSet()


def test_a_compaction_cut_off_between_its_write_and_its_deletes_leaves_the_same_state(spark, isolated, monkeypatch):
    _history(spark, "db.a", [("add", d, d + 1) for d in range(8)] + [("remove", 2, 6)])
    schema = StateStore(spark).schema
    before = _coverage(spark, "db.a")
    deleted = []

    def crash_after_two(spark_, path):
        if len(deleted) == 2:
            raise KeyboardInterrupt("killed")  # what a SIGKILL would stop: the remaining deletes
        deleted.append(path)
        real_delete(spark_, path)

    real_delete = compact._delete
    monkeypatch.setattr(compact, "_delete", crash_after_two)
    with pytest.raises(KeyboardInterrupt):
        compact.compact(spark, schema, t.INTERVALS)
    monkeypatch.setattr(compact, "_delete", real_delete)

    assert len(_files(spark, schema, t.INTERVALS)) == 9 - 2 + 1
    assert _coverage(spark, "db.a") == before == IntervalSet([Interval(0, 2 * DAY), Interval(6 * DAY, 8 * DAY)])
    compact.compact(spark, schema, t.INTERVALS)
    assert _coverage(spark, "db.a") == before
    assert len(_files(spark, schema, t.INTERVALS)) == 1


def test_environment_rows_folded_with_any_part_of_what_they_fold_leave_the_same_environments():
    import itertools
    import random
    from datetime import datetime, timedelta, timezone

    import pyarrow as pa

    from pyspark_incr.procedures.environments import _last_changes
    from pyspark_incr.state.entries import held

    rng, start = random.Random(3), datetime(2026, 1, 1, tzinfo=timezone.utc)
    files, seq = [], 0
    for _ in range(6):  # applies, refreshes (the same version again), removals of a few models, a file per apply
        rows = []
        for _ in range(rng.randrange(1, 5)):
            seq += 1
            rows.append({"env": rng.choice(["prod", "dev"]), "model": f"s.m{rng.randrange(3)}",
                         "fingerprint": f"f{rng.randrange(2)}", "op": rng.choice(["apply", "apply", "remove"]),
                         "snapshot": f"s{seq}", "seq": seq, "at": start + timedelta(hours=seq)})
        files.append(t.to_arrow(t.ENVIRONMENTS, rows))
    last = {}  # an upgrade's apply last: every model's version recorded again, the latest rows of all
    for row in pa.concat_tables(files).sort_by("seq").to_pylist():
        last[(row["env"], row["model"])] = row
    again = [{**row, "seq": seq + k, "at": start + timedelta(days=30, hours=k), "snapshot": "fresh"}
             for k, row in enumerate(r for r in last.values() if r["op"] == "apply")]
    files.append(t.to_arrow(t.ENVIRONMENTS, again))
    seq += len(again)
    everything = pa.concat_tables(files)
    folded = compact._FOLDS["environments"](everything, seq, 0)

    class Store:  # what _last_changes reads: the table's rows
        def __init__(self, rows):
            self.rows = rows

        def read(self, table):
            return self.rows

    want = (held(everything), _last_changes(Store(everything)))
    assert folded.num_rows < everything.num_rows
    for kept in itertools.chain.from_iterable(itertools.combinations(files, n) for n in range(len(files) + 1)):
        seen = pa.concat_tables([*kept, folded])  # a reader between the folded file's write and the deletes
        assert (held(seen), _last_changes(Store(seen))) == want


def test_compaction_drops_dead_lock_rows_of_older_versions_and_keeps_live_ones(spark, isolated):
    store = StateStore(spark)
    long_ago_ms = AN_HOUR_AGO_NS // 1_000_000
    for i in range(5):  # five old runs that took and released a lock
        for j, op in enumerate(("acquire", "release")):
            store.append(t.LOCKS, [{"lock_key": "table db.a", "owner": f"old{i}", "procedure": "run", "op": op,
                                    "lease_until_ms": long_ago_ms + 300_000, "seq": AN_HOUR_AGO_NS + 10 * i + j}])
    store.append(t.LOCKS, [{"lock_key": "table db.b", "owner": "alive", "procedure": "run", "op": "acquire",
                            "lease_until_ms": int(time.time() * 1000) + 3_600_000, "seq": AN_HOUR_AGO_NS + 100}])

    compact.compact_all(spark, store.schema, threshold=5)

    rows = StateStore(spark).read(t.LOCKS)
    assert rows["owner"].to_pylist() == ["alive"]


def test_state_of_another_application_is_read_once_it_lands(spark, isolated):
    store = StateStore(spark)
    store.append(t.INTERVALS, [t.interval_row("db.a", "f", "db.m", 0, DAY, "add", "r1")])
    assert _coverage(spark, "db.a") == IntervalSet([Interval(0, DAY)])
    # another Spark application appends a file; this one's catalog still lists the old files
    other = t.to_arrow(t.INTERVALS, [{**t.interval_row("db.a", "f", "db.m", DAY, 2 * DAY, "add", "r2"),
                                      "seq": time.time_ns(), "at": None}])
    location = table_location(spark, store.schema, t.INTERVALS.name).toUri().getPath()
    pq.write_table(other, f"{location}/part-other-application.parquet")

    assert _coverage(spark, "db.a") == IntervalSet([Interval(0, 2 * DAY)])


def test_runs_compact_state_once_it_has_many_files_and_plan_the_same(spark, isolated, monkeypatch):
    monkeypatch.setattr(compact, "SETTLED_MS", 0)
    spark.conf.set("spark.incr.stateCompactFiles", "4")
    try:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
        spark.range(0, 30).selectExpr("id", "date_add(DATE'2024-01-01', CAST(id AS INT)) AS ds") \
            .write.format("parquet").saveAsTable(f"{isolated}_raw.events")
        name = f"{isolated}.daily"
        _call(spark, "create_model", definition=(
            f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
            f"cron '@daily'); SELECT id, ds FROM {isolated}_raw.events WHERE ds BETWEEN @start_ds AND @end_ds"))
        _call(spark, "apply", execution_time="2024-01-03 00:00:00")
        for day in range(4, 10):
            _call(spark, "run", execution_time=f"2024-01-{day:02d} 00:00:00")
        schema = StateStore(spark).schema

        counts = {table.name: len(_files(spark, schema, table)) for table in t.ALL_TABLES}
        assert all(count <= 4 for count in counts.values()), counts
        assert _call(spark, "run", execution_time="2024-01-09 00:00:00") == [], "nothing due: all recorded"
        built = StateStore(spark).coverage()[physical(spark, name)]
        assert built == IntervalSet([Interval(to_ms("2024-01-01"), to_ms("2024-01-09"))])
        assert spark.table(name).count() == 8
    finally:
        spark.conf.unset("spark.incr.stateCompactFiles")
