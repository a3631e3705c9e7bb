"""incr.audit: run a model's audits now, on the rows of a time window."""

from __future__ import annotations

from typing import Any

from pyspark_incr.errors import UnknownModelError
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.plan.planner import plan_run
from pyspark_incr.procedures.common import END, ENV, EXECUTION_TIME, START, env_arg, window_arg
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param
from pyspark_incr.run import audits
from pyspark_incr.state.store import StateStore
from pyspark_incr.writers import writer_for
from pyspark_incr.writers.base import BuildContext


@procedure(
    "audit",
    "Run a model's audits on demand, over its whole table or the start/end window; one row per audit.",
    params=(Param("model", "string", "The model to audit.", required=True), ENV, START, END, EXECUTION_TIME),
    output=(
        Column("model", "string", "Model name."),
        Column("audit", "string", "The audit as written in the model."),
        Column("blocking", "boolean", "Whether a failure blocks a batch."),
        Column("bad_rows", "bigint", "Rows that break the audit."),
        Column("status", "string", "ok, failed (blocking) or warning (non-blocking)."),
    ),
)
def audit(spark: Any, model: str, env: str | None, start: str | None, end: str | None,
          execution_time: str | None) -> list[tuple]:
    env_name = env_arg(spark, env)
    name = model.strip().lower()
    window = window_arg(start, end, execution_time, ignore_cron=True)
    plan = plan_run(StateStore(spark), env_name, window, name if name else None)
    mp = next((m for m in plan.models if m.name == name), None)
    if mp is None or not mp.builds_object or mp.table is None:
        raise UnknownModelError(f"audit: model {model!r} has no table in environment {env_name}")
    ctx = BuildContext(spark, mp.model, mp.table, window.execution_ms, plan.table_map, plan.embedded)
    rows = mp.table.copy()
    if (start or end) and mp.expected is not None:  # open ends fall back to the model's own range
        lo = window.start_ms if window.start_ms is not None else mp.expected.start
        hi = window.end_ms if window.end_ms is not None else mp.expected.end
        rows = writer_for(mp.model).audited_rows(ctx, Interval(lo, max(lo, hi)))
    return [(name, o.audit, o.blocking, o.bad_rows, o.status) for o in audits.evaluate(spark, mp.model, rows)]
