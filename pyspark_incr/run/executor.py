"""Executing a plan: models parents-first, batch by batch, recording state as data lands.

State order per batch makes crashes safe: an interval being rewritten is first
marked missing, and is marked built only after its data is committed.

Independent models run at the same time, up to ``concurrency``; a model starts
once every model it reads has finished. Within a model, up to its
``batch_concurrency`` batches run at once (unset: as many as the call allows, as
with SQLMesh's ``concurrent_tasks``); the models building and the batches beside
their first share the ``concurrency`` places. Each batch's Spark jobs carry the
fair-scheduler pool ``incr``, the run's job group and the batch as description.

A failed batch (any error inside Spark: a missing file, a schema mismatch, a task that
ran out of memory) is reported and recorded with Spark's message; its interval stays
missing, the model's later batches and the models reading it are skipped, and independent
models go on -- unless ``fail_fast``: then nothing more starts after the first failure.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from pyspark_incr import commits, timings
from pyspark_incr.intervals.ranges import ALL_TIME, Interval, IntervalSet
from pyspark_incr.plan import forward, safety, schema_change
from pyspark_incr.plan.planner import ADDED, CHANGED, METADATA, REMOVED, ModelPlan, Plan, sample_interval
from pyspark_incr.plan.sentences import clauses, sentences
from pyspark_incr.project.dag import parents
from pyspark_incr.errors import AuditFailed, ModelDefinitionError
from pyspark_incr.run import audits, lanes, progress, settings
from pyspark_incr.run.locks import NoFence, env_key, table_key
from pyspark_incr.state import tables as t
from pyspark_incr.state.entries import entry_row
from pyspark_incr.state.store import StateStore
from pyspark_incr.writers import promote, tables, writer_for
from pyspark_incr.writers.base import BuildContext, first_line

@dataclass(frozen=True)
class BatchResult:
    """One executed step, as incr.apply / incr.run report it."""

    model: str
    kind: str
    action: str
    interval: Interval | None
    intervals: int
    status: str
    seconds: float
    message: str = ""
    rows: int | None = None


class Executor:
    """Runs one plan for one procedure call."""

    def __init__(self, spark: Any, store: StateStore, plan: Plan, procedure: str, concurrency: int = 1,
                 run_id: str | None = None, fail_fast: bool = False, fence: Any = None) -> None:
        self.spark, self.store, self.plan, self.procedure = spark, store, plan, procedure
        #: The call's claims (:class:`~pyspark_incr.run.locks.Locks`): checked before each commit of data or state.
        self.fence = fence or NoFence()
        self.concurrency = max(1, concurrency)
        #: Shared by the models building at once and the batches each runs beside its first.
        self._places = lanes.Places(self.concurrency)
        self.fail_fast = fail_fast
        #: With fail_fast, the model whose failure stopped the call.
        self.halted_by: str | None = None
        self.run_id = run_id or uuid.uuid4().hex
        self.results: list[BatchResult] = []
        self.failed: set[str] = set()
        self._runs: list[dict] = []
        #: Progress steps per model: its batches, or one for a model without (a view, a drop, nothing to do).
        self._steps = progress.Steps({m.name: max(1, len(m.batches)) for m in plan.models})
        self._lock = threading.Lock()
        self._names = frozenset(m.name for m in plan.models)
        #: Model plans completed while building (a forward-only schema change examined after the parents).
        self._replanned: dict[str, ModelPlan] = {}
        #: The catalog entries of the tables the call writes (``BuildContext.described_by_call``).
        self._described: dict = {}

    def execute(self) -> list[BatchResult]:
        """Run the plan; the results in plan order (models parents-first, each model's steps in time order)."""
        with timings.phase("safety"):
            safety.check(self.plan.models)  # a refused model fails the call before anything is written
        by_name = {m.name: m for m in self.plan.models}
        progress.publish(progress.Started(0, self._steps.total))
        with timings.phase("describe"):
            self._described.update(tables.described_each(self.spark, [m.table for m in self.plan.models
                                                                       if m.table_settled]))
        try:
            lanes.run_dag(list(by_name), self._dependencies(), lambda name: self._settled(by_name[name]),
                          self.concurrency, inline=lambda name: _idle(by_name[name]), places=self._places)
            with timings.phase("views"):
                self._promote([self._replanned.get(m.name, m) for m in self.plan.models
                               if m.change != REMOVED and self._promotable(m)])
        finally:  # a call stopped by a lost claim still says what it did
            timings.timed("runs record", self.store.append)(t.RUNS, self._runs)
        order = {name: i for i, name in enumerate(by_name)}
        return sorted(self.results, key=lambda r: (order[r.model], r.interval is not None, r.interval and r.interval.start))

    def _dependencies(self) -> dict[str, list[str]]:
        """What each model waits for: the models it reads; removals wait for everything else."""
        kept = [m.name for m in self.plan.models if m.change != REMOVED]
        return {m.name: kept if m.change == REMOVED else parents(m.model, self._names) for m in self.plan.models}

    def _settled(self, mp: ModelPlan) -> None:
        """Run ``mp``'s step, then count as done the steps it will never report: batches not started after a
        failure, or the one step of a model with nothing to do; progress so ends at its total."""
        self._step(mp)
        with self._lock:
            left = self._steps.settle(mp.name)
            done = self._steps.done
        if left > 0:
            status = "skipped" if mp.name in self.failed else "up to date"
            progress.publish(progress.Settled(done, self._steps.total, mp.name, left, status))

    def _step(self, mp: ModelPlan) -> None:
        if mp.change == REMOVED:
            self._remove(mp)
        elif self.halted_by is not None:
            self._fail(mp)
            self._result(mp, "skip", None, "skipped", 0.0, self._halted_message())
        elif self.failed and any(p in self.failed for p in parents(mp.model, self._names)):
            self._fail(mp)
            self._result(mp, "skip", None, "skipped", 0.0, "a parent model failed")
        elif mp.signal_error:  # signals: a failing signal builds nothing; its readers are skipped
            self._fail(mp)
            self._result(mp, "check signals", None, "failed", 0.0, mp.signal_error)
        else:
            if not _idle(mp):  # labelling a thread's jobs costs two round trips: none for a model with nothing to do
                with lanes.spark_job(self.spark, f"incr-{self.run_id}", f"incr {mp.name}"):
                    self._build(mp)
            for interval, why in mp.waiting:  # signals: not built, not recorded; the next run checks again
                self._result(mp, "wait", interval, "waiting", 0.0, f"{why}; the next run checks again")

    def _remove(self, mp: ModelPlan) -> None:
        """The environment stops showing the model; its physical table stays for other environments (janitor)."""
        started = time.monotonic()
        self.fence.commit(env_key(self.plan.env), f"remove {mp.name}")
        if mp.view is not None:  # an EXTERNAL model's table is not ours to drop
            tables.drop(self.spark, mp.view)
        self.store.append(t.ENVIRONMENTS, [self._env_row(mp, "remove")])
        self._result(mp, "drop" if mp.builds_object else "forget", None, "ok", time.monotonic() - started)

    def _build(self, mp: ModelPlan) -> None:
        if not mp.builds_object:
            return
        ctx = BuildContext(self.spark, mp.model, mp.table, self.plan.window.execution_ms,
                           self.plan.table_map, self.plan.embedded, rebuild=mp.rebuild, conform=mp.conform,
                           pushdown=mp.pushdown, described_by_call=self._described)
        writer = writer_for(mp.model)
        started = time.monotonic()
        try:
            ctx = replace(ctx, spark=settings.session_for(self.spark, mp.model))  # session_properties
            if mp.examine_at_build:
                mp = self._examined(mp, ctx, writer)
                ctx = replace(ctx, conform=mp.conform)
            if mp.schema_change is not None and mp.schema_change.describe():
                self._alter(mp, started)
            if mp.rebuild:
                self.fence.commit(table_key(mp.table_name or ""), f"create {mp.name}")
                with timings.phase("prepare"), ctx.statements_around(None):  # pre/post-statements, stage creating
                    writer.prepare(ctx, sample_interval(mp, self.plan.window))
                self._record_intervals(mp, ALL_TIME, "remove")  # whatever state said of an earlier table so named
                if not mp.model.kind.has_intervals:  # its object is complete: a rerun need not rebuild it
                    self._record_intervals(mp, ALL_TIME, "add")
            elif mp.change == METADATA:
                writer.document(ctx, sample_interval(mp, self.plan.window))
        except Exception as e:  # noqa: BLE001 - reported in the result rows, other models go on
            self._fail(mp)
            self._result(mp, "create", None, "failed", time.monotonic() - started, _failure(e))
            return
        if mp.rebuild and not mp.model.kind.has_intervals:
            self._result(mp, f"create {mp.kind.lower()}", None, "ok", time.monotonic() - started)
        at_once = mp.batch_concurrency or self.concurrency  # unset: as many as the call's places allow
        lanes.run_batches(mp.batches, lambda batch: self._write(writer, ctx, mp, batch), at_once, self._places)

    def _examined(self, mp: ModelPlan, ctx: BuildContext, writer: Any) -> ModelPlan:
        """The schema change of a forward-only model whose parents were just built; refused as apply would have."""
        change, conform, refused, warned = forward.examine(ctx, writer, sample_interval(mp, self.plan.window))
        if refused:
            raise ModelDefinitionError(schema_change.refusal(f"model {mp.name}", mp.table_name, refused))
        examined = replace(mp, schema_change=change, conform=conform, warnings=tuple(warned), examine_at_build=False)
        with self._lock:
            self._replanned[mp.name] = examined
        return examined

    def _alter(self, mp: ModelPlan, started: float) -> None:
        """A forward-only change keeping its table: add the new columns its policy lets in, and say what changed."""
        added = schema_change.columns_to_add(mp.schema_change, mp.model.kind.on_additive_change)
        if added:
            tables.add_columns(self.spark, mp.table, added)
        message = ("warning: " if mp.warnings else "") + clauses(mp.schema_change.describe())
        self._result(mp, "alter", None, "ok", time.monotonic() - started, message)

    def _write(self, writer: Any, ctx: BuildContext, mp: ModelPlan, batch: Interval) -> bool:
        label = f"incr {mp.name} {batch}"
        with timings.phase("batch"), lanes.spark_job(self.spark, f"incr-{self.run_id}", label):
            return self._write_batch(writer, ctx, mp, batch)

    def _write_batch(self, writer: Any, ctx: BuildContext, mp: ModelPlan, batch: Interval) -> bool:
        if self.halted_by is not None:  # another model failed: this batch and the model's later ones stay missing
            self._fail(mp)
            self._result(mp, "skip", _reported(mp, batch)[1], "skipped", 0.0, self._halted_message())
            return False
        with self._lock:
            done = self._steps.done
        progress.publish(progress.Started(done, self._steps.total, mp.name, _reported(mp, batch)[1]))
        started = time.monotonic()
        try:
            if mp.built.intersection(IntervalSet([batch])):
                self._record_intervals(mp, batch, "remove")
            key = table_key(mp.table_name or "")
            self.fence.commit(key, f"write {mp.name} [{batch.start}, {batch.end})")
            with commits.guarded(lambda what: self.fence.commit(key, what), self.fence.claim_ref(key)):  # again as rows go public
                with timings.phase("write"), ctx.statements_around(batch):  # pre/post-statements, stage evaluating
                    rows = writer.write(ctx, batch)
            warnings = timings.timed("audits", self._audit)(writer, ctx, mp, batch)
            # as SQLMesh: allow_partials records a partial last interval as built up to where it was built (the planner
            # builds it again whole once more of it is due); otherwise only complete intervals are recorded
            complete = batch if mp.model.allow_partials else \
                Interval(batch.start, max(batch.start, mp.model.schedule.floor(batch.end)))
            if mp.model.kind.has_intervals and not complete.empty:
                self._record_intervals(mp, complete, "add")
        except Exception as e:  # noqa: BLE001 - reported in the result rows, other models go on
            self._fail(mp)
            self._result(mp, *_reported(mp, batch), "failed", time.monotonic() - started, _failure(e))
            return False
        warnings = [mp.downgraded, *warnings] if mp.downgraded else warnings
        self._result(mp, *_reported(mp, batch), "ok", time.monotonic() - started, sentences(*warnings), rows=rows)
        return True

    def _audit(self, writer: Any, ctx: BuildContext, mp: ModelPlan, batch: Interval) -> list[str]:
        """Run the model's audits on the batch just written; a blocking failure raises, others become warnings."""
        if not mp.model.audits:
            return []
        warnings = []
        for outcome in audits.evaluate(self.spark, mp.model, writer.audited_rows(ctx, batch)):
            if outcome.status == "failed":
                raise AuditFailed(f"audit {outcome.audit} failed: {outcome.bad_rows} bad rows in {batch}")
            if outcome.status == "warning":
                warnings.append(f"warning: audit {outcome.audit} found {outcome.bad_rows} bad rows")
        return warnings

    def _promotable(self, mp: ModelPlan) -> bool:
        """Built without failure; or new to the environment, failed in a batch but with its table created.

        A failed new version never replaces the version an environment holds. A model the
        environment did not hold has nothing to protect: it is shown with what was built, and
        its missing intervals stay missing for the next run, as for any failed batch.
        """
        if mp.name not in self.failed:
            return True
        return mp.change == ADDED and mp.builds_object and tables.exists(self.spark, mp.table)

    def _promote(self, built: list[ModelPlan]) -> None:
        """Point the environment at the versions just built, all together once every build is done.

        A changed model whose build failed keeps the version the environment had (its new table
        keeps what was built, for the next apply to continue).
        """
        restamps = [mp.restamp for mp in built if mp.restamp is not None]
        writes = bool(restamps) or any(mp.promotes or mp.records_entry for mp in built)
        if writes and self._superseded(built):
            return
        if writes:
            self.fence.commit(env_key(self.plan.env), "promote")
        rows = [entry_row(self.plan.env, entry, self.run_id) for entry in restamps]
        for mp in built:
            if mp.promotes:
                started = time.monotonic()
                try:
                    promote.point_view(self.spark, mp)
                except Exception as e:  # noqa: BLE001 - reported in the result rows, other models go on
                    self._result(mp, "promote", None, "failed", time.monotonic() - started, _failure(e))
                    continue
                if mp.change in (ADDED, CHANGED) and not any(r.model == mp.name for r in self.results):
                    self._result(mp, "promote", None, "ok", time.monotonic() - started)
                self._on_virtual_update(mp)
            if mp.records_entry:
                rows.append(self._env_row(mp, "apply"))
        self.store.append(t.ENVIRONMENTS, rows)

    def _on_virtual_update(self, mp: ModelPlan) -> None:
        """the model's on_virtual_update statements; a failure is reported, the new version stays
        promoted and recorded (its view already shows it)."""
        if not mp.model.on_virtual_update:
            return
        started = time.monotonic()
        try:
            promote.run_on_virtual_update(self.spark, mp)
        except Exception as e:  # noqa: BLE001 - reported in the result rows, other models go on
            self._result(mp, "on virtual update", None, "failed", time.monotonic() - started, _failure(e))

    def _superseded(self, built: list[ModelPlan]) -> bool:
        """True (and every promotion reported failed) when another apply changed the environment since this plan.

        Promoting would overwrite what that apply did with versions chosen without knowing it.
        """
        now = StateStore(self.spark, self.store.schema).env_version(self.plan.env)
        if now == self.plan.basis:
            return False
        for mp in built:
            if mp.promotes or mp.records_entry:
                self._result(mp, "promote", None, "failed", 0.0,
                             f"environment {self.plan.env} changed since this {self.procedure} was planned (another "
                             f"apply); nothing was promoted, what was built is kept: run {self.procedure} again")
        return True

    def _fail(self, mp: ModelPlan) -> None:
        with self._lock:
            if self.fail_fast and self.halted_by is None and mp.name not in self.failed:
                self.halted_by = mp.name
            self.failed.add(mp.name)

    def _halted_message(self) -> str:
        return (f"not started: fail_fast stopped the {self.procedure} after model {self.halted_by} failed; "
                "the next run builds what is missing")

    def _record_intervals(self, mp: ModelPlan, interval: Interval, op: str) -> None:
        self.fence.commit(table_key(mp.table_name or ""), f"{op} {mp.name} [{interval.start}, {interval.end})")
        with timings.phase("state commit"):
            self.store.append(t.INTERVALS, [t.interval_row(mp.table_name, mp.fingerprint, mp.name, interval.start,
                                                           interval.end, op, self.run_id)])

    def _env_row(self, mp: ModelPlan, op: str) -> dict:
        return {
            "env": self.plan.env, "model": mp.name, "fingerprint": mp.fingerprint,
            "metadata_hash": mp.metadata_hash, "definition": mp.model.definition,
            "source": mp.source, "model_source": mp.model.source, "context": mp.model.context,
            "table_name": mp.table_name, "start_ms": mp.start_ms, "op": op, "run_id": self.run_id,
            "conform": json.dumps(mp.conform) if mp.conform else None,
            "judgement": mp.safety,  # kept with the version: a later plan judging it from the same takes it
        }

    def _result(self, mp: ModelPlan, action: str, interval: Interval | None, status: str,
                seconds: float, message: str = "", rows: int | None = None) -> None:
        count = mp.model.schedule.unit.count(interval.start, interval.end) if interval else 0
        message = sentences(message)
        result = BatchResult(mp.name, mp.kind, action, interval, count, status, round(seconds, 3), message, rows)
        now = time.time()
        with self._lock:
            self.results.append(result)
            # an alter precedes the model's steps and a wait (signals) builds nothing: neither is one of its steps
            if action not in ("alter", "wait"):
                self._steps.step(mp.name)
            event = progress.Event(self._steps.done, self._steps.total, result)
            self._runs.append({
                "run_id": self.run_id, "procedure": self.procedure, "env": self.plan.env, "model": mp.name,
                "fingerprint": mp.fingerprint, "start_ms": interval.start if interval else None,
                "end_ms": interval.end if interval else None, "status": status, "rows": rows,
                "message": message or action, "started_at": _utc(now - seconds), "finished_at": _utc(now),
            })
        progress.publish(event)


def _idle(mp: ModelPlan) -> bool:
    """True when ``mp``'s step starts nothing in Spark: no object to create, batch to write, columns to add
    or compare, comment to set, view to drop (what a run finds for every model that is not due)."""
    if mp.change == REMOVED:
        return False
    altered = mp.schema_change is not None and bool(mp.schema_change.describe())
    return not (mp.builds_object and (mp.rebuild or mp.batches or mp.change == METADATA or mp.examine_at_build
                                      or altered))


def _reported(mp: ModelPlan, batch: Interval) -> tuple[str, Interval | None]:
    """How a batch is reported: an interval build (a full refresh when downgraded), or the refresh of an object
    without intervals."""
    if not mp.model.kind.has_intervals:
        return "refresh", None
    return ("full refresh" if mp.downgraded else "build"), batch


def _failure(e: Exception) -> str:
    """A failed step's message: the error's first line, said to be Spark's when it opens with Spark's error class."""
    text = first_line(e)
    return f"Spark error: {text}" if text.startswith("[") else text


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)
