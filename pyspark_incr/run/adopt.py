"""Adopting existing tables: a table built by another tool becomes a model version's physical table.

The table is registered where it is, never copied: the environment's entry for the model names it
as the version's table, its view selects from it, and the adopted intervals are recorded built, so
the next run builds only what is missing. Everything is checked before anything is written (the
model, the table, its format, partitioning and columns against the model's query, the intervals),
and every problem found is listed in one error.

From then on pyspark-incr writes the table as it writes its own (runs add the missing intervals,
restatements replace partitions). It never drops it: the adoption sets the table property
``pyspark_incr.adopted_by`` (outside ``incr.*``, which documentation updates rewrite), and the
janitor leaves such tables alone (:func:`is_adopted`), whatever version replaces them.

An adoption claims what a build of the model claims (the table, the version's planned table, the
environment), so it never races an apply or run writing the same model; it plans and checks again
once it holds the claims.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from sqlglot import exp

from pyspark_incr.errors import AdoptRefused, IncrError, PromotionError, UnknownModelError
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.intervals.times import format_ms
from pyspark_incr.model import python_model
from pyspark_incr.plan.environment import table_for
from pyspark_incr.plan.planner import ModelPlan, Plan
from pyspark_incr.run.locks import Locks, env_key, owner_id, table_key
from pyspark_incr.sqltext import literal
from pyspark_incr.state import tables as t
from pyspark_incr.state.store import StateStore
from pyspark_incr.writers import BuildContext, formats, promote, tables, writer_for

#: The ``run_id`` prefix of the state rows an adoption writes.
RUN_PREFIX = "adopt-"
#: The table property an adoption sets on the table (the model adopting it): the janitor never drops such a table.
ADOPTED_PROPERTY = "pyspark_incr.adopted_by"


@dataclass(frozen=True)
class Request:
    """Adopt ``table`` as ``model``'s table, with ``intervals`` recorded built (None: from the model's start
    to ``end_ms``)."""

    model: str
    table: exp.Table
    intervals: IntervalSet | None = None
    end_ms: int | None = None
    start_ms: int | None = None


@dataclass(frozen=True)
class Adopted:
    """What one adoption did."""

    model: str
    kind: str
    table: str
    intervals: IntervalSet
    view: str | None
    previous_table: str | None
    #: The model's schedule (how many of its intervals a range holds).
    schedule: Any = None


def table_arg(name: str | None, argument: str = "table") -> exp.Table:
    """A ``schema.table`` argument as a quoted, lowercased table (the catalog's spelling).

    >>> table_arg("Warehouse.Events_Daily").sql("spark")
    '`warehouse`.`events_daily`'
    """
    try:
        parsed = exp.to_table(name or "", dialect="spark")
    except Exception:  # noqa: BLE001 - sqlglot raises several types; all mean the name is not a table name
        parsed = None
    if not isinstance(parsed, exp.Table) or not parsed.db or not parsed.name or parsed.catalog:
        raise AdoptRefused(f"adopt: {argument} {name!r} is not a table name; give it as schema.table "
                           "(e.g. 'warehouse.events_daily')")
    return exp.table_(parsed.name.lower(), db=parsed.db.lower(), quoted=True)


def adopt(spark: Any, make_plan: Callable[[], tuple[StateStore, Plan]], requests: Sequence[Request],
          procedure: str = "adopt", wait_s: float | None = None) -> list[Adopted]:
    """Check every request, then, holding the claims a build of those models takes, check again and record them.

    ``make_plan`` plans the environment with (at least) the requested models and what they read.
    Raises :class:`AdoptRefused` listing every problem, having changed nothing.
    """
    store, plan = make_plan()
    checked = _checked(spark, store, plan, requests, procedure)
    keys = {env_key(plan.env)}
    for mp, request in checked:
        keys |= {table_key(request.table.sql("spark"))} | ({table_key(mp.table_name)} if mp.table_name else set())
    run_id = RUN_PREFIX + uuid.uuid4().hex
    locks = Locks(spark, store.schema, owner_id(run_id), procedure, wait_s, env=plan.env)
    with locks.held(keys):
        store, plan = make_plan()  # what another call did while this one waited counts
        checked = _checked(spark, store, plan, requests, procedure)
        return _record(spark, store, plan, checked, locks, run_id, procedure)


def is_adopted(spark: Any, table: exp.Table) -> bool:
    """True when ``table`` carries the property an adoption sets (kept with the table, whatever state compacts)."""
    rows = spark.sql(f"SHOW TBLPROPERTIES {table.sql('spark')}").collect()
    return any(row[0] == ADOPTED_PROPERTY for row in rows)


def _plain(name: str) -> str:
    table = exp.to_table(name, dialect="spark")
    return f"{table.db.lower()}.{table.name.lower()}"


def _checked(spark: Any, store: StateStore, plan: Plan, requests: Sequence[Request],
             procedure: str) -> list[tuple[ModelPlan, Request]]:
    """Each request with its model's plan (the requests in the plan's order: parents first); raises listing
    every problem of every request."""
    planned = {mp.name: mp for mp in plan.models}
    unknown = [r.model for r in requests if r.model not in planned]
    if unknown:
        raise UnknownModelError(
            f"{procedure}: no model named {', '.join(unknown)} in the project, the registered models or "
            f"environment {plan.env} (known: {', '.join(sorted(planned)) or 'none'}); check the name, or pass "
            "project => the project directory")
    by_model = {r.model: r for r in requests}
    ordered = [(mp, by_model[mp.name]) for mp in plan.models if mp.name in by_model]
    table_map = {**plan.table_map, **{mp.name: r.table for mp, r in ordered}}
    context = _StateFacts(store)
    problems = []
    for mp, request in ordered:
        found = _problems(spark, plan, mp, request, table_map, context)
        if found:
            problems.append(f"model {mp.name}, table {request.table.sql('spark')}: " + "; ".join(found))
    if problems:
        raise AdoptRefused(f"incr.{procedure} in environment {plan.env} changed nothing: " + ". ".join(problems) + ".")
    return ordered


class _StateFacts:
    """What state says of tables: which environment entries name them, and their recorded intervals."""

    def __init__(self, store: StateStore) -> None:
        self.coverage = {_plain(name): built for name, built in store.coverage().items()}
        self.holders: dict[str, list[tuple[str, str]]] = {}
        for env_name, entries in store.environments().items():
            for entry in entries.values():
                if entry.table_name:
                    self.holders.setdefault(_plain(entry.table_name), []).append((env_name, entry.model))
        rows = store.read(t.INTERVALS)
        self.recorded_by: dict[str, set[str]] = {}
        if rows.num_rows:
            for name, model in zip(rows["table_name"].to_pylist(), rows["model"].to_pylist()):
                if name:
                    self.recorded_by.setdefault(_plain(name), set()).add(model)


def _problems(spark: Any, plan: Plan, mp: ModelPlan, request: Request, table_map: dict[str, exp.Table],
              facts: _StateFacts) -> list[str]:
    """Every reason ``request.table`` cannot become ``mp``'s table now (empty: it can)."""
    model, table = mp.model, request.table
    kind = model.kind
    if not (kind.has_intervals and kind.stores_rows and kind.builds_object):
        return [f"kind {kind.name} keeps no rows of its own, so there is no table to adopt"]
    if not tables.exists(spark, table):
        return [f"table {table.sql('spark')} does not exist; check the name (SHOW TABLES IN {table.db})"]
    if tables.is_view(spark, table):
        return [f"{table.sql('spark')} is a view; adopt the table it reads, a table holding the rows"]
    if table_for(model.name, plan.env).sql("spark").lower() == table.sql("spark").lower():
        renamed = exp.table_(f"{table.name}_adopted", db=table.db, quoted=True).sql("spark")
        return [f"the table stands where environment {plan.env} shows the model as a view; rename it first "
                f"(ALTER TABLE {table.sql('spark')} RENAME TO {renamed}) and adopt the renamed table: the view "
                "then takes this name and reads it"]
    found = _ownership(mp, table, facts)
    found += _intervals(plan, mp, request, facts)
    found += _layout(spark, mp, table)
    if found:
        return found
    found += _columns(spark, plan, mp, table, table_map)
    try:
        promote.check_the_way(spark, replace(mp, table=table))
    except PromotionError as e:
        found.append(str(e))
    return found


