"""Forward-only changes: the new version keeps the table and applies from now on.

In prod the existing physical table is reused: intervals already built stay as
they are, missing ones are built with the new query, and the table's columns
follow the policies of :mod:`schema_change`. Any other environment previews a
forward-only change in a table of its own (``..__<env>``), built like a new
version, which prod never reuses.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from pyspark_incr.model.definition import Model
from pyspark_incr.plan import schema_change
from pyspark_incr.plan.environment import PROD, physical_table
from pyspark_incr.writers.base import BuildContext

FORWARD_ONLY = "forward-only"


def applies(model: Model, plan_wide: bool) -> bool:
    """True when a change to ``model`` is forward-only: its kind says so, or the plan does (incremental kinds only)."""
    return hasattr(model.kind, "forward_only") and (model.kind.forward_only or plan_wide)


def table_for(model: Model, fingerprint: str, kept: str, env: str, schema: str) -> tuple[exp.Table, str]:
    """The table a forward-only change writes to, and the reason the plan shows."""
    if env == PROD:
        return exp.to_table(kept, dialect="spark"), f"{FORWARD_ONLY}: keeps {kept} and applies from now on"
    preview = preview_table(model, fingerprint, env, schema)
    return preview, f"{FORWARD_ONLY}: previewed in {preview.sql('spark')}, a table of environment {env} only"


def preview_table(model: Model, fingerprint: str, env: str, schema: str) -> exp.Table:
    """A table only environment ``env`` uses for this version (prod never looks a version up under this name).

    >>> from pyspark_incr.model.definition import parse_model
    >>> preview_table(parse_model("MODEL (name s.t, kind FULL); SELECT 1 AS a"), "0123456789ab", "dev", "p").sql("spark")
    '`p`.`s__t__0123456789__dev`'
    """
    table = physical_table(model.name, fingerprint, schema)
    table.set("this", exp.to_identifier(f"{table.name}__{env}", quoted=True))
    return table


def examine(ctx: BuildContext, writer: Any, interval: Any) -> tuple[schema_change.SchemaChange, tuple, list[str], list[str]]:
    """How the new output differs from the kept table: the change, the conforming projection, refusals, warnings."""
    kind = ctx.model.kind
    table = ctx.spark.table(ctx.table_sql).schema
    output = writer.output(ctx, interval).schema
    change = schema_change.diff([(f.name, f.dataType.simpleString()) for f in table.fields],
                                [(f.name, f.dataType.simpleString()) for f in output.fields])
    refused, warned = schema_change.verdict(change, kind.on_additive_change, kind.on_destructive_change)
    conform = ()
    if change.added or change.destructive:
        columns = ctx.dataframe(ctx.query(interval)).columns
        conform = schema_change.projection(columns, change, kind.on_additive_change)
    return change, conform, refused, warned
