"""Checks a plan must pass before anything is changed: every table a query reads exists, every query analyzes."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from pyspark_incr.errors import ModelQueryError
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.model.definition import Model
from pyspark_incr.plan.planner import Plan, sample_interval
from pyspark_incr.writers import tables
from pyspark_incr.writers.base import BuildContext


def validate(spark: Any, plan: Plan) -> None:
    """Raise on the first model to be (re)built whose query cannot run; changes nothing."""
    for mp in plan.models:
        if mp.model is not None and mp.rebuild:
            validate_model(spark, mp.model, mp.table, plan.table_map, sample_interval(mp, plan.window),
                           plan.window.execution_ms)


def validate_model(spark: Any, model: Model, table: exp.Table, table_map: dict[str, exp.Table],
                   interval: Interval, execution_ms: int) -> None:
    """Every table ``model`` reads exists (or is a model), and Spark can analyze its query when its parents exist."""
    readable = True
    for ref in model.depends_on:
        target = table_map.get(ref)
        if target is not None:
            readable = readable and tables.exists(spark, target)
        elif not spark.catalog.tableExists(ref):
            raise ModelQueryError(
                f"model {model.name} reads {ref}, which is neither a table in the catalog nor a model; "
                f"create the table or define a model named {ref}"
            )
    if readable:
        ctx = BuildContext(spark, model, table, execution_ms, table_map)
        ctx.dataframe(ctx.query(interval))
