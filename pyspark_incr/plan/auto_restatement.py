"""``auto_restatement_cron``: a model built again on a cron of its own, with the models reading it (SQLMesh's
auto restatement, which ``sqlmesh run`` does in prod only; here ``incr.run`` in prod).

When: a prod run whose execution time has reached a tick of the model's ``auto_restatement_cron`` (read in
UTC) later than the model's reference time. The reference is the execution time of the last run that
completed an auto restatement of the model's physical table, else of the first prod run that saw the table
with the property (the clock starts there: SQLMesh starts it when the version is created).

What: with ``auto_restatement_intervals N`` (INCREMENTAL_BY_TIME_RANGE only), the N intervals before the one
holding the execution time; without, every interval. A model reading restated models is restated over their
ranges widened to its own intervals; kinds SQLMesh restates only whole (every kind but
INCREMENTAL_BY_TIME_RANGE) are restated whole. The restated ranges go through the restatement path of
``incr.restate`` (:mod:`pyspark_incr.plan.restatement`): they stay recorded as built until their rewrite commits.

Who not: models with ``disable_restatement`` (SCD type 2 by default), INCREMENTAL_UNMANAGED (SQLMesh's has
``disable_restatement`` on), cursor models, models with nothing built yet; a model not restated passes
nothing on to the models reading it, as in SQLMesh.

Once per tick, across applications: the run decides the restatement again once it holds the claims of the
tables it writes (:mod:`pyspark_incr.run.guard` plans again under them), and records it in the
``auto_restatements`` state table before it gives them back, only when every step of every model it restated
ended ok (otherwise the next run restates again). Another application's run due at the same tick waits for
those claims, then reads the record and restates nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from croniter import croniter

from pyspark_incr.errors import ClaimLost
from pyspark_incr.intervals.ranges import BEGINNING, END, Interval, IntervalSet
from pyspark_incr.intervals.times import to_datetime, to_ms
from pyspark_incr.model.definition import Model
from pyspark_incr.plan.environment import PROD
from pyspark_incr.plan.restatement import Restatement, _not_restatable, _on_grid
from pyspark_incr.project.dag import topological
from pyspark_incr.state import tables as t
from pyspark_incr.state.store import EnvEntry, StateStore


def cron_of(model: Model) -> str | None:
    """The model's ``auto_restatement_cron`` (None without one)."""
    return getattr(model.kind, "auto_restatement_cron", None)


def due(store: StateStore, known: Mapping[str, Model], current: Mapping[str, EnvEntry],
        coverage: Mapping[str, IntervalSet], execution_ms: int) -> Restatement:
    """What a prod run at ``execution_ms`` auto-restates among the ``known`` models (``current``: their state
    entries; ``coverage``: built intervals per physical table)."""
    if not any(cron_of(m) for m in known.values()):
        return Restatement()
    reference = references(store)
    ranges: dict[str, Interval] = {}
    skipped: dict[str, str] = {}
    triggers: dict[str, list[str]] = {}
    for model in topological(known.values()):
        entry = current.get(model.name)
        table = entry.table_name if entry else None
        own = _own_range(model, reference.get(table or ""), coverage.get(table or "", IntervalSet()), execution_ms)
        from_parents = [p for p in model.depends_on if p in ranges]
        if own is None and not from_parents:
            continue
        why = _why_not(model, table)
        if why:
            if from_parents:  # said where a parent's restatement stops; a model's own cron is simply not acted on
                skipped[model.name] = f"not auto-restated: {why}"
            continue
        ranges[model.name] = _range(model, [own] if own is not None else [], [ranges[p] for p in from_parents])
        if own is not None:
            triggers[model.name] = [model.name]
        for p in from_parents:
            for trigger, restated in triggers.items():
                if p in restated and model.name not in restated:
                    restated.append(model.name)
    return Restatement(ranges, skipped, {k: tuple(v) for k, v in triggers.items()})


