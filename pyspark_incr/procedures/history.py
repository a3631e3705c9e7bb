"""incr.history: what ran, batch by batch, newest first."""

from __future__ import annotations

from typing import Any

from pyspark_incr.errors import ArgumentError
from pyspark_incr.procedures.common import ts
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param
from pyspark_incr.state import tables as t
from pyspark_incr.state.store import StateStore


@procedure(
    "history",
    "Every executed step (batch, view creation, drop) with its interval, rows written, duration, status "
    "and error, newest first.",
    params=(
        Param("model", "string", "Only this model (default: all)."),
        Param("env", "string", "Only this environment (default: all)."),
        Param("limit", "int", "At most this many rows.", default=50),
    ),
    output=(
        Column("run_id", "string", "The call that ran the step."),
        Column("procedure", "string", "apply or run."),
        Column("env", "string", "Environment."),
        Column("model", "string", "Model name."),
        Column("start", "timestamp", "Start of the batch interval (UTC, inclusive)."),
        Column("end", "timestamp", "End of the batch interval (UTC, exclusive)."),
        Column("status", "string",
               "ok, failed, skipped, or abandoned (a run that was killed or lost its claim before finishing the "
               "batch; recorded by the call that took over)."),
        Column("rows", "bigint", "Rows written."),
        Column("seconds", "double", "Wall-clock seconds."),
        Column("message", "string", "The step, or Spark's error for a failed one."),
        Column("started_at", "timestamp", "When the step started (UTC)."),
    ),
)
def history(spark: Any, model: str | None, env: str | None, limit: int | None) -> list[tuple]:
    limit = 50 if limit is None else limit
    if limit < 1:
        raise ArgumentError(f"history: limit must be at least 1, got {limit}")
    runs = StateStore(spark).read(t.RUNS)
    rows = runs.sort_by([("started_at", "descending")]).to_pylist() if runs.num_rows else []
    wanted = model.strip().lower() if model else None
    out = []
    for r in rows:
        if (wanted and r["model"] != wanted) or (env and r["env"] != env.lower()):
            continue
        seconds = (r["finished_at"] - r["started_at"]).total_seconds() if r["finished_at"] and r["started_at"] else None
        out.append((r["run_id"], r["procedure"], r["env"], r["model"], ts(r["start_ms"]), ts(r["end_ms"]),
                    r["status"], r["rows"], seconds, r["message"], r["started_at"]))
        if len(out) == limit:
            break
    return out
