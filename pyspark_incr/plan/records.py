"""The records a plan is made of: one ``ModelPlan`` per model, and the ``Plan`` holding them."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from sqlglot import exp

from pyspark_incr.intervals.ranges import EMPTY, Interval, IntervalSet
from pyspark_incr.model.definition import Model
from pyspark_incr.plan.restatement import Restatement
from pyspark_incr.plan.safety import Judgement
from pyspark_incr.plan.schema_change import SchemaChange
from pyspark_incr.plan.window import Window
from pyspark_incr.safety.pushdown import Pushdown
from pyspark_incr.state.entries import EnvEntry
from pyspark_incr.sqltext import table_sql
from pyspark_incr.writers import can_build

#: Change categories, in the words the plan shows.
ADDED, CHANGED, METADATA, UNCHANGED, REMOVED = "added", "changed", "metadata", "unchanged", "removed"


@dataclass(frozen=True)
class ModelPlan:
    """One model's part of a plan."""

    name: str
    model: Model
    change: str
    reason: str
    fingerprint: str
    metadata_hash: str
    source: str
    #: The version's physical table (or view), the external table, or None when inlined (EMBEDDED).
    table: exp.Table | None
    start_ms: int | None = None
    expected: Interval | None = None
    missing: IntervalSet = EMPTY
    batches: tuple[Interval, ...] = ()
    #: The physical table must be (re)created and everything rebuilt: a new version, or its table is gone.
    rebuild: bool = False
    #: Intervals of this version already built (empty when rebuilding).
    built: IntervalSet = EMPTY
    #: Whether the model's table exists in the catalog now.
    table_exists: bool = False
    #: How many of the batches may run at once (0: as many as the call's concurrency allows, sharing it).
    batch_concurrency: int = 1
    #: Where the environment shows the model (a view over ``table``); None for EXTERNAL and EMBEDDED.
    view: exp.Table | None = None
    #: Whether that view exists in the catalog now.
    view_exists: bool = False
    #: The table the environment held the model in before this plan (None when it did not hold it).
    previous_table: str | None = None
    #: SQLMesh's change category of a changed model (breaking, non-breaking, indirect ...); empty otherwise.
    category: str = ""
    #: False when the environment does not hold the model yet (a new environment starts as a copy of prod).
    held: bool = True
    #: A forward-only change keeping its table: how the columns change, the query's output conformed to the
    #: table, what the model's policies refuse (apply stops) and what they warn about.
    schema_change: SchemaChange | None = None
    conform: tuple[tuple[str, str | None], ...] = ()
    refusals: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    #: The schema change can only be examined once the models it reads are built (their tables are new).
    examine_at_build: bool = False
    #: What the incremental safety gate says of a time-sliced model with work to do (None: not judged).
    safety: Judgement | None = None
    #: Set when a refused model is rebuilt whole under allow_downgrade: the warning its result rows carry.
    downgraded: str = ""
    #: signals: missing ranges not built because a signal (or a parent's) said not ready, with why.
    waiting: tuple[tuple[Interval, str], ...] = ()
    #: signals: a signal failed while checking; nothing of the model is built and the run reports this.
    signal_error: str = ""
    #: The version the environment holds, for a changed or metadata-changed model (what the plan's diff compares).
    previous: Model | None = field(default=None, compare=False, repr=False)
    #: An apply's unchanged version whose kept snapshot or judgement this code cannot take (an upgrade changed
    #: the parsing or judging code): its environment entry with a fresh one, recorded again as it is.
    restamp: EnvEntry | None = field(default=None, compare=False, repr=False)

    @property
    def unsafe(self) -> str:
        """The gate's refusal when the call must not build this model ('' when it may, or is downgraded)."""
        return self.safety.refusal if self.safety is not None and not self.downgraded else ""

    @property
    def pushdown(self) -> tuple[Pushdown, ...]:
        """Timeseries sources the model's batches read only over their window widened by the bound."""
        return self.safety.pushdown if self.safety is not None else ()

    @property
    def kind(self) -> str:
        return self.model.kind.name if self.model else ""

    @property
    def builds_object(self) -> bool:
        return self.model.kind.builds_object

    @property
    def table_settled(self) -> bool:
        """True when the call writes into the table and nothing of its catalog entry changes before the build (not
        created, altered, examined or documented then; no pre/post-statements, which could alter it anywhere):
        its entry may be read at the call's start, with every other such table's."""
        schema_changed = self.schema_change is not None and bool(self.schema_change.describe())
        statements = self.model.pre_statements or self.model.post_statements
        return (bool(self.batches) and self.builds_object and self.table is not None and not self.rebuild
                and self.change != METADATA and not self.examine_at_build and not schema_changed and not statements)

    def but(self, **changes: Any) -> ModelPlan:
        """This plan with ``changes``, as ``dataclasses.replace`` makes it but without calling the constructor
        again (a run plans each of 10,000 models into a record, then replaces it twice: ``replace`` was a fifth
        of such a plan), keeping the table and view names already written when the table and view stay."""
        unknown = changes.keys() - _FIELDS
        if unknown:
            raise TypeError(f"ModelPlan has no field {', '.join(sorted(unknown))}")
        changed = object.__new__(ModelPlan)
        changed.__dict__.update(self.__dict__)
        changed.__dict__.update(changes)
        for name, source in (("table_name", "table"), ("view_name", "view")):
            if source in changes:
                changed.__dict__.pop(name, None)
        return changed

    # a plan of 1,000 models asks each name a dozen times: written once
    @cached_property
    def table_name(self) -> str | None:
        return table_sql(self.table) if self.table is not None else None

    @cached_property
    def view_name(self) -> str | None:
        return table_sql(self.view) if self.view is not None else None

    @property
    def promotes(self) -> bool:
        """True when the environment's view must be (re)pointed at this version once it is built."""
        if self.change == UNCHANGED and self.held and self.view_exists:  # most models of a run: asked first
            return False
        return self.view is not None and self.view_name != self.table_name  # equal: the layout before versions

    @property
    def records_entry(self) -> bool:
        """True when the environment's state must say it holds this version after the plan."""
        return self.change != UNCHANGED or not self.held


