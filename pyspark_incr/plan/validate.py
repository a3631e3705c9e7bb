"""Checks a plan must pass before anything is changed: every model can be built, every table a
query reads exists, every query analyzes."""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError, ModelQueryError
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.model import audits
from pyspark_incr.model.audit_defs import AuditDef
from pyspark_incr.model.definition import Model
from pyspark_incr.model.query import tables_read
from pyspark_incr.model import python_model  # Python models
from pyspark_incr.plan import schema_change
from pyspark_incr.plan.planner import Plan, sample_interval
from pyspark_incr.writers import WRITERS, can_build, formats, promote, tables, writer_for
from pyspark_incr.writers.base import BuildContext, first_line


def validate(spark: Any, plan: Plan, building: bool = True) -> None:
    """Raise on the first model to be (re)built that cannot be; changes nothing.

    A preview (``building=False``) still checks every query but lists the kinds this
    version cannot build instead of refusing them.
    """
    for mp in plan.unbuildable if building else ():
        raise ModelDefinitionError(
            f"model {mp.name}: kind {mp.kind} cannot be built by this version of pyspark-incr yet; "
            f"incr.plan lists it, but apply and run need a supported kind ({', '.join([*WRITERS, 'EMBEDDED', 'EXTERNAL'])})"
        )
    for mp in plan.models if building else ():
        if mp.refusals:
            raise ModelDefinitionError(
                schema_change.refusal(f"model {mp.name} ({mp.model.located})", mp.table_name, mp.refusals))
    for mp in plan.models:
        if mp.change not in ("removed", "unchanged"):
            for call in mp.model.audits:
                audits.parse_args(call, f"model {mp.name} ({mp.model.located})", mp.model.custom_audits)
    for mp in plan.models if building else ():
        promote.check_the_way(spark, mp)
    externals = {m.name for m in plan.models if not m.builds_object and m.table is not None}
    for mp in plan.models:
        if mp.change == "removed" or not mp.builds_object or not mp.rebuild:
            continue
        if building or can_build(mp.model):
            formats.check(spark, mp.model)
            writer_for(mp.model).check(mp.model)
        validate_model(spark, mp.model, mp.table, plan.table_map, sample_interval(mp, plan.window),
                       plan.window.execution_ms, plan.embedded, externals)


def validate_model(spark: Any, model: Model, table: exp.Table, table_map: dict[str, exp.Table],
                   interval: Interval, execution_ms: int, embedded: dict[str, str] | None = None,
                   externals: set[str] = frozenset()) -> None:
    """Every table ``model`` reads exists (or is a model), and Spark can analyze its query when its parents exist."""
    python = python_model.is_python(model)  # Python models: their reads are checked, never run here
    if model.query is None and not python:
        return
    embedded = embedded or {}
    readable = True
    for ref in _reads(model.depends_on, embedded):
        target = table_map.get(ref)
        if ref in externals and not tables.exists(spark, target):
            raise ModelQueryError(
                f"model {model.name} reads external model {ref}, whose table does not exist; create it first"
            )
        if target is not None:
            readable = readable and tables.exists(spark, target)
        elif not tables.exists(spark, exp.table_(*reversed(ref.split(".")))):
            raise ModelQueryError(
                f"model {model.name} reads {ref}, which is neither a table in the catalog nor a model; "
                f"create the table or define a model named {ref}"
            )
    where = f"model {model.name}"
    for call in model.audits:
        audits.parse_args(call, where, model.custom_audits)
    # pre-statements may make what the query reads (a temporary view): its analysis waits for the build
    if readable and not python and not model.pre_statements:
        ctx = BuildContext(spark, model, table, execution_ms, table_map, embedded)
        query = ctx.query(interval)
        output = {c.lower() for c in ctx.dataframe(query).columns}
        for call in model.audits:
            used = audits.columns_used(call, where, model.custom_audits)
            unknown = sorted(c for c in used if c.lower() not in output)
            if unknown:
                raise ModelDefinitionError(
                    f"{where}: audit {audits.describe(call)} refers to {', '.join(unknown)}, which the query does "
                    f"not produce (it produces {', '.join(sorted(output))})"
                )
        _analyze_custom_audits(spark, model, query, where)


def _analyze_custom_audits(spark: Any, model: Model, query: exp.Query, where: str) -> None:
    """Spark analyzes each custom audit over the model's query, so a wrong column fails the plan, not a batch.

    Audits reading other tables are left to run time: those tables may be built by this very plan.
    """
    for call in model.audits:
        audit = audits.find(call[0], where, model.custom_audits)
        if not isinstance(audit, AuditDef):
            continue
        checked = audits.bad_rows_query(call, query.subquery("__incr_output"), where, model.custom_audits)
        if tables_read(checked) != tables_read(query):
            continue
        try:
            spark.sql(checked.sql("spark"))
        except Exception as e:  # noqa: BLE001 - Spark raises many types; all mean the audit's query is wrong
            raise ModelDefinitionError(
                f"{where}: audit {audits.describe(call)} ({audit.located}): Spark cannot run its query on the "
                f"model's output: {first_line(e)}"
            ) from None


def _reads(depends_on: tuple[str, ...], embedded: dict[str, str]) -> list[str]:
    """Tables read, looking through EMBEDDED models to what they read."""
    out, todo, seen = [], list(depends_on), set()
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        if ref in embedded:
            todo += tables_read(sqlglot.parse_one(embedded[ref], read="spark"))
        else:
            out.append(ref)
    return out