def _ownership(mp: ModelPlan, table: exp.Table, facts: _StateFacts) -> list[str]:
    name = _plain(table.sql("spark"))
    found = []
    for env_name, model in facts.holders.get(name, []):
        if model == mp.name:
            found.append(f"already adopted: environment {env_name} holds the model in this table already")
        else:
            found.append(f"it is the physical table of model {model} in environment {env_name}")
    others = sorted(facts.recorded_by.get(name, set()) - {mp.name})
    if others and not found:
        found.append(f"state records intervals of model {', '.join(others)} in it: it holds another model's rows")
    return found


def _intervals(plan: Plan, mp: ModelPlan, request: Request, facts: _StateFacts) -> list[str]:
    """The requested intervals: aligned, within the model's range, not built already in the version's table."""
    wanted = wanted_intervals(mp, request)
    if isinstance(wanted, str):
        return [wanted]
    model = mp.model
    schedule, start = model.schedule, start_for(mp, wanted)
    expected = schedule.expected(start, model.end_ms, plan.window.execution_ms, allow_partials=model.allow_partials)
    found = [f"{i} does not start and end on the model's {schedule.unit.value} intervals" for i in wanted
             if schedule.floor(i.start) != i.start or schedule.floor(i.end) != i.end]
    if not IntervalSet([expected]).covers(Interval(wanted.start, wanted.end)):
        found.append(f"{wanted} lies outside the model's intervals due now, {expected or '(none)'} (from its start "
                     f"{format_ms(start)} to the last complete interval); adopt only intervals within them")
    for where in {mp.table_name, request.table.sql("spark")} - {None}:
        built = facts.coverage.get(_plain(where), IntervalSet())
        if where != mp.table_name and resumed(facts, mp.name, where, wanted):
            continue
        if built and built.intersection(wanted):
            found.append(f"{built.intersection(wanted)} of it is already recorded built in {where}; adopt only "
                         "intervals nothing built yet")
        elif built and where == mp.table_name:
            found.append(f"the model's version already has {built} built in its table {where}; adopting another "
                         "table would leave those rows behind: adopt before the model is first built")
    return found


