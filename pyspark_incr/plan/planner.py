"""Building a plan: per model, what changed and which intervals are missing.

A plan is an immutable record; ``incr.plan`` shows it, ``incr.apply`` and
``incr.run`` execute it. Making a plan reads state once and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from sqlglot import exp

from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model, parse_model
from pyspark_incr.model.fingerprint import data_hash, metadata_hash
from pyspark_incr.plan.environment import table_for
from pyspark_incr.plan.sources import Desired, select
from pyspark_incr.project.dag import topological
from pyspark_incr.state.store import EnvEntry, StateStore
from pyspark_incr.writers import tables, writer_for

#: Change categories, in the words the plan shows.
ADDED, CHANGED, METADATA, UNCHANGED, REMOVED = "added", "changed", "metadata", "unchanged", "removed"


@dataclass(frozen=True)
class Window:
    """What the caller asked for: when "now" is, and an optional range restriction."""

    execution_ms: int
    start_ms: int | None = None
    end_ms: int | None = None
    ignore_cron: bool = False


@dataclass(frozen=True)
class ModelPlan:
    """One model's part of a plan."""

    name: str
    model: Model | None
    change: str
    reason: str
    fingerprint: str
    metadata_hash: str
    source: str
    table: exp.Table
    start_ms: int | None
    expected: Interval | None
    missing: IntervalSet
    batches: tuple[Interval, ...]
    #: The physical table must be (re)created and everything rebuilt: a new version, or its table is gone.
    rebuild: bool = False

    @property
    def kind(self) -> str:
        return self.model.kind.name if self.model else ""


@dataclass(frozen=True)
class Plan:
    env: str
    window: Window
    models: tuple[ModelPlan, ...]
    #: Every model this environment knows (planned or not), mapped to the table it reads it from.
    table_map: dict[str, exp.Table]


def plan_changes(store: StateStore, desired: Desired, env: str, window: Window, pattern: str | None) -> Plan:
    """Compare ``desired`` with what ``env`` holds (the plan of incr.plan / incr.apply)."""
    current = store.environment(env)
    chosen = select(sorted(set(desired.models) | set(current)), pattern)
    plans: list[ModelPlan] = []
    coverage = _Coverage(store)
    for model in topological(desired.models.values()):
        entry = current.get(model.name)
        change, reason = _categorize(model, entry)
        if model.name not in chosen:
            if entry is None:
                continue
            model, change, reason = parse_model(entry.definition), UNCHANGED, "not selected"
            source = entry.source
        else:
            source = desired.source[model.name]
        plans.append(_model_plan(model, entry, change, reason, source, env, window, coverage))
    for name, entry in sorted(current.items()):
        if name not in desired.models and name in chosen and entry.source in desired.sources:
            plans.append(
                ModelPlan(name, None, REMOVED, f"no longer defined in {entry.source}", entry.fingerprint,
                          entry.metadata_hash, entry.source, table_for(name, env), None, None, IntervalSet(), ())
            )
    known = set(desired.models) | set(current)
    return Plan(env, window, tuple(plans), {name: table_for(name, env) for name in known})


def plan_run(store: StateStore, env: str, window: Window, pattern: str | None) -> Plan:
    """The models ``env`` holds, as applied, with their due missing intervals (the plan of incr.run)."""
    current = store.environment(env)
    chosen = select(sorted(current), pattern)
    coverage = _Coverage(store)
    models = topological(parse_model(e.definition) for e in current.values())
    return Plan(
        env,
        window,
        tuple(
            _model_plan(m, current[m.name], UNCHANGED, "", current[m.name].source, env, window, coverage)
            for m in models
            if m.name in chosen
        ),
        {name: table_for(name, env) for name in current},
    )


def _categorize(model: Model, entry: EnvEntry | None) -> tuple[str, str]:
    if entry is None:
        return ADDED, "new model"
    if entry.fingerprint != data_hash(model):
        return CHANGED, "query or kind changed: rebuild"
    if entry.metadata_hash != metadata_hash(model):
        return METADATA, "metadata changed: no rebuild"
    return UNCHANGED, ""


class _Coverage:
    """Built intervals per model version, where the physical table still exists."""

    def __init__(self, store: StateStore) -> None:
        self.spark = store.spark
        self.sets = store.coverage()

    def built(self, table: exp.Table, fingerprint: str) -> IntervalSet | None:
        """What is built, or None when state has intervals but the table is gone (dropped behind our back)."""
        built = self.sets.get((table.sql("spark"), fingerprint), IntervalSet())
        if built and not tables.exists(self.spark, table):
            return None
        return built


def _model_plan(
    model: Model, entry: EnvEntry | None, change: str, reason: str, source: str, env: str,
    window: Window, coverage: _Coverage,
) -> ModelPlan:
    table = table_for(model.name, env)
    fingerprint = data_hash(model)
    start = _effective_start(model, entry, window)
    expected = None
    missing = IntervalSet()
    batches: tuple[Interval, ...] = ()
    rebuild = change in (ADDED, CHANGED)
    if model.kind.has_intervals:
        expected = model.schedule.expected(start, model.end_ms, window.execution_ms, ignore_cron=window.ignore_cron)
        built = IntervalSet() if rebuild else coverage.built(table, fingerprint)
        if built is None:
            built, rebuild, reason = IntervalSet(), True, f"table {table.sql('spark')} is missing: rebuild"
        missing = (IntervalSet([expected]) - built).intersection(IntervalSet([_restriction(model, window)]))
        batches = tuple(writer_for(model).plan_batches(model, expected, missing))
    return ModelPlan(model.name, model, change, reason, fingerprint, metadata_hash(model), source, table,
                     start, expected, missing, batches, rebuild)


def _effective_start(model: Model, entry: EnvEntry | None, window: Window) -> int:
    """The model's start; without one, the start the environment first used, else the last due interval."""
    if model.start_ms is not None:
        return model.start_ms
    if entry is not None and entry.start_ms is not None:
        return entry.start_ms
    unit = model.schedule.unit
    return unit.add(model.schedule.due_end(window.execution_ms, ignore_cron=window.ignore_cron), -1)


def _restriction(model: Model, window: Window) -> Interval:
    unit = model.schedule.unit
    lo = unit.floor(window.start_ms) if window.start_ms is not None else -(2**62)
    hi = unit.ceil(window.end_ms) if window.end_ms is not None else 2**62
    return Interval(lo, max(lo, hi))


def sample_interval(mp: ModelPlan, window: Window) -> Interval:
    """An interval to render the query with when nothing else says which: the first batch, else the last due one."""
    if mp.batches:
        return mp.batches[0]
    if mp.expected is not None and not mp.expected.empty:
        return mp.expected
    schedule = mp.model.schedule
    end = schedule.due_end(window.execution_ms, ignore_cron=window.ignore_cron)
    return Interval(schedule.unit.add(end, -1), end)
