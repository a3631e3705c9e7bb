"""Compaction of the state tables: after thousands of runs, reading state costs what it did on day one.

Every state change is an appended file, so a table that is never compacted grows a file
per batch, per run, per lock taken. Once a table holds ``spark.incr.stateCompactFiles``
data files, the call that wrote last folds the *settled* ones into one file:

- ``intervals``: each physical table's rows fold to its current interval set, written as a
  reset (``remove`` of all time) followed by one ``add`` per contiguous range;
- ``locks``: the rows of claims whose lease ended before the cutoff are dropped (dead);
- ``environments``, ``models``, ``runs``: rows are kept as they are (history), duplicates dropped; an
  environment's row recording its model's version again as it was (an apply refreshing kept snapshots after
  an upgrade) is folded into the row before it, so upgrades do not grow the history a plan folds.

Folding is crash-safe and needs no lock, because of how the folded rows are ordered:

- Only files whose rows all have ``seq`` below ``now - SETTLED_MS`` are folded, and only while
  every folded row is older than every row left out: the folded rows are a *prefix* of the
  table's history. An append in flight assigns its ``seq`` before it writes, and lands well
  within ``SETTLED_MS``: it cannot slip into the prefix.
- The folded file is written first (one file: an atomic rename), then the prefix's files are
  deleted. A reader (or a crash) between the two sees the prefix and the folded rows; the
  folded rows sort after the prefix and *reset* each table's intervals to what the prefix
  folds to, so any subset of the prefix followed by the folded rows means the same state.
- Kept rows (environments, models, runs, live locks) keep their ``seq``: any subset of the
  prefix plus the folded rows has the same latest row per key, so the same state. A folded
  environment row is the later of the two it stands for (its ``seq``, its fresh snapshot) with the
  earlier one's time: beside either of them it records the same version, and the change's time is the
  earliest of the equal rows, as ``incr.environments`` reads it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pyspark_incr.runtime import runtime
from pyspark_incr.config import STATE_COMPACT_FILES, setting
from pyspark_incr.intervals.ranges import ALL_TIME, Interval
from pyspark_incr.state import tables as t
from pyspark_incr.state import files as state_files
from pyspark_incr.state.built import fold_intervals
from pyspark_incr.state.entries import refolded
from pyspark_incr.state.store import APPEND_PREFIX, file_cache, table_location, table_root, write_rows

#: Rows younger than this are never folded: appends in flight, and clock skew between drivers.
SETTLED_MS = 10 * 60_000

_log = logging.getLogger(__name__)
Fold = Callable[[pa.Table, int, int], pa.Table]
_FOLDS: dict[str, Fold] = {}


def folds(table: t.StateTable) -> Callable[[Fold], Fold]:
    """Register how ``table``'s settled rows fold (rows, max seq of the prefix, cutoff in epoch ms)."""
    def register(fold: Fold) -> Fold:
        _FOLDS[table.name] = fold
        return fold
    return register


def compact_all(spark: Any, schema: str, threshold: int | None = None) -> dict[str, int]:
    """Compact every state table holding at least ``threshold`` data files; the files folded per table."""
    limit = max(2, threshold if threshold is not None else int(setting(spark, STATE_COMPACT_FILES)))
    done = {}
    left = runtime(spark).compacted
    every = _listed_together(spark, schema)
    for table in t.ALL_TABLES:
        listed = every.get(table.name, frozenset())
        key = (schema, table.name)
        # files too young to fold stay; try again only once enough new ones joined them
        if len(listed) >= limit and len(listed) >= left.get(key, 0) + limit // 2:
            done[table.name] = compact(spark, schema, table, listed)
            left[key] = len(data_files(spark, schema, table.name))
    return {name: count for name, count in done.items() if count}


def after_call(spark: Any, schema: str) -> None:
    """Compact what needs it after a call wrote state; a failure only leaves the files as they were."""
    try:
        compact_all(spark, schema)
    except Exception as e:  # noqa: BLE001 - compaction only saves time later; the call itself succeeded
        _log.warning("pyspark-incr: compacting state schema %s failed (%s); state is unchanged", schema, e)


