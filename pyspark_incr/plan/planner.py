"""Building a plan: per model, what changed and which intervals are missing.

A plan is an immutable record; ``incr.plan`` shows it, ``incr.apply`` and
``incr.run`` execute it. Making a plan reads state once and changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from functools import cached_property

from sqlglot import exp

from pyspark_incr import collector
from pyspark_incr.intervals.ranges import EMPTY, Interval, IntervalSet
from pyspark_incr.intervals.schedule import Schedule
from pyspark_incr.model.definition import Model
from pyspark_incr.model.fingerprint import data_hash, metadata_hash
from pyspark_incr.intervals.batching import covering
from pyspark_incr.errors import IncrError
from pyspark_incr.plan import auto_restatement, due, forward, readiness, safety, support, versions
from pyspark_incr.config import PHYSICAL_SCHEMA, setting
from pyspark_incr.plan.environment import PROD, physical_table, shown
from pyspark_incr.plan.listing import Listing
from pyspark_incr.plan.records import (  # noqa: F401 - re-exported: callers import the records from here
    ADDED, CHANGED, METADATA, REMOVED, UNCHANGED, ModelPlan, Plan, named, sample_interval,
)
from pyspark_incr.plan.restamp import restamped
from pyspark_incr.plan.restatement import Restatement, restatement
from pyspark_incr.plan.sentences import clauses, sentences
from pyspark_incr.plan.sources import Desired, select_models
from pyspark_incr.plan.window import Window, restriction
from pyspark_incr.project.dag import parents, topological
from pyspark_incr.state.store import EnvEntry, StateStore
from pyspark_incr.writers import BuildContext, can_build, writer_for


@collector.paused()
def plan_changes(store: StateStore, desired: Desired, env: str, window: Window, pattern: str | None,
                 physical_schema: str | None = None, categorize: Mapping[str, str] | None = None,
                 forward_only: bool = False, restate: str | None = None) -> Plan:
    """Compare ``desired`` with what ``env`` holds (the plan of incr.plan / incr.apply).

    An environment other than prod starts as a copy of prod: changes are categorized
    against prod's versions where the environment holds none of its own. New versions get
    tables in ``physical_schema`` (default: the session's ``spark.incr.physicalSchema``);
    ``categorize`` overrides the category of directly changed models; ``forward_only`` makes every
    change to an incremental model forward-only; ``restate`` (a selector) restates those models and
    the incremental models reading them over the window's range.
    """
    held = store.environment(env)
    current = held if env == PROD else {**store.environment(PROD), **held}
    applied = {n: e.parsed() for n, e in current.items()}
    known = {**applied, **desired.models}
    chosen = select_models(known, pattern)
    context = _Context(store, env, window, known, current, physical_schema, dict(categorize or {}), forward_only)
    context.restate(restate)
    plans: list[ModelPlan] = []
    for model in topological(desired.models.values()):
        entry = current.get(model.name)
        if model.name in chosen:
            planned = context.model_plan(model, entry, desired.source[model.name], held=model.name in held)
            plans.append(restamped(planned, entry, context.known))
        elif entry is not None:  # not planned, but its children's fingerprints need the version it has
            known[model.name] = applied[model.name]
            context.hashes[model.name] = entry.fingerprint
    for name, entry in sorted(held.items()):
        if name not in desired.models and name in chosen and entry.source in desired.sources:
            gone = sentences(f"no longer defined in {entry.source}")
            plans.append(ModelPlan(name, known[name], REMOVED, gone, entry.fingerprint, entry.metadata_hash,
                                   entry.source,
                                   context.physical(known[name], entry.fingerprint, entry), view=context.view(known[name]),
                                   previous_table=entry.table_name))
    return context.plan(plans)


@collector.paused()
def plan_run(store: StateStore, env: str, window: Window, pattern: str | None, restate: str | None = None,
             span: Interval | None = None, signals: bool = True, auto_restate: bool = False) -> Plan:
    """The models ``env`` holds, as applied, with their due missing intervals (the plan of incr.run);
    with ``restate``, only the models restating ``restate`` over ``span`` touches (the plan of incr.restate).
    ``signals=False`` leaves models' signals unasked (their missing intervals all planned as if ready);
    ``auto_restate`` (incr.run) restates the models whose ``auto_restatement_cron`` ticked, in prod."""
    current = store.environment(env)
    known = {n: e.parsed() for n, e in current.items()}
    context = _Context(store, env, window, known, current)
    context.check_signals = signals
    context.restate(restate, span)
    # incr.restate builds what it restates, not every interval missing up to now: that is incr.run's job
    context.only_restated = bool(restate)
    chosen = select_models(known, pattern) if not restate else set(context.restatement.ranges)
    if auto_restate and not restate and env == PROD:
        context.restatement = auto_restatement.due(store, {n: known[n] for n in chosen}, current, context.coverage,
                                                   window.execution_ms)
    return context.plan([context.model_plan(m, current[m.name], current[m.name].source, applied=True)
                         for m in topological(known.values()) if m.name in chosen])


class _Context:
    """What planning one environment needs: state, the known models and their data hashes so far."""

    def __init__(self, store: StateStore, env: str, window: Window, known: dict[str, Model],
                 current: dict[str, EnvEntry], physical_schema: str | None = None,
                 overrides: dict[str, str] | None = None, forward_only: bool = False) -> None:
        self.spark, self.env, self.window, self.known, self.current = store.spark, env, window, known, current
        self.store, self.overrides, self.forward_only = store, overrides or {}, forward_only
        #: The environment's state version this plan is computed from (checked again before promoting).
        self.basis = store.env_version(env)
        #: Change categories of the changed models planned so far (their children's categories follow from them).
        self.categories: dict[str, str] = {}
        self._physical_schema = physical_schema
        self.coverage = store.coverage()
        self.hashes: dict[str, str] = {}
        #: Which tables and views the catalog holds, listed once per plan.
        self.listing = Listing(store.spark, env, known, current)
        #: Physical tables of the models planned so far.
        self._tables: dict[str, exp.Table | None] = {}
        #: Models planned so far whose data this plan changes (rebuilt, given batches, or reading such a model).
        self._changing: set[str] = set()
        self.restatement = Restatement()
        #: Build nothing of a restated model outside its restated range (incr.restate; incr.plan backfills too).
        self.only_restated = False
        #: signals: per model planned so far, the missing ranges waiting for a signal (its children's wait too).
        self._waiting: dict[str, IntervalSet] = {}
        self.check_signals = True
        #: Expected ranges by (schedule, start, end, allow_partials), worked out once per plan: models alike share one
        #: record (a run of 1,000 idle models made 1,000, each living as long as the call).
        self._expected: dict[tuple, Interval] = {}
        #: The range start/end allow, by schedule (it depends on nothing else of a model), once per plan.
        self._allowed: dict[Schedule, IntervalSet] = {}

    @cached_property
    def physical_schema(self) -> str:
        """Where new versions' tables go; the session is asked (a round trip) only by a plan making one."""
        return self._physical_schema or setting(self.spark, PHYSICAL_SCHEMA)

    def restate(self, selector: str | None, span: Interval | None = None) -> None:
        """Restate ``selector``'s models (and the incremental models reading them) over ``span``
        (default: the window's range)."""
        if not selector:
            return
        if span is None:
            span = Interval.between(self.window.start_ms, self.window.end_ms)
        prod = {e.table_name for e in self.store.environment(PROD).values()} if self.env != PROD else set()
        tables = {name: entry.table_name for name, entry in self.current.items()}
        self.restatement = restatement(self.known, selector, span, self.env, tables, prod)

    def view(self, model: Model) -> exp.Table | None:
        """Where this environment shows ``model``; None when it has no object of ours (EXTERNAL, EMBEDDED)."""
        return shown(model.name, self.env)[0] if model.kind.builds_object else None

    def physical(self, model: Model, fingerprint: str, entry: EnvEntry | None) -> exp.Table | None:
        """The object holding this version: the table the environment already uses for it, else a new one."""
        if model.kind.inlined:
            return None
        if not model.kind.builds_object:
            return exp.to_table(model.name)
        if entry is not None and entry.fingerprint == fingerprint and entry.table_name:
            return entry.table
        return physical_table(model.name, fingerprint, self.physical_schema)

    def _read_from(self, name: str, model: Model) -> exp.Table | None:
        """The table children read ``name`` from: planned, else held by the environment, else its view."""
        if name in self._tables:
            return self._tables[name]
        entry = self.current.get(name)
        if entry is not None:
            return self.physical(model, entry.fingerprint, entry)
        return None if model.kind.inlined else self.view(model) or exp.to_table(model.name)

    def plan(self, plans: list[ModelPlan]) -> Plan:
        table_map = {name: t for name, m in self.known.items() if (t := self._read_from(name, m)) is not None}
        embedded = {name: m.query for name, m in self.known.items() if m.kind.inlined and m.query}
        return Plan(self.env, self.window, tuple(plans), table_map, embedded, self.restatement, self.basis)

    def model_plan(self, model: Model, entry: EnvEntry | None, source: str, applied: bool = False,
                   held: bool = True) -> ModelPlan:
        """The plan of one model; ``applied`` keeps the version the environment holds (run, unselected models);
        ``held`` is False when the environment does not hold the model yet (``entry`` is prod's)."""
        category = ""
        if applied:
            fingerprint, (change, reason) = entry.fingerprint, (UNCHANGED, "")
        else:
            fingerprint = data_hash(model, {p: self.hashes[p] for p in parents(model, self.hashes)})
            change, reason = _categorize(model, fingerprint, entry)
        self.hashes[model.name] = fingerprint
        table = self.physical(model, fingerprint, entry)
        if change == CHANGED:
            table, category, reason = self._changed(model, fingerprint, entry, table)
        concurrency, note = support.batch_concurrency(model)
        reason = sentences(reason, note)
        view = self.view(model)
        exists = model.kind.builds_object and self.listing.has(table)
        if not exists and model.kind.builds_object and self._limited():
            # a version built only over the requested range must never be taken for a complete one
            table = forward.preview_table(model, fingerprint, self.env, self.physical_schema)
            exists = self.listing.has(table)
            reason = sentences(reason, f"built only within start/end, in {table.sql('spark')}, "
                                       f"a table of {self.env} only")
        self._tables[model.name] = table
        if exists and change in (ADDED, CHANGED) and (entry is None or table.sql("spark") != entry.table_name):
            reason = sentences(reason, f"version already built in {table.sql('spark')}: reused")
        elif not exists and model.kind.builds_object and change in (UNCHANGED, METADATA):
            reason = sentences(reason, f"table {table.sql('spark')} is missing: rebuild")
        kept = entry is not None and entry.conform and table.sql("spark") == entry.table_name
        conform = tuple(tuple(c) for c in json.loads(entry.conform)) if kept else ()
        meta = entry.metadata_hash if applied else metadata_hash(model)  # as applied: not hashed again each run
        start = due.effective_start(model, entry, self.window)
        plan = ModelPlan(model.name, model, change, reason, fingerprint, meta, source, table,
                         start, rebuild=model.kind.builds_object and not exists,
                         table_exists=exists, batch_concurrency=concurrency, view=view,
                         view_exists=view is not None and self.listing.has(view),
                         previous_table=entry.table_name if entry and held else None, category=category, held=held,
                         conform=conform, previous=entry.parsed() if change in (CHANGED, METADATA) else None)
        plan = named(plan, entry.table_text if entry is not None and table is entry.table else None,
                     shown(model.name, self.env)[1] if view is not None else None)
        if not can_build(model):
            return replace(plan, reason=sentences(reason,
                                                  f"kind {model.kind.name} cannot be built by this version yet"))
        if category == forward.FORWARD_ONLY and exists:
            plan = self._schema_change(plan)
        if table is None or not model.kind.builds_object:
            planned = plan
        elif model.kind.has_intervals:
            planned = self._intervals(plan)
        else:
            planned = self._refresh(plan)
        if planned.safety is None and planned.records_entry and model.kind.time_sliced:
            planned = self._kept_judgement(planned)
        self._note_changes(planned)
        return planned

    def _judgement(self, model: Model) -> safety.Judgement:
        """The safety gate's judgement of ``model``: the one its environment entry keeps, when judged from the
        same (a plan of 10,000 due models judging each again took ten seconds), else judged now."""
        entry = self.current.get(model.name)
        return safety.judge(model, safety.timeseries_sources(model, self.known),
                            entry.judgement() if entry is not None else None)

    def _kept_judgement(self, plan: ModelPlan) -> ModelPlan:
        """A version this call records without gating it (nothing missing: a promotion, a metadata change) is
        judged all the same, so the state keeps its judgement for later runs; a refused one is left to the
        plan that builds it, as its refusal fails only a call that would build it."""
        judgement = self._judgement(plan.model)
        return plan if judgement.refused else plan.but(safety=judgement)

    def _changed(self, model: Model, fingerprint: str, entry: EnvEntry,
                 table: exp.Table | None) -> tuple[exp.Table | None, str, str]:
        """A changed model's table, category and reason: forward-only and indirect non-breaking changes keep
        the table of the version they replace, others get the new version's."""
        decision = versions.decide(entry.parsed(), model, self.categories, self.overrides)
        category, reason = decision.category, decision.reason
        if category != versions.INDIRECT_NON_BREAKING and entry.table_name and forward.applies(model, self.forward_only):
            category = forward.FORWARD_ONLY
            table, reason = forward.table_for(model, fingerprint, entry.table_name, self.env, self.physical_schema)
        elif decision.keeps_table and entry.table_name:
            table = exp.to_table(entry.table_name, dialect="spark")
        self.categories[model.name] = category
        return table, category, reason

    def _intervals(self, plan: ModelPlan) -> ModelPlan:
        model, window = plan.model, self.window
        key = (model.schedule, plan.start_ms, model.end_ms, model.allow_partials)
        expected = self._expected.get(key)
        if expected is None:
            expected = self._expected[key] = model.schedule.expected(
                plan.start_ms, model.end_ms, window.execution_ms, ignore_cron=window.ignore_cron,
                allow_partials=model.allow_partials)
        built = EMPTY if plan.rebuild else self.coverage.get(plan.table_name, EMPTY)
        restated = self.restatement.ranges.get(plan.name)
        if restated is not None:
            restated = IntervalSet([expected if model.kind.whole_table else restated]).intersection(IntervalSet([expected]))
            built = built - restated
            plan = replace(plan, reason=sentences(plan.reason, f"restated {restated}"))
        elif plan.name in self.restatement.skipped:
            plan = replace(plan, reason=sentences(plan.reason, self.restatement.skipped[plan.name]))
        allowed = self._allowed.get(model.schedule)
        if allowed is None:
            allowed = self._allowed[model.schedule] = IntervalSet.of(restriction(model, window))
        if restated is not None and self.only_restated:
            allowed = allowed.intersection(restated)
        gaps = IntervalSet.of(expected) - built
        if model.allow_partials:  # as SQLMesh: an interval an earlier run built partly is built again from its start
            gaps = IntervalSet([Interval(model.schedule.floor(r.start), r.end) for r in gaps])
        missing = due.with_lookback(model, expected, gaps).intersection(allowed)
        plan = plan.but(expected=expected, missing=missing, built=built)
        if not missing:  # what most models of a run find: no signal to ask, nothing to gate or to cut into batches
            return plan
        if self.check_signals:  # signals: only the intervals every signal says are ready go on
            plan = self._signals(plan)
            if plan.signal_error or not plan.missing:
                return plan
            missing = plan.missing
        if model.kind.time_sliced:
            return self._gated(plan, allowed)
        batches = tuple(writer_for(model).plan_batches(model, expected, missing, window.per_partition))
        return replace(plan, batches=batches)

    def _signals(self, plan: ModelPlan) -> ModelPlan:
        """``plan`` building only the missing intervals its signals, and its parents' signals, say are ready;
        the others wait (said in the reason), or a failing signal builds nothing of the model."""
        model = plan.model
        blocked = {p: self._waiting[p] for p in parents(model, self._waiting)}
        found = readiness.inherited(model, plan.missing, blocked) if blocked else None
        ready, waiting = (found.ready, found.waiting) if found else (plan.missing, [])
        if model.signals and ready:
            reading = self.plan([])
            try:
                checked = readiness.check(self.spark, model, ready, self.window.execution_ms, reading.table_map,
                                          reading.embedded)
            except IncrError as e:
                return replace(plan, missing=IntervalSet(), signal_error=str(e), reason=sentences(plan.reason, str(e)))
            ready, waiting = checked.ready, sorted([*waiting, *checked.waiting], key=lambda w: w[0].start)
        if not waiting:
            return plan
        self._waiting[model.name] = IntervalSet([i for i, _ in waiting])
        said = [f"{i} waits: {why}" for i, why in waiting]
        return replace(plan, missing=ready, waiting=tuple(waiting),
                       reason=sentences(plan.reason, clauses(said) + "; the next run checks again"))

    def _gated(self, plan: ModelPlan, allowed: IntervalSet) -> ModelPlan:
        """A time-sliced model with work to do, through the incremental safety gate (:mod:`plan.safety`):
        refused; rebuilt whole under allow_downgrade; or cut into jobs by its batch safety class, its
        timeseries sources pushed down."""
        model = plan.model
        judgement = self._judgement(model)
        if judgement.refused and not self.window.allow_downgrade:
            return plan.but(safety=judgement, reason=sentences(
                plan.reason, "refused by the incremental safety check (incr.explain shows why); apply and run "
                             "fail unless the SQL is fixed, safety_overrides vouch for it or allow_downgrade => true"))
        if judgement.refused:
            whole = IntervalSet([plan.expected]).intersection(allowed)
            why = clauses(judgement.refusal.splitlines()[1:-1])
            return plan.but(safety=judgement, missing=whole, batches=tuple(covering(whole)),
                            downgraded=f"warning: downgraded to a full refresh (allow_downgrade): {why}",
                            reason=sentences(plan.reason, "refused by the incremental safety check: allow_downgrade "
                                                          "rebuilds it whole, in one job"))
        per_partition = self.window.per_partition or judgement.batch_class == safety.PER_PARTITION_ONLY
        batches = tuple(writer_for(model).plan_batches(model, plan.expected, plan.missing, per_partition))
        return plan.but(safety=judgement, batches=batches)

    def _schema_change(self, plan: ModelPlan) -> ModelPlan:
        """A forward-only change keeping a table: how its columns change, and what the policies say."""
        if any(not self.listing.has(t) for p in parents(plan.model, self._tables) if (t := self._tables[p]) is not None):
            return replace(plan, examine_at_build=True,
                           reason=sentences(plan.reason, "its columns are compared once the models it reads are built"))
        change, conform, refused, warned = forward.examine(self._build_context(plan), writer_for(plan.model),
                                                          sample_interval(plan, self.window))
        reason = plan.reason
        if refused:
            reason = sentences(reason, "refused by on_additive_change/on_destructive_change: " + clauses(refused))
        elif change.describe():
            reason = sentences(reason, ("warning: " if warned else "") + clauses(change.describe()))
        return replace(plan, reason=reason, schema_change=change, conform=conform, refusals=tuple(refused),
                       warnings=tuple(warned))

    def _refresh(self, plan: ModelPlan) -> ModelPlan:
        """A kind without intervals keeps its object until a new version, unless its writer finds it stale
        (a materialized view whose sources changed, now or earlier in this plan)."""
        if plan.rebuild or not plan.model.kind.stores_rows:  # a plain view shows its parents' new rows by itself
            return plan
        if not self.coverage.get(plan.table_name):  # created, but its build never finished
            return replace(plan, rebuild=True, reason=sentences(plan.reason, "its last build did not finish: rebuild"))
        interval = sample_interval(plan, self.window)
        changed = parents(plan.model, self._changing)
        if changed:
            reason = f"reads {', '.join(changed)}, which this plan changes: refresh"
        else:
            reason = writer_for(plan.model).stale(self._build_context(plan), interval)
        if reason is None:
            return plan
        return replace(plan, batches=(interval,), reason=sentences(plan.reason, reason))

    def _build_context(self, plan: ModelPlan) -> BuildContext:
        """What a writer needs to look at ``plan``'s model now; the models planned so far are read at their new versions."""
        reading = self.plan([])
        return BuildContext(self.spark, plan.model, plan.table, self.window.execution_ms,
                            reading.table_map, reading.embedded)

    def _note_changes(self, plan: ModelPlan) -> None:
        through = not plan.model.kind.has_intervals and parents(plan.model, self._changing)
        if plan.rebuild or plan.batches or through:
            self._changing.add(plan.name)

    def _limited(self) -> bool:
        """True for a plan outside prod that limits its backfill with start/end (a preview of recent data)."""
        return self.env != PROD and (self.window.start_ms is not None or self.window.end_ms is not None)


def _categorize(model: Model, fingerprint: str, entry: EnvEntry | None) -> tuple[str, str]:
    if entry is None:
        return ADDED, "new model"
    if entry.fingerprint != fingerprint:
        return CHANGED, "query, kind or a parent changed: rebuild"
    if entry.metadata_hash != metadata_hash(model):
        return METADATA, "metadata changed: no rebuild"
    return UNCHANGED, ""