def _own_range(model: Model, reference: int | None, built: IntervalSet, execution_ms: int) -> Interval | None:
    """The range the model's own cron restates now (None: its cron has not ticked since ``reference``)."""
    cron = cron_of(model)
    if not cron or reference is None or not built or not ticked(cron, reference, execution_ms):
        return None
    count = getattr(model.kind, "auto_restatement_intervals", None)
    if count is None:
        return Interval(BEGINNING, END)
    end = model.schedule.floor(execution_ms)
    return Interval(model.schedule.unit.add(end, -count), end)


def ticked(cron: str, reference: int, execution_ms: int) -> bool:
    """True when ``cron`` has a tick after ``reference`` and at or before ``execution_ms`` (UTC).

    >>> [ticked("@weekly", to_ms("2024-01-02"), to_ms(t)) for t in ("2024-01-06 23:00:00", "2024-01-07")]
    [False, True]
    """
    return to_ms(croniter(cron, to_datetime(reference)).get_next(datetime)) <= execution_ms


def _why_not(model: Model, table: str | None) -> str | None:
    if model.kind.name == "INCREMENTAL_UNMANAGED":
        return "INCREMENTAL_UNMANAGED models are never restated (in SQLMesh they have disable_restatement)"
    if not model.kind.has_intervals or not model.kind.builds_object:
        return "it keeps no intervals"
    return _not_restatable(model, PROD, table, set())


def _range(model: Model, own: list[Interval], inherited: list[Interval]) -> Interval:
    """The model's restated range: its own and its parents', on its own interval grid; whole where SQLMesh
    restates the kind only whole."""
    if model.kind.name != "INCREMENTAL_BY_TIME_RANGE":
        return Interval(BEGINNING, END)
    spans = own + [_on_grid(model, r) for r in inherited]
    return Interval(min(r.start for r in spans), max(r.end for r in spans))


def references(store: StateStore) -> dict[str, int]:
    """Per physical table, the execution time its auto-restatement clock runs from (latest row wins)."""
    rows = _rows(store)
    found: dict[str, int] = {}
    for row in sorted(rows, key=lambda r: r["seq"]):
        found[row["table_name"]] = row["execution_ms"]
    return found


def record(store: StateStore, plan: Any, results: list[Any], check: Callable[[str, str], None]) -> None:
    """After a prod run, under its claims: each completed auto restatement, and each table whose clock starts
    now. ``check(table, what)`` checks the claim on the table before its row is written; a claim lost
    meanwhile (:class:`ClaimLost`) records nothing of its table, so the next run restates it again."""
    if plan.env != PROD:
        return
    models = [mp for mp in plan.models if cron_of(mp.model) and mp.table_name]
    if not models:
        return
    started = references(store)
    not_ok = {r.model for r in results if r.status != "ok"}
    rows = []
    for mp in models:
        restated = plan.restatement.auto.get(mp.name)
        if restated is not None and not not_ok.intersection(restated):
            span = plan.restatement.ranges[mp.name]
            rows.append(_row(mp, plan.window.execution_ms, "restate", span))
        elif mp.table_name not in started:
            rows.append(_row(mp, plan.window.execution_ms, "start", None))
    kept = [row for row in rows if _still_held(check, row)]
    if kept:
        store.append(t.AUTO_RESTATEMENTS, kept)


def _still_held(check: Callable[[str, str], None], row: dict[str, Any]) -> bool:
    try:
        check(row["table_name"], f"auto restatement: {row['op']} {row['model']}")
    except ClaimLost:
        return False
    return True


def _row(mp: Any, execution_ms: int, op: str, span: Interval | None) -> dict[str, Any]:
    return {"table_name": mp.table_name, "model": mp.name, "fingerprint": mp.fingerprint,
            "execution_ms": execution_ms, "start_ms": span.start if span else None,
            "end_ms": span.end if span else None, "op": op}


def _rows(store: StateStore) -> list[dict[str, Any]]:
    """The rows of the ``auto_restatements`` table, created on first use."""
    key = f"{store.schema}.{t.AUTO_RESTATEMENTS.name}"
    if key not in store.runtime.ensured:
        store.ensure()
        store.create(t.AUTO_RESTATEMENTS)
        store.runtime.ensured.add(key)
    return store.read(t.AUTO_RESTATEMENTS).to_pylist()