def compact(spark: Any, schema: str, table: t.StateTable, files: frozenset[str] | None = None,
            now_ms: int | None = None) -> int:
    """Fold the settled prefix of ``table``'s files into one file; the number of files folded (0: nothing to do).

    ``files``: the names of the table's data files, as :func:`data_files` lists them (listed now when None).
    """
    files = files if files is not None else data_files(spark, schema, table.name)
    root = table_root(spark, schema, table.name)
    rows = _rows_by_file(spark, schema, root, table, files)
    cutoff_ms = (now_ms if now_ms is not None else int(time.time() * 1000)) - SETTLED_MS
    prefix = settled_prefix(rows, cutoff_ms * 1_000_000) if "seq" in table.schema.names else set(files)
    if len(prefix) < 2:
        return 0
    chosen = rows.filter(pc.is_in(rows["file_name"], pa.array(sorted(prefix), pa.string()))).drop(["file_name"])
    top = pc.max(chosen["seq"]).as_py() if "seq" in table.schema.names and chosen.num_rows else 0
    folded = _FOLDS[table.name](chosen, top or 0, cutoff_ms)
    if folded.num_rows:
        write_rows(spark, table, schema, folded)
    for file_name in prefix:
        _delete(spark, f"{root}/{file_name}")
    _delete_dead_appends(spark, schema, table.name, cutoff_ms)
    state_files.invalidate(spark, schema, table.name)
    return len(prefix)


def _rows_by_file(spark: Any, schema: str, root: str, table: t.StateTable, listed: frozenset[str]) -> pa.Table:
    """The rows of the files ``listed`` (the table's whole listing), each with its file's name (``file_name``)."""
    cache = file_cache(spark, schema, table)
    cache.rows(spark, root, listed)
    parts = [_named(cache.file_rows(name), name) for name in listed]
    return pa.concat_tables(parts) if parts else _named(table.schema.empty_table(), "")


def _named(rows: pa.Table, file_name: str) -> pa.Table:
    return rows.append_column("file_name", pa.array([file_name] * rows.num_rows, pa.string()))


def _delete_dead_appends(spark: Any, schema: str, name: str, cutoff_ms: int) -> None:
    """Staging directories (local tables: files) of appends killed before their rename (older than the cutoff:
    nobody's now)."""
    path = table_location(spark, schema, name)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    for status in fs.listStatus(path):
        if status.getPath().getName().startswith(APPEND_PREFIX) \
                and status.getModificationTime() < cutoff_ms:
            fs.delete(status.getPath(), True)


def settled_prefix(rows: pa.Table, cutoff_seq: int) -> set[str]:
    """The files whose rows are all older than ``cutoff_seq`` and than every row of the files left out.

    >>> rows = pa.table({"seq": [1, 2, 3, 9, 5], "file_name": ["a", "a", "b", "c", "d"]})
    >>> sorted(settled_prefix(rows, 6))  # d (5) is older than c (9), but c is unsettled: a, b, d
    ['a', 'b', 'd']
    >>> rows = pa.table({"seq": [1, 4, 3, 9], "file_name": ["a", "a", "b", "b"]})
    >>> sorted(settled_prefix(rows, 6))  # b is unsettled and holds 3 < a's 4: a would jump it
    []
    """
    spans: dict[str, list[int]] = {}
    for seq, file_name in zip(rows["seq"].to_pylist(), rows["file_name"].to_pylist()):
        low_high = spans.setdefault(file_name, [seq, seq])
        low_high[0], low_high[1] = min(low_high[0], seq), max(low_high[1], seq)
    prefix = {f for f, (_, high) in spans.items() if high < cutoff_seq}
    while True:
        oldest_left = min((low for f, (low, _) in spans.items() if f not in prefix), default=None)
        if oldest_left is None:
            return prefix
        jumping = {f for f in prefix if spans[f][1] >= oldest_left}
        if not jumping:
            return prefix
        prefix -= jumping


def data_files(spark: Any, schema: str, name: str) -> frozenset[str]:
    """The names of a state table's data files; empty without any."""
    root = table_root(spark, schema, name)
    return (state_files.listing(spark, root) or frozenset()) if root is not None else frozenset()


def _listed_together(spark: Any, schema: str) -> dict[str, frozenset[str]]:
    """:func:`data_files` of every state table, listed in one call into the JVM (each is asked after every call
    that wrote state)."""
    roots = {table.name: root for table in t.ALL_TABLES if (root := table_root(spark, schema, table.name))}
    listed = state_files.listings(spark, list(roots.values()))
    return {name: found or frozenset() for name, found in zip(roots, listed)}


def _delete(spark: Any, file: str) -> None:
    """Delete one data file (its checksum goes with it: Hadoop's checksummed filesystems delete both)."""
    root, name = file.rsplit("/", 1)
    state_files.delete(spark, root, name)


