"""The incremental safety check's findings as lint rules (``pyspark-incr lint``), one rule per construct.

``incr.apply`` refuses a time-sliced model whose query may compute other rows on one time slice
than on all data (:mod:`pyspark_incr.plan.safety`); linting shows the same findings earlier, each
under the rule named after what it found (``safety_window``, ``safety_limit``, ...). A model's
``safety_overrides`` admit a construct here as they do at apply. In a project without a ``linter:``
section these rules run as warnings; ``linter.rules`` makes them errors, as apply treats them.
Importing this module registers them in :data:`pyspark_incr.project.lint_rules.REGISTRY`.
"""

from __future__ import annotations

from typing import ClassVar

from pyspark_incr.errors import IncrError
from pyspark_incr.plan import safety
from pyspark_incr.project.lint_rules import LintContext, LintModel, Position, Range, Rule, RuleViolation
from pyspark_incr.safety import bounds, classify


def _judgement(model: LintModel, context: LintContext | None) -> safety.Judgement | None:
    """The safety gate's judgement of a time-sliced SQL model (None for others, or one the gate cannot read)."""
    record = model.record
    if not record.kind.time_sliced or record.query is None or context is None:
        return None
    try:
        return safety.judge(record, safety.timeseries_sources(record, context.models))
    except IncrError:  # a query the gate cannot read: pyspark-incr validate reports it
        return None


def _at(line: int, column: int) -> Range:
    start = Position(max(line - 1, 0), max(column - 1, 0))
    return Range(start, start)


class _SafetyRule(Rule):
    """A construct the incremental safety check refuses on a time slice."""

    abstract = True
    default_warning = True
    #: The safety check's own name for the construct (:data:`pyspark_incr.safety.rules.RULES`).
    construct: ClassVar[str] = ""

    def check_model(self, model: LintModel) -> list[RuleViolation]:
        judgement = _judgement(model, self.context)
        if judgement is None:
            return []
        override = classify.RULE_OVERRIDE[self.construct]
        return [self.violation(f"{f.construct}: {f.why}; fix the SQL, or set safety_overrides ({override} = true) "
                               "if you have verified it is safe on a time slice", _at(f.line, f.column))
                for f in judgement.verdict.findings if f.rule == self.construct]


# One lint rule per rule of the safety check, made from its list so that a new safety rule is linted too.
for _construct in classify.RULES:
    type(f"Safety_{_construct}", (_SafetyRule,), {
        "__doc__": f"{classify.WHY[_construct][0].upper()}{classify.WHY[_construct][1:]}, on a time-sliced model.",
        "__module__": __name__, "name": f"safety_{_construct}", "construct": _construct})


class SafetySourceBound(Rule):
    """A time-series source whose reach outside the run window cannot be derived, on a time-sliced model."""

    name = "safety_source_bound"
    default_warning = True

    def check_model(self, model: LintModel) -> list[RuleViolation]:
        judgement = _judgement(model, self.context)
        if judgement is None:
            return []
        windows = any(f.rule == "window" for f in judgement.verdict.findings)  # safety_window says it already
        return [self.violation(
            f"source {b.source}: cannot derive how far outside the run window it must be read ({b.reason}); bound "
            f"{b.source}.{b.column} with a condition like {b.column} >= @start_ts - INTERVAL '<n> <unit>' AND "
            f"{b.column} < @end_ts")
            for b in judgement.bounds if b.kind == bounds.NOT_DERIVABLE
            and not (windows and all("(window " in r for r in b.reason.split("; ")))]