_FIELDS = frozenset(f.name for f in fields(ModelPlan))


def named(plan: ModelPlan, table_name: str | None = None, view_name: str | None = None) -> ModelPlan:
    """``plan`` with the names of its table and view given as the caller wrote them already (``table_sql`` of the
    same records: a table and view shared across runs, their names written once), where ``table_name`` and
    ``view_name`` would write them again on first use. None leaves a name to be written then."""
    for key, value in (("table_name", table_name), ("view_name", view_name)):
        if value is not None:
            plan.__dict__[key] = value
    return plan


@dataclass(frozen=True)
class Plan:
    env: str
    window: Window
    models: tuple[ModelPlan, ...]
    #: Every model this environment knows (planned or not), mapped to the table it reads it from.
    table_map: dict[str, exp.Table]
    #: EMBEDDED models' queries, inlined wherever they are read.
    embedded: dict[str, str] = field(default_factory=dict)
    #: What a restatement restates, and which models it leaves out and why.
    restatement: Restatement = field(default_factory=Restatement)
    #: The environment's state version the plan was computed from (``StateStore.env_version``).
    basis: int = 0
    #: Lint warnings by model (config.yaml ``linter.warn_rules``; :mod:`pyspark_incr.plan.lint_gate`).
    lint: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def unbuildable(self) -> list[ModelPlan]:
        """Models this version cannot materialize, which would have to be built."""
        return [m for m in self.models if m.change != REMOVED and m.rebuild and not can_build(m.model)]


def sample_interval(mp: ModelPlan, window: Window) -> Interval:
    """An interval to render the query with when nothing else says which: the first batch, else the last due one."""
    if mp.batches:
        return mp.batches[0]
    if mp.expected is not None and not mp.expected.empty:
        return mp.expected
    return mp.model.schedule.latest_due(window.execution_ms, ignore_cron=window.ignore_cron)
