"""incr.explain: what pyspark-incr makes of one model, before anything runs.

One row per item: where the model lives, its SQL rendered for a sample interval,
the incremental safety verdict with each finding, and how far outside a run's
window each timeseries source must be read (smelt's bound map). Informational:
the safety verdict does not yet stop a run (issue 7 wires it into planning).
"""

from __future__ import annotations

import json
from typing import Any

from pyspark_incr.errors import UnknownModelError
from pyspark_incr.model.definition import Model
from pyspark_incr.plan.planner import plan_run, sample_interval
from pyspark_incr.procedures.common import ENV, EXECUTION_TIME, env_arg, window_arg
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param
from pyspark_incr.safety import bounds, classify
from pyspark_incr.state.store import StateStore
from pyspark_incr.writers.base import BuildContext


@procedure(
    "explain",
    "What pyspark-incr makes of a model: its tables, its SQL rendered for a sample interval, the incremental "
    "safety verdict with each finding, and the bound of every timeseries source it reads. One row per item.",
    params=(Param("model", "string", "The model to explain.", required=True), ENV, EXECUTION_TIME),
    output=(
        Column("item", "string", "table, view, sql, safety, finding, admitted, bound or batch_safety."),
        Column("name", "string", "What the item is about: the model, a rule, or a source."),
        Column("detail", "string", "The item in words."),
        Column("json", "string", "The item as JSON (bounds as smelt's explain prints them)."),
    ),
)
def explain(spark: Any, model: str, env: str | None, execution_time: str | None) -> list[tuple]:
    env_name, name = env_arg(spark, env), model.strip().lower()
    window = window_arg(None, None, execution_time, ignore_cron=True)
    store = StateStore(spark)
    known = store.environment(env_name)
    if name not in known:
        raise UnknownModelError(f"explain: model {model!r} is not in environment {env_name} "
                                f"(it holds: {', '.join(sorted(known)) or 'none'})")
    plan = plan_run(store, env_name, window, f"+{name}")  # with the models it reads
    mp = next(m for m in plan.models if m.name == name)
    rows = [("table", name, mp.table_name or "(inlined into its children)", None),
            ("view", name, mp.view_name or "(none)", None)]
    if mp.model.query is None:
        return rows
    interval = sample_interval(mp, window)
    ctx = BuildContext(spark, mp.model, mp.table, window.execution_ms, plan.table_map, plan.embedded)
    rows.append(("sql", name, ctx.query(interval).sql("spark"), json.dumps({"interval": str(interval)})))
    if mp.model.kind.has_intervals:
        rows += _safety(mp.model, _timeseries(plan, mp.model))
    return rows


def _timeseries(plan: Any, model: Model) -> dict[str, str]:
    """The models ``model`` reads that have a time column, mapped to it (sources read in slices)."""
    found = {}
    for other in plan.models:
        column = getattr(other.model.kind, "time_column", None)
        if other.name in model.depends_on and column:
            found[other.name] = column
    return found


def _safety(model: Model, sources: dict[str, str]) -> list[tuple]:
    time_column = getattr(model.kind, "time_column", None)
    partitions = list(model.partitioned_by) or ([time_column] if time_column else [])
    verdict = classify.classify(model.query, partitions, sources)
    rows = [("safety", model.name, "safe" if verdict.safe else classify.message(model.name, verdict), None)]
    rows += [("finding", f.rule, f"line {f.line}, column {f.column}: {f.construct}: {f.why}",
              json.dumps({"rule": f.rule, "line": f.line, "column": f.column, "construct": f.construct}))
             for f in verdict.findings]
    rows += [("admitted", model.name, note, None) for note in verdict.admitted]
    derived = bounds.derive(model.query, time_column or "", sources) if time_column else {}
    rows += [("bound", source, bound.kind, json.dumps(bound.iso())) for source, bound in sorted(derived.items())]
    rows.append(("batch_safety", model.name, _batch_class(verdict, derived), None))
    return rows


def _batch_class(verdict: classify.Verdict, derived: dict[str, bounds.Bound]) -> str:
    """smelt's batch safety class: how a missing range may be chunked."""
    if not verdict.safe or any(b.kind != bounds.BOUNDED for b in derived.values()):
        return "per-partition only"
    if any(b.before_ms or b.after_ms for b in derived.values()):
        return "bounded"
    return "fully batch safe"
