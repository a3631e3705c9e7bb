"""incr.explain (alias incr.render): what pyspark-incr makes of one model, before anything runs.

One row per item: where the model lives, its SQL rendered for a sample interval,
the incremental safety verdict with each finding, and how far outside a run's
window each timeseries source must be read (smelt's bound map). The model is the
one the environment holds, or, given ``project``/``definition``, the one that text
defines, applied or not (as ``sqlmesh render`` renders any model of a project).
It changes nothing; the judgement shown is the one planning acts on (refusal,
batch safety class, pushdown).
"""

from __future__ import annotations

import json
from typing import Any

from pyspark_incr.errors import ArgumentError, UnknownModelError
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.model.definition import Model, parse_model
from pyspark_incr.model import python_model  # Python models
from pyspark_incr.plan import safety
from pyspark_incr.plan.planner import Plan, plan_changes, plan_run, sample_interval
from pyspark_incr.plan.records import ModelPlan
from pyspark_incr.plan.sources import REGISTRY, Desired, desired_models
from pyspark_incr.plan.window import Window, restriction
from pyspark_incr.procedures.common import ENV, EXECUTION_TIME, env_arg, window_arg
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param
from pyspark_incr.project.loader import load, with_content_hash
from pyspark_incr.safety.durations import iso_duration
from pyspark_incr.state.store import StateIfAny
from pyspark_incr.writers.base import BuildContext

PARAMS = (
    Param("model", "string", "The model to explain (default with definition: the model it defines)."),
    ENV,
    EXECUTION_TIME,
    Param("project", "string",
          "Project directory holding models/*.sql, relative to the Spark driver's working directory: explain the "
          "model as the project defines it, applied or not (registered models are included too)."),
    Param("definition", "string",
          "A model definition, MODEL (...); SELECT ... as incr.create_model takes it: explain it without "
          "registering it (it stands in for a registered or project model of its name)."),
    Param("start", "string",
          "Render the SQL for the intervals from this date/timestamp on (UTC, ISO; must start an interval of the "
          "model); without end, for the one interval starting there."),
    Param("end", "string",
          "Render the SQL for the intervals before this point (UTC, ISO; a bare date means through that day; must "
          "end an interval of the model); without start, for the one interval ending there."),
)
OUTPUT = (
    Column("item", "string", "table, view, sql, pre_statement, post_statement, safety, finding, admitted, bound, "
                             "pushdown or batch_safety."),
    Column("name", "string", "What the item is about: the model, a rule, or a source."),
    Column("detail", "string", "The item in words."),
    Column("json", "string", "The item as JSON (bounds as smelt's explain prints them; with project or definition, "
                             "the table row says how the model differs from the environment's: "
                             "{\"change\": \"added\"}, changed, metadata or unchanged)."),
)
SAMPLE = (
    " Without start/end the SQL is rendered for the first batch a run would build next, else the model's whole "
    "range; with project or definition, for the latest whole interval before execution_time (never before "
    "the model's start). It writes nothing."
)


@procedure(
    "explain",
    "What pyspark-incr makes of a model: its tables, its SQL rendered for a sample interval, the incremental "
    "safety verdict with each finding, and the bound of every timeseries source it reads. One row per item." + SAMPLE,
    params=PARAMS,
    output=OUTPUT,
)
def explain(spark: Any, **args: Any) -> list[tuple]:
    """``CALL incr.explain(...)``: the rows describing one model (see the module docstring)."""
    return _explain("explain", spark, **args)


@procedure(
    "render",
    "incr.explain under SQLMesh's name (sqlmesh render): the same parameters and rows, among them the model's "
    "SQL rendered for an interval (the sql row)." + SAMPLE,
    params=PARAMS,
    output=OUTPUT,
)
def render(spark: Any, **args: Any) -> list[tuple]:
    """``CALL incr.render(...)``: incr.explain under the name SQLMesh users look for."""
    return _explain("render", spark, **args)


def _explain(called: str, spark: Any, model: str | None, env: str | None, execution_time: str | None,
             project: str | None, definition: str | None, start: str | None, end: str | None) -> list[tuple]:
    env_name, defined = env_arg(spark, env), bool(project or definition)
    window = window_arg(None, None, execution_time, ignore_cron=True)
    asked = window_arg(start, end, execution_time)
    if defined:
        plan, name = _as_defined(called, spark, env_name, window, model, project, definition)
    else:
        plan, name = _as_applied(called, spark, env_name, window, model)
    mp = next(m for m in plan.models if m.name == name)
    if start or end:
        interval = _asked(mp.model, asked)
    else:
        interval = _latest_whole(mp.model, window) if defined else sample_interval(mp, window)
    return _rows(spark, plan, mp, interval, json.dumps({"change": mp.change}) if defined else None)


