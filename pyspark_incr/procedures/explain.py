"""incr.explain: what pyspark-incr makes of one model, before anything runs.

One row per item: where the model lives, its SQL rendered for a sample interval,
the incremental safety verdict with each finding, and how far outside a run's
window each timeseries source must be read (smelt's bound map). It changes nothing;
the judgement shown is the one planning acts on (refusal, batch safety class, pushdown).
"""

from __future__ import annotations

import json
from typing import Any

from pyspark_incr.errors import UnknownModelError
from pyspark_incr.model.definition import Model
from pyspark_incr.plan import safety
from pyspark_incr.plan.planner import plan_run, sample_interval
from pyspark_incr.procedures.common import ENV, EXECUTION_TIME, env_arg, window_arg
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param
from pyspark_incr.safety.durations import iso_duration
from pyspark_incr.state.store import StateStore
from pyspark_incr.writers.base import BuildContext


@procedure(
    "explain",
    "What pyspark-incr makes of a model: its tables, its SQL rendered for a sample interval, the incremental "
    "safety verdict with each finding, and the bound of every timeseries source it reads. One row per item.",
    params=(Param("model", "string", "The model to explain.", required=True), ENV, EXECUTION_TIME),
    output=(
        Column("item", "string", "table, view, sql, safety, finding, admitted, bound, pushdown or batch_safety."),
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
    judgement = None
    if mp.model.kind.time_sliced:
        known = {m.name: m.model for m in plan.models}
        judgement = safety.judge(mp.model, safety.timeseries_sources(mp.model, known))
    interval = sample_interval(mp, window)
    ctx = BuildContext(spark, mp.model, mp.table, window.execution_ms, plan.table_map, plan.embedded,
                       pushdown=judgement.pushdown if judgement is not None else ())
    rows.append(("sql", name, ctx.query(interval).sql("spark"), json.dumps({"interval": str(interval)})))
    return rows + (_safety(mp.model, judgement) if judgement is not None else [])


def _safety(model: Model, judgement: safety.Judgement) -> list[tuple]:
    verdict = judgement.verdict
    rows = [("safety", model.name, judgement.refusal or "safe", None)]
    rows += [("finding", f.rule, f"line {f.line}, column {f.column}: {f.construct}: {f.why}",
              json.dumps({"rule": f.rule, "line": f.line, "column": f.column, "construct": f.construct}))
             for f in verdict.findings]
    rows += [("admitted", model.name, note, None) for note in verdict.admitted]
    rows += [("bound", b.source, b.kind, json.dumps(b.iso())) for b in judgement.bounds]
    rows += [("pushdown", p.source.name,
              f"{p.source.column} >= run start - {iso_duration(p.before_ms)} AND "
              f"{p.source.column} < run end + {iso_duration(p.after_ms)}", None)
             for p in judgement.pushdown]
    rows.append(("batch_safety", model.name, judgement.batch_class, None))
    return rows
