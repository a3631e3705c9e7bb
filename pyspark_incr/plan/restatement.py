"""Restatement: built intervals of chosen models, and of the incremental models reading them, built again.

Restating treats a range of a model's built intervals as missing, in the plan
only: each interval stays recorded as built until its rewrite commits (writers
replace an interval's rows exactly), so a failed restatement leaves the old rows
and state as they were. Models reading a restated model are restated over the
same range, widened to their own interval grid.

Who is not restated:
- a model with ``disable_restatement`` (SCD type 2 models by default): refused
  when named, skipped when downstream;
- cursor models: their rows come from a high-water mark, not from intervals
  (change the definition for a full reload): refused when named, skipped downstream;
- models without intervals (views, seeds): views show the new rows anyway;
- outside prod, a model whose table prod also reads: restating it would change
  prod's data (refused when named, skipped downstream; restate in prod).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark_incr.errors import ArgumentError
from pyspark_incr.intervals.ranges import BEGINNING, END, Interval
from pyspark_incr.model.definition import Model
from pyspark_incr.plan.environment import PROD
from pyspark_incr.plan.sources import select_models


@dataclass(frozen=True)
class Restatement:
    """Per restated model the range treated as missing; per skipped model, why."""

    ranges: dict[str, Interval] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    #: An auto restatement (:mod:`pyspark_incr.plan.auto_restatement`): per model whose cron ticked, the models
    #: restated because of it, itself first.
    auto: dict[str, tuple[str, ...]] = field(default_factory=dict)


def restatement(known: Mapping[str, Model], selector: str, span: Interval, env: str,
                tables: Mapping[str, str | None], prod_tables: set[str]) -> Restatement:
    """What restating ``selector``'s models over ``span`` in ``env`` restates (``tables``: each model's table)."""
    named = select_models(known, selector)
    downstream = select_models(known, ",".join(f"{n}+" for n in sorted(named))) - named
    ranges, skipped = {}, {}
    for name in sorted(named | downstream):
        model = known[name]
        if not model.kind.has_intervals or not model.kind.builds_object:
            continue
        why = _not_restatable(model, env, tables.get(name), prod_tables)
        if why and name in named:
            raise ArgumentError(f"restate: model {name} {why}")
        if why:
            skipped[name] = f"not restated: {why}"
        else:
            ranges[name] = _on_grid(model, span)
    return Restatement(ranges, skipped)


def _not_restatable(model: Model, env: str, table: str | None, prod_tables: set[str]) -> str | None:
    if getattr(model.kind, "disable_restatement", False):
        return "has disable_restatement; remove it from the model's kind to restate it"
    if model.kind.name == "INCREMENTAL_BY_CURSOR":
        return "is a cursor model, built from its high-water mark; change its definition for a full reload"
    if env != PROD and table in prod_tables:
        return f"shares its table {table} with prod; restate it in prod (env => 'prod')"
    return None


def _on_grid(model: Model, span: Interval) -> Interval:
    """``span`` widened to whole intervals of ``model``."""
    schedule = model.schedule
    start = schedule.floor(span.start) if span.start > BEGINNING else span.start
    if span.end >= END:
        return Interval(start, span.end)
    end = schedule.floor(span.end - 1)
    return Interval(start, schedule.unit.add(end, 1))
