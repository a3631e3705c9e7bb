"""State tables: append-only Parquet tables in the state schema, read and written as Arrow.

Every state change is an appended row (never an update in place), so a crash
mid-write leaves at most a missing row, never a half-changed one, and the
current state is a fold over the rows in ``seq`` order.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from sqlglot import exp

from pyspark_incr import ddl
from pyspark_incr.sqltext import ident

_TS = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class StateTable:
    """One state table: its name and Arrow schema."""

    name: str
    schema: pa.Schema
    description: str

    def qualified(self, state_schema: str) -> str:
        return exp.table_(self.name, db=state_schema, quoted=True).sql("spark")

    def ddl(self, state_schema: str) -> str:
        return f"CREATE TABLE IF NOT EXISTS {self.qualified(state_schema)} ({_columns(self.schema)}) USING parquet"

    def upgrade(self, state_schema: str, existing: list[str]) -> str | None:
        """The DDL adding the columns a table created by an older version lacks (None when it has them all).

        Rows are inserted by position, so columns are only ever added at the end.

        >>> ENVIRONMENTS.upgrade("st", ENVIRONMENTS.schema.names[:-3])
        'ALTER TABLE `st`.`environments` ADD COLUMNS (`snapshot` STRING, `run_id` STRING, `conform` STRING)'
        >>> ENVIRONMENTS.upgrade("st", ENVIRONMENTS.schema.names) is None
        True
        """
        names = [n.lower() for n in existing]
        if names != [n.lower() for n in self.schema.names[: len(names)]]:
            raise ValueError(f"state table {self.name} has columns {existing}, expected {self.schema.names}")
        added = pa.schema(list(self.schema)[len(names):])
        if not added:
            return None
        return ddl.add_columns(exp.table_(self.name, db=state_schema, quoted=True),
                               [(f.name, _SPARK_TYPES[f.type]) for f in added])


def _columns(schema: pa.Schema) -> str:
    return ", ".join(f"{ident(f.name)} {_SPARK_TYPES[f.type]}" for f in schema)


_SPARK_TYPES = {pa.string(): "STRING", pa.int64(): "BIGINT", _TS: "TIMESTAMP"}


def _schema(*cols: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(n, t) for n, t in cols])


MODELS = StateTable(
    "models",
    _schema(("name", pa.string()), ("definition", pa.string()), ("op", pa.string()),
            ("seq", pa.int64()), ("at", _TS)),
    "Catalog-resident model registry: one row per create_model ('create') or drop_model ('drop').",
)
ENVIRONMENTS = StateTable(
    "environments",
    _schema(("env", pa.string()), ("model", pa.string()), ("fingerprint", pa.string()),
            ("metadata_hash", pa.string()), ("definition", pa.string()), ("source", pa.string()),
            ("model_source", pa.string()), ("context", pa.string()),
            ("table_name", pa.string()), ("start_ms", pa.int64()), ("op", pa.string()),
            ("seq", pa.int64()), ("at", _TS), ("snapshot", pa.string()), ("run_id", pa.string()),
            ("conform", pa.string())),
    "Which model versions each environment holds: 'apply' or 'remove' rows per model "
    "('snapshot': the parsed model as JSON, a cache of its definition; 'run_id': the apply that wrote it; "
    "'conform': after a forward-only change, how the query's output maps onto the kept table, as JSON).",
)
INTERVALS = StateTable(
    "intervals",
    _schema(("table_name", pa.string()), ("fingerprint", pa.string()), ("model", pa.string()),
            ("start_ms", pa.int64()), ("end_ms", pa.int64()), ("op", pa.string()),
            ("run_id", pa.string()), ("seq", pa.int64()), ("at", _TS)),
    "Built intervals per physical table and version: 'add' after data is committed, 'remove' before a rewrite.",
)
RUNS = StateTable(
    "runs",
    _schema(("run_id", pa.string()), ("procedure", pa.string()), ("env", pa.string()),
            ("model", pa.string()), ("fingerprint", pa.string()), ("start_ms", pa.int64()),
            ("end_ms", pa.int64()), ("status", pa.string()), ("rows", pa.int64()), ("message", pa.string()),
            ("started_at", _TS), ("finished_at", _TS)),
    "One row per executed batch: what ran, for which interval, and how it ended.",
)

LOCKS = StateTable(
    "locks",
    _schema(("lock_key", pa.string()), ("owner", pa.string()), ("procedure", pa.string()), ("op", pa.string()),
            ("lease_until_ms", pa.int64()), ("seq", pa.int64()), ("at", _TS)),
    "No longer written: claims live as files in its directory (_claims/, see state/claims.py). Rows left by "
    "versions before that ('acquire', 'renew', 'release' per key and owner) are folded away by compaction.",
)

ALL_TABLES = (MODELS, ENVIRONMENTS, INTERVALS, RUNS, LOCKS)

#: Not in ALL_TABLES: created by the first run of a model with ``auto_restatement_cron``
#: (:mod:`pyspark_incr.plan.auto_restatement`), so state without one holds the tables it always did.
AUTO_RESTATEMENTS = StateTable(
    "auto_restatements",
    _schema(("table_name", pa.string()), ("model", pa.string()), ("fingerprint", pa.string()),
            ("execution_ms", pa.int64()), ("start_ms", pa.int64()), ("end_ms", pa.int64()), ("op", pa.string()),
            ("seq", pa.int64()), ("at", _TS)),
    "Per physical table of a model with auto_restatement_cron, at a prod run's execution time: 'start' when a "
    "run first saw it, 'restate' when a run completed its auto restatement (of start_ms..end_ms).",
)

_seq_lock = threading.Lock()
_last_seq = 0


def next_seq() -> int:
    """A strictly increasing sequence number: wall-clock ns, but always above every ``seq`` this process has read.

    Rows are folded in ``seq`` order. Two applications write rows of one table or environment only
    one after the other (claims), and the later one reads state after winning its claim, so its rows
    sort after the earlier one's even when its host's clock is behind (a Lamport clock).
    """
    global _last_seq
    with _seq_lock:
        _last_seq = max(_last_seq + 1, time.time_ns())
        return _last_seq


def observe_seq(seq: int) -> None:
    """Note a ``seq`` read from state: rows this process writes later sort after it."""
    global _last_seq
    with _seq_lock:
        _last_seq = max(_last_seq, seq)


def interval_row(table_name: str | None, fingerprint: str | None, model: str, start_ms: int, end_ms: int,
                 op: str, run_id: str) -> dict[str, Any]:
    """One row of INTERVALS: ``op`` ('add' or 'remove') of ``[start_ms, end_ms)`` for a physical table."""
    return {"table_name": table_name, "fingerprint": fingerprint, "model": model, "start_ms": start_ms,
            "end_ms": end_ms, "op": op, "run_id": run_id}


def to_arrow(table: StateTable, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows (dicts) as an Arrow table of ``table``'s exact schema."""
    return pa.Table.from_pylist(rows, schema=table.schema)
