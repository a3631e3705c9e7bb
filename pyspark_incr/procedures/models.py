"""incr.create_model and incr.drop_model: the catalog-resident model registry."""

from __future__ import annotations

from typing import Any

from pyspark_incr.errors import UnknownModelError
from pyspark_incr.model.definition import parse_model
from pyspark_incr.model.fingerprint import data_hash
from pyspark_incr.plan.environment import PROD, table_for
from pyspark_incr.plan.validate import validate_model
from pyspark_incr.procedures.common import window_arg
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param
from pyspark_incr.state import tables as t
from pyspark_incr.state.store import StateStore


@procedure(
    "create_model",
    "Register (or replace) a model from its SQLMesh-style definition: MODEL (...); SELECT ... "
    "Nothing is built until incr.apply.",
    params=(Param("definition", "string", "The model: a MODEL (...) block followed by its query.", required=True),),
    output=(
        Column("model", "string", "Model name."),
        Column("kind", "string", "Model kind."),
        Column("fingerprint", "string", "Data fingerprint of this version."),
        Column("status", "string", "created, replaced or unchanged."),
    ),
)
def create_model(spark: Any, definition: str) -> list[tuple]:
    model = parse_model(definition)
    store = StateStore(spark)
    registry = store.registry()
    table_map = {name: table_for(name, PROD) for name in {*registry, model.name}}
    now = window_arg(None, None, None).execution_ms
    validate_model(spark, model, table_map[model.name], table_map, model.schedule.latest_due(now), now)
    old = registry.get(model.name)
    if old == definition:
        status = "unchanged"
    else:
        store.append(t.MODELS, [{"name": model.name, "definition": definition, "op": "create"}])
        status = "created" if old is None else "replaced"
    return [(model.name, model.kind.name, data_hash(model), status)]


@procedure(
    "drop_model",
    "Remove a model from the registry. Its tables and views are removed from each environment by the next incr.apply.",
    params=(Param("name", "string", "Name of a model registered with incr.create_model.", required=True),),
    output=(Column("model", "string", "Model name."), Column("status", "string", "dropped.")),
)
def drop_model(spark: Any, name: str) -> list[tuple]:
    store = StateStore(spark)
    key = name.strip().lower()
    registry = store.registry()
    if key not in registry:
        known = ", ".join(sorted(registry)) or "none"
        raise UnknownModelError(
            f"drop_model: model {name!r} is not registered (registered: {known}); "
            "models defined in a project directory are removed by deleting their file"
        )
    store.append(t.MODELS, [{"name": key, "definition": None, "op": "drop"}])
    return [(key, "dropped")]

