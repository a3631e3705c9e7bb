"""incr.lineage: which columns of which models and tables a model's column is computed from.

The models are those incr.plan would plan: the registered ones, plus the project's when
``project`` is given. It reads no data and changes nothing (see docs/lineage.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pyspark_incr.errors import ArgumentError
from pyspark_incr.plan.sources import desired_models
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param
from pyspark_incr.project.lineage import column_lineage, columns_of
from pyspark_incr.project.loader import Project, load
from pyspark_incr.state.store import StateIfAny  # reading state must not create it


@procedure(
    "lineage",
    "Column-level lineage: for a model's column (or each of its columns), every column of the models and tables "
    "it is computed from, model by model back to the tables no model builds, with the SQL computing it in each "
    "model. Read from the models' queries (sqlglot): no data is read and nothing changes.",
    params=(
        Param("model", "string", "The model whose columns to trace (schema.name).", required=True),
        Param("column", "string", "The column to trace (default: every column of the model, in order)."),
        Param("project", "string",
              "Project directory holding models/*.sql, relative to the Spark driver's working directory."),
    ),
    output=(
        Column("column", "string", "The model's column asked about."),
        Column("depth", "bigint", "0 for the column itself, 1 for what it reads directly, 2 for what those read, ..."),
        Column("model", "string", "The model holding this column; for a table no model builds, that table."),
        Column("model_column", "string", "The column of that model or table."),
        Column("parent_model", "string", "The model whose column this one feeds (NULL at depth 0)."),
        Column("parent_column", "string", "The column it feeds."),
        Column("expression", "string", "The SQL computing the column in its model, on one line; empty for a table "
                                       "no model builds, a seed or a Python model."),
        Column("is_model", "boolean", "false for a table no model builds (external_models.yaml or undeclared)."),
    ),
)
def lineage(spark: Any, model: str, column: str | None, project: str | None) -> list[tuple]:
    """The rows of ``CALL incr.lineage``: the steps of each asked column, depth 0 first."""
    if not str(model).strip():
        raise ArgumentError("lineage: argument model is empty; name a model (schema.name)")
    loaded = load(project) if project else None
    settings = loaded.config.settings if loaded else {}
    desired = desired_models(StateIfAny(spark, settings.get("state_schema")), loaded)
    found = tuple(desired.models.values())
    models = replace(loaded, models=found) if loaded else Project(Path("."), found)
    asked = [column] if column is not None and str(column).strip() else list(columns_of(models, model))
    rows = []
    for name in asked:
        steps = column_lineage(models, model, name)
        rows += [(steps[0].column, s.depth, s.model, s.column, s.parent_model, s.parent_column, s.expression,
                  s.is_model) for s in steps]
    return rows
