"""Running a plan under the claims of what it writes, so two calls never apply the same work twice.

A plan is made without claims (a call with nothing to write takes none). When it writes, the
call claims every physical table it writes and, when it changes what an environment shows, that
environment; then it plans again if state moved while it waited (the previous holder built what
this call was about to build), and executes the fresh plan, checking its claims before each commit.

What the call could not do because of another call is said in its result rows, never left silent:
intervals another application built while this call waited, and (``incr.run``) models whose table
another application still holds when the wait ran out, with their holder. A holder found dead (its
lease ran out) is fenced and its run recorded ``abandoned`` in the ``runs`` state table.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from sqlglot import exp

from pyspark_incr import timings
from pyspark_incr.errors import LockTimeout
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.plan.planner import METADATA, REMOVED, ModelPlan, Plan
from pyspark_incr.plan.sentences import sentence
from pyspark_incr.project.dag import parents
from pyspark_incr.run.executor import BatchResult, Executor
from pyspark_incr.run.locks import Locks, NoFence, env_key, owner_id, table_key
from pyspark_incr.state import claims, compact
from pyspark_incr.state import tables as t
from pyspark_incr.state.store import StateStore, files_version
from pyspark_incr.writers import generations, tables

_ATTEMPTS = 3
#: The state tables a plan is made from: when their files changed since, the plan is made again.
_PLANNED_FROM = (t.INTERVALS, t.ENVIRONMENTS)


def execute(spark: Any, store: StateStore, plan: Plan, make_plan: Callable[[], Plan], procedure: str,
            concurrency: int = 1, fail_fast: bool = False, wait_s: float | None = None,
            partial: bool = False, settle: Callable[[Plan, list[BatchResult], Any], None] | None = None,
            ) -> list[BatchResult]:
    """Claim what ``plan`` writes, plan again with ``make_plan`` if state changed meanwhile, execute.

    With ``partial`` (incr.run), models whose table another call still holds after ``wait_s`` are
    reported ``claimed`` with their holder, and the models reading them ``skipped``; the rest runs.
    ``settle(plan executed, results, fence)`` records what the call did while its claims are still held.
    """
    keys = written(plan)
    first = plan
    with timings.phase("state check"):
        basis = tuple(store.read_version(table) for table in _PLANNED_FROM)  # the state the plan was made from
    for _ in range(_ATTEMPTS):
        if not keys:
            results = Executor(spark, store, plan, procedure, concurrency, fail_fast=fail_fast).execute()
            if settle is not None:
                with timings.phase("settle"):
                    settle(plan, results, NoFence())
            return results
        run_id = uuid.uuid4().hex
        locks = Locks(spark, store.schema, owner_id(run_id), procedure, wait_s, work=_work(plan), env=plan.env)
        with timings.entered("claim", locks.held(keys, partial), left="release"):
            _record_abandoned(store, locks.fenced, owner_id(run_id))
            _discard_orphans(spark, plan, locks.fenced)
            now = _state_marker(spark, store.schema)
            # another call recorded state since the plan read it; an auto restatement is decided again under
            # the claims whatever the files say, so that one application does it and the others see it done
            if now != basis or None in now or plan.restatement.auto:
                with timings.phase("replan"):
                    plan, basis = make_plan(), now
            with timings.phase("forget cached"):
                _forget_cached(spark, plan)
            if written(plan) <= keys:
                kept, reported = _without_claimed(plan, locks.claimed)
                results = Executor(spark, store, kept, procedure, concurrency, run_id=run_id, fail_fast=fail_fast,
                                   fence=locks).execute()
                results += reported + _built_meanwhile(first, plan, locks.waited)
                if settle is not None:
                    with timings.phase("settle"):
                        settle(plan, results, locks)
                break
        keys = keys | written(plan)  # the fresh plan writes more: take those claims too, in order
    else:
        raise LockTimeout(f"incr.{procedure}: what this call writes kept changing while it waited for claims "
                          f"({', '.join(sorted(keys))}); run it again")
    with timings.phase("compact"):
        compact.after_call(spark, store.schema)
    return results


def written(plan: Plan) -> set[str]:
    """Claim keys of what executing ``plan`` changes: physical tables it writes, environments it repoints."""
    keys = set()
    for mp in plan.models:
        # a table an environment is pointed at is claimed too: the janitor must not drop it meanwhile
        if _writes_table(mp) or (mp.promotes and mp.builds_object and mp.table_name):
            keys.add(table_key(mp.table_name))
        if mp.change == REMOVED or mp.promotes or mp.records_entry or mp.restamp is not None:
            keys.add(env_key(plan.env))
    return keys


def _writes_table(mp: ModelPlan) -> bool:
    writes = mp.batches or mp.rebuild or mp.change == METADATA or mp.schema_change is not None
    return bool(writes and mp.builds_object and mp.table_name)


def _forget_cached(spark: Any, plan: Plan) -> None:
    """Forget this session's cached listings of the tables the plan writes and reads.

    Another application may have written them since this session last looked (Spark caches a
    table's relation and file listing per session); a build reading its own table (unique-key,
    SCD type 2, a cursor's high-water mark) or a parent from that cache would work on old rows.
    Models with nothing to write read nothing either: a run with one model due among 1,000 forgets
    that model's tables only.
    """
    seen = set()
    for mp in plan.models:
        if not _writes_table(mp):
            continue
        for table in (mp.table, *(plan.table_map.get(d, d) for d in mp.model.depends_on)):
            name = table.sql("spark") if isinstance(table, exp.Table) else table
            if name is not None and name not in seen:
                seen.add(name)
                tables.forget_cached(spark, table)


def _work(plan: Plan) -> dict[str, tuple[tuple[str, int | None, int | None], ...]]:
    """What the call will build under each table key, as its claim shows it to others."""
    return {table_key(mp.table_name): tuple((mp.name, b.start, b.end) for b in mp.batches) or ((mp.name, None, None),)
            for mp in plan.models if _writes_table(mp)}


def _without_claimed(plan: Plan, claimed: dict[str, claims.Holder]) -> tuple[Plan, list[BatchResult]]:
    """``plan`` without the models whose table is claimed elsewhere (and those reading them); their rows."""
    if not claimed:
        return plan, []
    names = [m.name for m in plan.models]
    out: dict[str, str] = {}
    rows = []
    for mp in plan.models:
        holder = claimed.get(table_key(mp.table_name)) if _writes_table(mp) else None
        blocked = next((p for p in parents(mp.model, names) if p in out), None)
        if holder is not None:
            out[mp.name] = holder.describe()
            rows += _rows(mp, "claimed", f"in progress elsewhere: claimed by {holder.describe()}")
        elif blocked is not None:
            out[mp.name] = out[blocked]
            rows += _rows(mp, "skipped", f"model {blocked}, which it reads, is being built by {out[blocked]}")
    return replace(plan, models=tuple(m for m in plan.models if m.name not in out)), rows


def _built_meanwhile(first: Plan, final: Plan, waited: dict[str, claims.Holder]) -> list[BatchResult]:
    """Batches the first plan had and the plan made after waiting has not: another call built them."""
    now = {mp.name: set(mp.batches) for mp in final.models}
    rows = []
    for mp in first.models:
        holder = waited.get(table_key(mp.table_name)) if _writes_table(mp) else None
        gone = [b for b in mp.batches if b not in now.get(mp.name, set())]
        if holder is not None and gone:
            rows += _rows(replace(mp, batches=tuple(gone)), "skipped", f"built meanwhile by {holder.describe()}")
    return rows


def _rows(mp: ModelPlan, status: str, message: str) -> list[BatchResult]:
    batches: tuple[Interval | None, ...] = mp.batches if mp.model.kind.has_intervals and mp.batches else (None,)
    return [BatchResult(mp.name, mp.kind, "build" if b else "refresh", b,
                        mp.model.schedule.unit.count(b.start, b.end) if b else 0, status, 0.0, sentence(message))
            for b in batches]


def _record_abandoned(store: StateStore, fenced: list[claims.Holder], taker: str) -> None:
    """Runs whose claim was found dead: a row per batch each had claimed, ``ok`` where its interval was
    recorded built before it stopped, ``abandoned`` where not (what ``incr.history`` shows of a killed run)."""
    rows = []
    for h in fenced:
        run_id = h.owner.partition("@")[0]
        built = store.built_by(run_id)
        for model, start, end in h.work or ((None, None, None),):
            done = start is not None and built.get(model) is not None and built[model].covers(Interval(start, end))
            what = "built, then its run stopped" if done else "abandoned"
            rows.append({
                "run_id": run_id, "procedure": h.procedure, "env": h.env, "model": model, "fingerprint": None,
                "start_ms": start, "end_ms": end, "status": "ok" if done else "abandoned", "rows": None,
                "message": f"{what}: {h.describe()} stopped renewing its claim on {h.key}; taken over by {taker}",
                "started_at": _utc(h.since_ms), "finished_at": _utc(h.last_ms),
            })
    store.append(t.RUNS, rows)


def _discard_orphans(spark: Any, plan: Plan, fenced: list[claims.Holder]) -> None:
    """Delete what the dead holders staged and never published in the tables whose claims were taken over."""
    dead = {h.key for h in fenced}
    for mp in plan.models:
        if mp.table_name and table_key(mp.table_name) in dead:
            generations.discard_orphans(spark, mp.table)


def _utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, timezone.utc)


def _state_marker(spark: Any, schema: str) -> tuple:
    """What changes when another call records intervals or environment rows (their files, listed)."""
    with timings.phase("state check"):
        return tuple(files_version(spark, schema, table.name) for table in _PLANNED_FROM)
