"""incr.run (the scheduled job) and incr.status (coverage and gaps)."""

from __future__ import annotations

from functools import partial
from typing import Any

from pyspark_incr import timings
from pyspark_incr.errors import ArgumentError, UnknownModelError
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.intervals.times import to_end_ms, to_ms
from pyspark_incr.plan import auto_restatement
from pyspark_incr.plan.planner import plan_run
from pyspark_incr.plan.sentences import sentence
from pyspark_incr.procedures.common import (
    ALLOW_DOWNGRADE, BATCH_OUTPUT, CONCURRENCY, END, ENV, EXECUTION_TIME, FAIL_FAST, IGNORE_CRON, PER_PARTITION,
    RAISE_ON_FAILURE, SELECT, START, WAIT, batch_rows, concurrency_arg, env_arg, fail_fast_arg, raise_failures,
    raise_on_failure_arg, ts, wait_arg, window_arg,
)
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param
from pyspark_incr.run import guard
from pyspark_incr.run.locks import in_flight, table_key
from pyspark_incr.state.store import StateStore


@procedure(
    "run",
    "The scheduled job: for the models an environment holds, build the complete missing intervals "
    "whose cron is due. One row per executed batch.",
    params=(ENV, SELECT, START, END, EXECUTION_TIME, IGNORE_CRON, PER_PARTITION, ALLOW_DOWNGRADE, CONCURRENCY,
            FAIL_FAST, RAISE_ON_FAILURE, WAIT),
    output=BATCH_OUTPUT,
)
def run(spark: Any, env: str | None, select: str | None, start: str | None, end: str | None,
        execution_time: str | None, ignore_cron: bool, per_partition: bool, allow_downgrade: bool,
        concurrency: int | None, fail_fast: bool | None, raise_on_failure: bool | None = None,
        wait: str | None = None) -> list[tuple]:
    limit, stop = concurrency_arg(spark, concurrency), fail_fast_arg(spark, fail_fast)
    raising = raise_on_failure_arg(spark, raise_on_failure)
    store = StateStore(spark)
    window = window_arg(start, end, execution_time, ignore_cron, per_partition, allow_downgrade)
    env_name = env_arg(spark, env)
    with timings.phase("plan"):
        plan = plan_run(store, env_name, window, select, auto_restate=True)
    replan = lambda: plan_run(StateStore(spark), env_name, window, select, auto_restate=True)  # noqa: E731
    results = guard.execute(spark, store, plan, replan, "run", limit, stop, wait_arg("run", wait), partial=True,
                            settle=partial(_record_auto_restatements, spark, store.schema))
    if raising:
        raise_failures("run", env_name, results, store.schema)
    return batch_rows(results)


def _record_auto_restatements(spark: Any, schema: str, done: Any, results: list, fence: Any) -> None:
    """What incr.run auto-restated, recorded before its claims are given back (so no other run restates it too)."""
    auto_restatement.record(StateStore(spark, schema), done, results,
                            lambda table, what: fence.commit(table_key(table), what))


@procedure(
    "restate",
    "Build again a range of a model's built intervals, and of the incremental models reading it (each "
    "widened to its own intervals). Old rows stay readable until each batch's rewrite commits. Models "
    "with disable_restatement and cursor models are refused when named and skipped downstream; outside "
    "prod, models whose table prod also reads are left to prod.",
    params=(
        Param("model", "string", "Model(s) to restate: a selector as for select (names, globs, tag:...).",
              required=True),
        Param("start", "string", "Start of the range (UTC, ISO; default: each model's start)."),
        Param("end", "string", "End of the range (UTC, ISO; a bare date means through that day; default: now)."),
        ENV, EXECUTION_TIME, ALLOW_DOWNGRADE, CONCURRENCY, FAIL_FAST, RAISE_ON_FAILURE, WAIT,
    ),
    output=BATCH_OUTPUT,
)
def restate(spark: Any, model: str, start: str | None, end: str | None, env: str | None,
            execution_time: str | None, allow_downgrade: bool, concurrency: int | None,
            fail_fast: bool | None, raise_on_failure: bool | None = None, wait: str | None = None) -> list[tuple]:
    raising = raise_on_failure_arg(spark, raise_on_failure)
    span = Interval.between(to_ms(start, "start") if start else None, to_end_ms(end, "end") if end else None)
    if span.empty:
        raise ArgumentError(f"restate: start {start!r} is not before end {end!r}")
    store = StateStore(spark)
    window = window_arg(None, None, execution_time, allow_downgrade=allow_downgrade)
    env_name = env_arg(spark, env)
    plan = plan_run(store, env_name, window, None, restate=model, span=span)
    # a restatement planned again after waiting still restates its range: the previous holder's rows are not ours
    replan = lambda: plan_run(StateStore(spark), env_name, window, None, restate=model, span=span)  # noqa: E731
    results = guard.execute(spark, store, plan, replan, "restate", concurrency_arg(spark, concurrency),
                            fail_fast_arg(spark, fail_fast), wait_arg("restate", wait))
    if raising:
        raise_failures("restate", env_name, results, store.schema)
    skipped = sorted(plan.restatement.skipped.items())
    return [*batch_rows(results),
            *((name, None, "skip", None, None, 0, None, "skipped", 0.0, sentence(why)) for name, why in skipped)]