def _as_applied(called: str, spark: Any, env: str, window: Window, model: str | None) -> tuple[Plan, str]:
    """The plan of ``model`` (with the models it reads) as ``env`` holds it."""
    if not model:
        raise ArgumentError(f"{called}: argument model is required (or pass definition => 'MODEL (...); "
                            "SELECT ...')")
    name, store = model.strip().lower(), StateIfAny(spark)
    known = store.environment(env)
    if name not in known:
        raise UnknownModelError(
            f"{called}: model {model!r} is not in environment {env} (it holds: "
            f"{', '.join(sorted(known)) or 'none'}); to explain a model not applied yet, pass "
            "project => '<project dir>' or definition => 'MODEL (...); SELECT ...'"
        )
    return plan_run(store, env, window, f"+{name}"), name


def _as_defined(called: str, spark: Any, env: str, window: Window, model: str | None, project: str | None,
                definition: str | None) -> tuple[Plan, str]:
    """The plan of ``model`` as the project and/or definition define it, as ``incr.plan`` would make it."""
    loaded = load(project) if project else None
    settings = loaded.config.settings if loaded else {}
    store = StateIfAny(spark, settings.get("state_schema"))
    desired = desired_models(store, loaded)
    name = model.strip().lower() if model else None
    if definition:
        given = with_content_hash(parse_model(definition))
        desired = Desired({**desired.models, given.name: given}, {**desired.source, given.name: REGISTRY},
                          desired.sources)
        name = name or given.name
    if name is None:
        raise ArgumentError(f"{called}: with project, argument model is required: name the model to explain")
    if name not in desired.models:
        looked = " nor ".join(([f"in project {project!r}"] if project else []) +
                              (["by the definition"] if definition else []))
        raise UnknownModelError(
            f"{called}: model {model!r} is defined neither {looked} nor registered "
            f"(known: {', '.join(sorted(desired.models)) or 'none'}); name one of those, or leave out project "
            "and definition to explain the version the environment holds"
        )
    return plan_changes(store, desired, env, window, f"+{name}", settings.get("physical_schema")), name


def _latest_whole(model: Model, window: Window) -> Interval:
    """The latest whole interval before the execution time; the model's first one when it starts later."""
    schedule, start = model.schedule, model.start_ms
    latest = schedule.latest_due(window.execution_ms, ignore_cron=True)
    if start is None or latest.start >= schedule.floor(start):
        return latest
    first = schedule.floor(start)
    return Interval(first, schedule.unit.add(first, 1))


def _asked(model: Model, asked: Window) -> Interval:
    """The interval ``start``/``end`` name (aligned to ``model``'s intervals); one interval when one side is open."""
    span, unit = restriction(model, asked), model.schedule.unit
    lo = span.start if asked.start_ms is not None else unit.add(span.end, -1)
    hi = span.end if asked.end_ms is not None else unit.add(span.start, 1)
    return Interval(lo, hi)


def _rows(spark: Any, plan: Plan, mp: ModelPlan, interval: Interval, change: str | None) -> list[tuple]:
    name = mp.name
    rows = [("table", name, mp.table_name or "(inlined into its children)", change),
            ("view", name, mp.view_name or "(none)", None)]
    if python_model.is_python(mp.model):  # Python models: no SQL to show; the safety check skips them
        return rows + [("safety", name, python_model.UNCHECKED, None)]
    if mp.model.query is None:
        return rows
    judgement = None
    if mp.model.kind.time_sliced:
        known = {m.name: m.model for m in plan.models}
        judgement = safety.judge(mp.model, safety.timeseries_sources(mp.model, known))
    ctx = BuildContext(spark, mp.model, mp.table, plan.window.execution_ms, plan.table_map, plan.embedded,
                       pushdown=judgement.pushdown if judgement is not None else ())
    rows.append(("sql", name, ctx.query(interval).sql("spark"), json.dumps({"interval": str(interval)})))
    for item, statements in (("pre_statement", mp.model.pre_statements), ("post_statement", mp.model.post_statements)):
        for statement in statements:
            sql = ctx.statement_sql(statement, interval)
            rows.append((item, name, sql if sql is not None else f"(skipped: @IF({statement.when}) is false)",
                         json.dumps({"interval": str(interval)})))
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