def resumed(facts: _StateFacts, model: str, table: str, wanted: IntervalSet) -> bool:
    """True when an earlier adoption of exactly this stopped after recording its intervals: no environment
    reads the table, and only this model's ``wanted`` intervals are recorded in it. Adopting again finishes it."""
    name = _plain(table)
    return (not facts.holders.get(name) and facts.recorded_by.get(name) == {model}
            and facts.coverage.get(name) == wanted)


def wanted_intervals(mp: ModelPlan, request: Request) -> IntervalSet | str:
    """The intervals a request records built, or why they are not valid."""
    if request.intervals is not None:
        return request.intervals
    start = request.start_ms if request.start_ms is not None else mp.start_ms
    if request.end_ms is None or start is None:
        return "give end (the first moment the table holds no rows for)"
    if request.end_ms <= start:
        return f"end {format_ms(request.end_ms)} is not after start {format_ms(start)}"
    return IntervalSet([Interval(start, request.end_ms)])


def start_for(mp: ModelPlan, wanted: IntervalSet) -> int:
    """The model's start as the environment records it: its own, else (a model without one) the earlier of the
    start a new version would get and the first adopted interval."""
    if mp.model.start_ms is not None:
        return mp.model.start_ms
    return min(x for x in (mp.start_ms, wanted.start) if x is not None)


def _layout(spark: Any, mp: ModelPlan, table: exp.Table) -> list[str]:
    """The table's format and partitioning must be what the model's writer writes."""
    model = mp.model
    provider = (formats.existing(spark, table) or "").lower()
    accepted = {formats.DELTA, formats.storage(model)}
    if provider not in accepted:
        return [f"its format is {provider or 'unknown'}, and the model writes {' or '.join(sorted(accepted))} "
                f"tables; convert it (CREATE TABLE ... USING {formats.storage(model)} AS SELECT ...) and adopt "
                "the copy"]
    if provider == formats.DELTA:
        return []  # Delta writes replace rows by predicate (REPLACE WHERE, MERGE), whatever the partitioning
    wanted = [c.lower() for c in writer_for(model).partition_columns(model)]
    have = [c.name.lower() for c in spark.catalog.listColumns(table.sql("spark")) if c.isPartition]
    if have != wanted:
        return [f"it is partitioned by ({', '.join(have) or 'nothing'}), and the model's {model.kind.name} "
                f"writes need ({', '.join(wanted) or 'no partitioning'}); declare partitioned_by to match the "
                "table, or rewrite the table partitioned so"]
    return []