@folds(t.INTERVALS)
def _intervals(rows: pa.Table, top: int, cutoff_ms: int) -> pa.Table:
    """Per physical table: a reset, then its intervals as contiguous ranges (model, version and time of its last row).

    >>> rows = t.to_arrow(t.INTERVALS, [
    ...     {**t.interval_row("db.a", "f", "m", 0, 10, "add", "r1"), "seq": 1},
    ...     {**t.interval_row("db.a", "f", "m", 10, 20, "add", "r2"), "seq": 2},
    ...     {**t.interval_row("db.a", "f", "m", 5, 8, "remove", "r3"), "seq": 3}])
    >>> [(r["op"], r["start_ms"], r["end_ms"], r["seq"]) for r in _intervals(rows, 3, 0).to_pylist()]
    [('remove', -4611686018427387904, 4611686018427387904, 4), ('add', 0, 5, 5), ('add', 8, 20, 5)]
    """
    out = []
    for table_name, changes in _by(rows, "table_name").items():
        last = changes[-1]
        current = fold_intervals([(c["op"], Interval(c["start_ms"], c["end_ms"])) for c in changes])
        keep = {k: last[k] for k in ("table_name", "fingerprint", "model", "run_id")}
        at = max(c["at"] for c in changes if c["at"] is not None) if any(c["at"] for c in changes) else None
        out.append({**keep, "start_ms": ALL_TIME.start, "end_ms": ALL_TIME.end, "op": "remove", "seq": top + 1,
                    "at": at})
        out += [{**keep, "start_ms": i.start, "end_ms": i.end, "op": "add", "seq": top + 2, "at": at}
                for i in current]
    return t.to_arrow(t.INTERVALS, out)


@folds(t.LOCKS)
def _locks(rows: pa.Table, top: int, cutoff_ms: int) -> pa.Table:
    """The rows of claims that may still be alive: a claim whose lease ended before the cutoff is dead for good."""
    latest: dict[tuple[str, str], int] = {}
    for key, owner, lease in zip(*(rows[c].to_pylist() for c in ("lock_key", "owner", "lease_until_ms"))):
        latest[(key, owner)] = max(latest.get((key, owner), lease or 0), lease or 0)
    alive = [latest[(k, o)] >= cutoff_ms for k, o in zip(rows["lock_key"].to_pylist(), rows["owner"].to_pylist())]
    return _distinct(rows.filter(pa.array(alive, pa.bool_())))


def _kept(rows: pa.Table, top: int, cutoff_ms: int) -> pa.Table:
    """History rows as they are, each once."""
    return _distinct(rows)


for _table in (t.MODELS, t.RUNS):
    folds(_table)(_kept)


@folds(t.ENVIRONMENTS)
def _environments(rows: pa.Table, top: int, cutoff_ms: int) -> pa.Table:
    """History rows each once, a version recorded again as it was folded into the row before it: the later
    row (its ``seq`` and snapshot, the one folding keeps) at the earlier row's time (when the version came).

    >>> from datetime import datetime, timezone
    >>> def row(seq, fingerprint, at, snapshot=None, op="apply"):
    ...     return {"env": "prod", "model": "db.m", "fingerprint": fingerprint, "op": op, "seq": seq,
    ...             "at": datetime(2026, 1, at, tzinfo=timezone.utc), "snapshot": snapshot}
    >>> history = [row(1, "f1", 1), row(2, "f1", 5, "fresh"), row(3, "f2", 6), row(4, "f2", 7, op="remove"),
    ...            row(5, "f2", 8), row(6, "f2", 9, "fresh")]
    >>> [(r["seq"], r["at"].day, r["snapshot"]) for r in _environments(t.to_arrow(t.ENVIRONMENTS, history), 6, 0)
    ...  .to_pylist()]  # f1 refreshed: one row; f2 removed and applied again, then refreshed: three
    [(2, 1, 'fresh'), (3, 6, None), (4, 7, None), (6, 8, 'fresh')]
    """
    return t.to_arrow(t.ENVIRONMENTS, refolded(_distinct(rows)))


def _distinct(rows: pa.Table) -> pa.Table:
    """``rows`` without exact duplicates (left by a compaction that crashed between its write and its deletes)."""
    if not rows.num_rows:
        return rows
    seen, keep = set(), []
    for row in rows.to_pylist():
        key = tuple(sorted((k, repr(v)) for k, v in row.items()))
        keep.append(key not in seen)
        seen.add(key)
    return rows.filter(pa.array(keep, pa.bool_()))


def _by(rows: pa.Table, column: str) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for row in rows.sort_by("seq").to_pylist():
        groups.setdefault(row[column], []).append(row)
    return groups