@procedure(
    "status",
    "Interval coverage of the models in an environment: one row per covered range and per gap.",
    params=(
        Param("model", "string", "A model name (default: every model of the environment)."),
        ENV,
        EXECUTION_TIME,
        Param("since", "string", "Only show coverage from this date/timestamp on (UTC, ISO)."),
        Param("until", "string", "Only show coverage before this point (UTC, ISO; a bare date means through that day)."),
    ),
    output=(
        Column("model", "string", "Model name."),
        Column("kind", "string", "Model kind."),
        Column("state", "string", "covered, missing, or waiting (missing, and a signal of the model or of a model "
               "it reads says not ready: a run would not build it yet); for kinds without intervals, the kind "
               "(view, seed, embedded, ...)."),
        Column("start", "timestamp", "Range start (UTC, inclusive)."),
        Column("end", "timestamp", "Range end (UTC, exclusive)."),
        Column("intervals", "bigint", "Number of intervals in the range."),
        Column("table", "string", "The table or view holding the model."),
        Column("claimed_by", "string",
               "For state 'building': the call building the range now (run, application, host, since when)."),
        Column("reason", "string",
               "For state 'waiting': why, naming the signal (as incr.run's wait rows do); for state 'missing' "
               "of a model whose signal failed: the signal's error."),
    ),
)
def status(spark: Any, model: str | None, env: str | None, execution_time: str | None,
           since: str | None, until: str | None) -> list[tuple]:
    shown = IntervalSet([Interval.between(to_ms(since, "since") if since else None,
                                          to_end_ms(until, "until") if until else None)])
    store = StateStore(spark)
    env_name = env_arg(spark, env)
    # signals are asked (only models with signals, only over their missing intervals) so that a range a run
    # would leave waiting is not shown as missing; nothing is built and no state is written
    plan = plan_run(store, env_name, window_arg(None, None, execution_time, ignore_cron=True), None)
    wanted = model.strip().lower() if model else None
    if wanted and wanted not in {m.name for m in plan.models}:
        known = ", ".join(m.name for m in plan.models) or "none"
        raise UnknownModelError(f"status: model {model!r} is not in environment {env_name} (it holds: {known})")
    rows = []
    building = _building(spark, store.schema)
    for mp in plan.models:
        if wanted and mp.name != wanted:
            continue
        table = mp.view_name or mp.table_name
        for holder, start, end in building.get(mp.name, ()):
            count = mp.model.schedule.unit.count(start, end) if start is not None else 0
            rows.append((mp.name, mp.kind, "building", ts(start), ts(end), count, table, holder.describe(), None))
        if mp.expected is None:  # no intervals to track: say what the model is instead
            rows.append((mp.name, mp.kind, mp.kind.lower().replace("_", " "), None, None, 0, table, None, None))
            continue
        unit = mp.model.schedule.unit
        for state, r, why in _spans(mp, shown):
            rows.append((mp.name, mp.kind, state, ts(r.start), ts(r.end), unit.count(r.start, r.end), table, None,
                         why))
    return rows


def _spans(mp: Any, shown: IntervalSet) -> list[tuple[str, Interval, str | None]]:
    """A model's covered, missing and waiting ranges within ``shown``, in time order, with why each waits."""
    gaps = (IntervalSet([mp.expected]) - mp.built).intersection(shown)
    spans: list[tuple[str, Interval, str | None]] = [("covered", r, None) for r in mp.built.intersection(shown)]
    for interval, why in mp.waiting:  # a waiting range may hold lookback intervals, built already: not gaps
        spans += [("waiting", r, sentence(why)) for r in gaps.intersection(IntervalSet([interval]))]
    waiting = IntervalSet([i for i, _ in mp.waiting])
    failed = sentence(mp.signal_error) if mp.signal_error else None
    spans += [("missing", r, failed) for r in gaps - waiting]
    return sorted(spans, key=lambda s: s[1].start)


def _building(spark: Any, schema: str) -> dict[str, list[tuple[Any, int | None, int | None]]]:
    """Per model, the ranges calls are building now, with who holds each (claims in flight)."""
    found: dict[str, list] = {}
    for holder in in_flight(spark, schema):
        for model, start, end in holder.work:
            found.setdefault(model, []).append((holder, start, end))
    return found