def _columns(spark: Any, plan: Plan, mp: ModelPlan, table: exp.Table, table_map: dict[str, exp.Table]) -> list[str]:
    """Every difference between the table's columns and the model's output (names and types; order aside)."""
    model = mp.model
    have = {f.name.lower(): f.dataType.simpleString() for f in spark.table(table.sql("spark")).schema.fields}
    found = [f"the kind's {role} {name} is not a column of the table" for role, name in _kind_columns(model)
             if name.lower() not in have]
    interval = mp.batches[0] if mp.batches else (mp.expected or model.schedule.latest_due(plan.window.execution_ms))
    ctx = BuildContext(spark, model, table, plan.window.execution_ms, table_map, plan.embedded)
    try:
        output = (_declared(spark, model) if python_model.is_python(model)
                  else writer_for(model).output(ctx, interval)).schema.fields
    except IncrError as e:
        return found + [f"its columns cannot be compared with the query's, which Spark cannot analyse ({e}); "
                        "the tables it reads must exist: adopt or build the models it reads first"]
    want = {f.name.lower(): f.dataType.simpleString() for f in output}
    for name in sorted(want.keys() | have.keys()):
        if name not in have:
            found.append(f"column {name} ({want[name]}) of the query's output is missing from the table")
        elif name not in want:
            found.append(f"column {name} ({have[name]}) of the table is not in the query's output")
        elif want[name] != have[name]:
            found.append(f"column {name} is {have[name]} in the table and {want[name]} in the query's output")
    return found


def _declared(spark: Any, model: Any) -> Any:
    """A Python model's output: no rows of the columns it declares (what its runs are held to), typed by Spark."""
    return spark.sql(exp.select(*[exp.alias_(exp.cast(exp.null(), exp.DataType.build(t, dialect="spark")), c,
                                             quoted=True) for c, t in model.columns]).sql("spark"))


def _kind_columns(model: Any) -> list[tuple[str, str]]:
    kind = model.kind
    found = [("time_column", kind.time_column)] if getattr(kind, "time_column", None) else []
    found += [("unique_key", k) for k in getattr(kind, "unique_key", ()) or ()]
    found += [(role, getattr(kind, role)) for role in ("valid_from_name", "valid_to_name") if getattr(kind, role, None)]
    return found


def _record(spark: Any, store: StateStore, plan: Plan, checked: list[tuple[ModelPlan, Request]], locks: Locks,
            run_id: str, procedure: str) -> list[Adopted]:
    """Intervals first, then views and entries: a crash between them leaves intervals no environment reads
    (adopting again finishes the job: :func:`resumed`), never an environment reading a table whose rows state
    does not know."""
    started = datetime.now(timezone.utc)
    facts = _StateFacts(store)
    done = []
    for mp, request in checked:
        name = request.table.sql("spark")
        wanted = wanted_intervals(mp, request)
        locks.commit(table_key(name), f"adopt {mp.name}")
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({literal(ADOPTED_PROPERTY)} = {literal(mp.name)})")
        if not resumed(facts, mp.name, name, wanted):
            store.append(t.INTERVALS, [t.interval_row(name, mp.fingerprint, mp.name, i.start, i.end, "add", run_id)
                                       for i in wanted])
        done.append((replace(mp, table=request.table, start_ms=start_for(mp, wanted)), wanted))
    locks.commit(env_key(plan.env), "promote")
    for mp, _ in done:
        if mp.view is not None:  # a model the environment held already is repointed too: its table changed
            promote.point_view(spark, mp)
    store.append(t.ENVIRONMENTS, [_env_row(plan.env, mp, run_id) for mp, _ in done])
    finished = datetime.now(timezone.utc)
    store.append(t.RUNS, [{
        "run_id": run_id, "procedure": procedure, "env": plan.env, "model": mp.name, "fingerprint": mp.fingerprint,
        "start_ms": wanted.start, "end_ms": wanted.end, "status": "ok", "rows": None,
        "message": f"adopted {mp.table_name}: {wanted} recorded built", "started_at": started, "finished_at": finished,
    } for mp, wanted in done])
    return [Adopted(mp.name, mp.kind, mp.table_name, wanted, mp.view_name, mp.previous_table, mp.model.schedule)
            for mp, wanted in done]


def _env_row(env: str, mp: ModelPlan, run_id: str) -> dict[str, Any]:
    return {
        "env": env, "model": mp.name, "fingerprint": mp.fingerprint, "metadata_hash": mp.metadata_hash,
        "definition": mp.model.definition, "source": mp.source, "model_source": mp.model.source,
        "context": mp.model.context, "table_name": mp.table_name, "start_ms": mp.start_ms, "op": "apply",
        "run_id": run_id, "conform": None,
    }
