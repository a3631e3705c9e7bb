"""Checks a plan must pass before anything is changed: every table a query reads exists, every query analyzes."""

from __future__ import annotations

from typing import Any

from pyspark_incr.errors import ModelQueryError
from pyspark_incr.plan.planner import Plan, sample_interval
from pyspark_incr.writers import tables
from pyspark_incr.writers.base import BuildContext


def validate(spark: Any, plan: Plan, only: set[str] | None = None) -> None:
    """Raise on the first new or changed model (of ``only``) whose query cannot run; changes nothing."""
    table_map = plan.table_map
    for mp in plan.models:
        if mp.model is None or not mp.new_version or (only is not None and mp.name not in only):
            continue
        readable = True
        for ref in mp.model.references:
            target = table_map.get(ref)
            if target is not None:
                readable = readable and tables.exists(spark, target)
                continue
            if not spark.catalog.tableExists(ref):
                raise ModelQueryError(
                    f"model {mp.name} reads {ref}, which is neither a table in the catalog nor a model; "
                    f"create the table or define a model named {ref}"
                )
        if readable:
            ctx = BuildContext(spark, mp.model, mp.table, plan.window.execution_ms, table_map)
            ctx.dataframe(ctx.query(sample_interval(mp, plan.window)))
