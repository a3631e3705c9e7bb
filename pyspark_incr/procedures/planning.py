"""incr.plan and incr.apply: compare the wanted models with an environment, then make it so."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pyspark_incr import timings
from pyspark_incr.plan import lint_gate
from pyspark_incr.plan.categorize import parse_overrides
from pyspark_incr.plan.diff import change_diff
from pyspark_incr.plan.planner import Plan, plan_changes
from pyspark_incr.plan.sources import desired_models
from pyspark_incr.plan.validate import validate
from pyspark_incr.project.loader import load
from pyspark_incr.procedures.common import (
    ALLOW_DOWNGRADE, BATCH_OUTPUT, CONCURRENCY, END, ENV, EXECUTION_TIME, FAIL_FAST, PER_PARTITION, PROJECT,
    RAISE_ON_FAILURE, SELECT, START, WAIT, batch_rows, concurrency_arg, env_arg, fail_fast_arg, raise_failures,
    raise_on_failure_arg, ts, wait_arg, window_arg,
)
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param
from pyspark_incr.run import guard
from pyspark_incr.state.store import StateStore

CATEGORIZE = Param(
    "categorize", "string",
    "Change categories to use instead of the automatic ones, for directly changed models: "
    "'shop.daily:breaking, shop.totals:non-breaking'.",
)
FORWARD_ONLY = Param(
    "forward_only", "boolean",
    "Make every change to an incremental model forward-only: its table is kept and the change applies to "
    "intervals built from now on (in an environment other than prod: previewed in a table of its own).",
    default=False,
)
RESTATE = Param(
    "restate", "string",
    "Models to restate (a selector as for select): their intervals within start/end, and those of the "
    "incremental models reading them, are built again (see incr.restate).",
)
PLAN_PARAMS = (ENV, PROJECT, SELECT, START, END, EXECUTION_TIME, PER_PARTITION, CATEGORIZE, FORWARD_ONLY, RESTATE,
               ALLOW_DOWNGRADE)

PLAN_OUTPUT = (
    Column("model", "string", "Model name."),
    Column("kind", "string", "Model kind."),
    Column("change", "string", "added, changed, metadata, unchanged or removed."),
    Column("category", "string", "For a changed model: breaking, non-breaking, indirect breaking or indirect "
                                 "non-breaking (children of non-breaking changes keep their tables)."),
    Column("reason", "string", "Why the model is in that category."),
    Column("start", "timestamp", "Start of a missing range to backfill (UTC, inclusive); NULL when none."),
    Column("end", "timestamp", "End of that range (UTC, exclusive)."),
    Column("intervals", "bigint", "Number of missing intervals in the range."),
    Column("batches", "bigint", "Number of jobs apply will run for the range."),
    Column("table", "string", "The table or view the environment reads the model from."),
    Column("diff", "string", "On the first row of a model whose own definition changed (added, removed, changed "
                             "directly or metadata): the models downstream it affects, each with its category and "
                             "why ('affects shop.totals: indirect breaking. Reads shop.daily (breaking): rebuild.'), "
                             "then unified diffs of its SQL (pretty-printed, so whitespace and comments never "
                             "show) and of its MODEL properties, against the version the environment holds; "
                             "NULL on other rows."),
    Column("lint", "string", "On the first row of a model, its lint warnings (config.yaml linter.warn_rules, with "
                             "linter enabled), one per line: 'rule: message (line L, column C)'; NULL when none. "
                             "A linter.rules finding stops the plan instead (INCR_LINT_FAILED)."),
)


def _plan(spark: Any, env: str | None, project: str | None, select: str | None, start: str | None,
          end: str | None, execution_time: str | None, per_partition: bool, categorize: str | None,
          forward_only: bool, restate: str | None, allow_downgrade: bool = False, concurrency: int | None = None,
          building: bool = True) -> tuple[StateStore, Plan, int]:
    loaded = load(project) if project else None
    warned = lint_gate.check(loaded) if loaded else {}
    limit = concurrency_arg(spark, concurrency, loaded.config.settings.get("concurrency") if loaded else None)
    store = StateStore(spark, loaded.config.settings.get("state_schema") if loaded else None)
    desired = desired_models(store, loaded)
    plan = plan_changes(store, desired, env_arg(spark, env),
                        window_arg(start, end, execution_time, per_partition=per_partition,
                                   allow_downgrade=allow_downgrade), select,
                        loaded.config.settings.get("physical_schema") if loaded else None,
                        parse_overrides(categorize, desired.models), bool(forward_only), restate)
    validate(spark, plan, building)
    return store, replace(plan, lint=warned) if warned else plan, limit


@procedure(
    "plan",
    "Preview, without changing anything, what incr.apply would do: per model its change category "
    "and the interval ranges that need backfill.",
    params=PLAN_PARAMS,
    output=PLAN_OUTPUT,
)
def plan(spark: Any, **args: Any) -> list[tuple]:
    _, the_plan, _ = _plan(spark, **args, building=False)
    rows = []
    for mp in the_plan.models:
        table = mp.view_name or mp.table_name or "(inlined into its children)"
        ranges = list(mp.missing) or [None]
        shown = change_diff(the_plan, mp)
        lint = "\n".join(the_plan.lint.get(mp.name, ())) or None
        for k, r in enumerate(ranges):
            count = mp.model.schedule.unit.count(r.start, r.end) if r else 0
            jobs = sum(1 for b in mp.batches if b.start < r.end and r.start < b.end) if r else len(mp.batches)
            rows.append((mp.name, mp.kind, mp.change, mp.category or None, mp.reason or None, ts(r.start if r else None),
                         ts(r.end if r else None), count, jobs, table, shown if k == 0 else None,
                         lint if k == 0 else None))
    return rows


@procedure(
    "apply",
    "Make an environment match the models (registry plus project): create, rebuild or remove "
    "tables and views, then backfill missing intervals. One row per executed step.",
    params=(*PLAN_PARAMS, CONCURRENCY, FAIL_FAST, RAISE_ON_FAILURE, WAIT),
    output=BATCH_OUTPUT,
)
def apply(spark: Any, fail_fast: bool | None = None, raise_on_failure: bool | None = None, wait: str | None = None,
          **args: Any) -> list[tuple]:
    stop, raising = fail_fast_arg(spark, fail_fast), raise_on_failure_arg(spark, raise_on_failure)
    with timings.phase("plan"):
        store, the_plan, limit = _plan(spark, **args)
    results = guard.execute(spark, store, the_plan, lambda: _plan(spark, **args)[1], "apply", limit, stop,
                            wait_arg("apply", wait))
    if raising:
        raise_failures("apply", the_plan.env, results, store.schema)
    return batch_rows(results)
