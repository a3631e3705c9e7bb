"""Environment entries: the model versions an environment holds, folded from its ENVIRONMENTS rows.

Every apply appends rows (never an update in place); what an environment holds is each model's last row in
``seq`` order, an 'apply' naming the version, a 'remove' none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from pyspark_incr.model.definition import Model
from pyspark_incr.safety.judge import Judgement
from pyspark_incr.sqltext import stored_table, table_sql
from pyspark_incr.state import snapshot as snapshots


@dataclass(frozen=True)
class EnvEntry:
    """One model version as an environment holds it."""

    model: str
    fingerprint: str
    metadata_hash: str
    definition: str
    source: str
    table_name: str | None
    start_ms: int | None
    #: Where the definition came from (a model file, or "registry") and the project context it was parsed with.
    model_source: str = "registry"
    context: str = ""
    #: The parsed model as JSON (:mod:`pyspark_incr.state.snapshot`); None in rows written before it existed.
    snapshot: str | None = field(default=None, compare=False, repr=False)
    #: After a forward-only change keeping the table: the query's output conformed to it, as JSON.
    conform: str | None = None

    def parsed(self) -> "Model":
        """The applied model as it was applied: rebuilt from its snapshot, or parsed again when that is not valid."""
        return snapshots.model_of(self.snapshot, self.definition, self.model_source or "registry", self.context or "")

    @cached_property
    def table(self) -> exp.Table | None:
        """The physical table as a sqlglot record, made once: an entry lives as long as its state files stay the
        same, so the runs of a warm process share it (a table a model a run was most of what a run of 1,000 idle
        models left for the cycle collector). Shared: copy it before changing it, as everything embedding it does."""
        return stored_table(self.table_name) if self.table_name else None

    @cached_property
    def table_text(self) -> str | None:
        """``table`` as Spark SQL (``table_sql``), written once, as ``table`` is made once."""
        return table_sql(self.table) if self.table is not None else None

    def judgement(self) -> Judgement | None:
        """The safety judgement kept with the applied version, if any (valid only where its key matches)."""
        return snapshots.judgement_of(self.snapshot)

    @property
    def snapshot_taken(self) -> bool:
        """Whether this code rebuilds the model from the kept snapshot (False after an upgrade changing the
        parsing code, or for rows written before snapshots: every process parses the definition again)."""
        return snapshots.holds(self.snapshot, self.definition, self.model_source or "registry", self.context or "")


def held(rows: pa.Table, env: str | None = None) -> dict[str, dict[str, EnvEntry]]:
    """Per environment (only ``env`` when given), the entries its rows leave after folding them in ``seq`` order."""
    # only what an entry holds, of only the rows left standing: turning every row's other columns (its time,
    # run id) into Python objects took a fifth of reading 10,000 models' environment
    rows = rows.select([c for c in rows.column_names if c in ENTRY_COLUMNS]).take(latest(rows, env))
    current: dict[str, dict[str, EnvEntry]] = {}
    for row in rows.to_pylist():
        models = current.setdefault(row["env"], {})
        if row["op"] == "apply":
            models[row["model"]] = entry_of(row)
    return current


def latest(rows: pa.Table, env: str | None = None) -> pa.Array:
    """The positions of each (env, model)'s last row in ``seq`` order (only ``env``'s when given), the slots in
    the order they first appear: what folding every row leaves. Found from the slot columns alone: the rows it
    supersedes never become Python objects, nor are their definitions and snapshots copied (an environment's
    history grows with every apply: 20,000 rows of 10,000 models made a first plan 0.5 s slower)."""
    slots = rows.select(["env", "model", "seq"])
    where = pc.indices_nonzero(pc.equal(slots["env"], env)) if env is not None and rows.num_rows else None
    if where is not None:
        slots = slots.take(where)
    order = pc.sort_indices(slots["seq"])  # stable: rows of one seq keep their order, as in the fold
    slots = slots.select(["env", "model"]).take(order)
    slots = slots.append_column("__row", pa.array(range(slots.num_rows), pa.int64()))
    slots = slots.group_by(["env", "model"], use_threads=False).aggregate([("__row", "min"), ("__row", "max")])
    kept = order.take(slots.sort_by("__row_min")["__row_max"])
    return where.take(kept) if where is not None else kept


ENTRY_COLUMNS = frozenset(EnvEntry.__dataclass_fields__) | {"env", "op", "seq"}


def refolded(rows: pa.Table) -> list[dict[str, Any]]:
    """``rows`` in ``seq`` order, each run of one slot's 'apply' rows recording one entry (a version recorded again
    as it was: an apply refreshing kept snapshots after an upgrade) as one row: the run's last (its ``seq`` and
    snapshot, what folding keeps) at the run's earliest time, when the version came. The same whether a reader
    sees a run, the row compaction folded it into, or both (between that compaction's write and its deletes)."""
    out: list[dict[str, Any]] = []
    last: dict[tuple[str, str], int] = {}  # (env, model) -> position in out of its last row
    for row in rows.sort_by("seq").to_pylist() if rows.num_rows else ():
        slot = (row["env"], row["model"])
        before = out[last[slot]] if slot in last else None
        if before is not None and before["op"] == row["op"] == "apply" and entry_of(before) == entry_of(row):
            out[last[slot]] = {**row, "at": min((a for a in (before["at"], row["at"]) if a is not None), default=None)}
            continue
        last[slot] = len(out)
        out.append(row)
    return out


def entry_row(env: str, entry: EnvEntry, run_id: str) -> dict[str, Any]:
    """The ENVIRONMENTS row recording ``entry`` in ``env`` again, as it is (its snapshot included)."""
    return {**{f: getattr(entry, f) for f in EnvEntry.__dataclass_fields__}, "env": env, "op": "apply",
            "run_id": run_id}


def entry_of(row: dict[str, Any]) -> EnvEntry:
    """The entry an 'apply' row of ENVIRONMENTS records (equal to another recording the same version: the
    snapshot is a cache, not compared)."""
    return EnvEntry(**{f: row[f] for f in EnvEntry.__dataclass_fields__ if f in row})
