"""incr.environments and incr.drop_environment: the environments state knows, and removing one.

Dropping an environment removes its views and its state rows; the physical
tables stay, since other environments may show the same versions (the janitor
drops tables no environment references).
"""

from __future__ import annotations

import uuid
from typing import Any

from pyspark_incr import ddl
from pyspark_incr.errors import ArgumentError
from pyspark_incr.plan.environment import PROD, check_env, table_for
from pyspark_incr.procedures.common import WAIT, wait_arg
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param
from pyspark_incr.run.locks import Locks, env_key, owner_id
from pyspark_incr.state import tables as t
from pyspark_incr.state.entries import EnvEntry, entry_of, refolded
from pyspark_incr.state.store import StateStore
from pyspark_incr.writers import tables


@procedure(
    "environments",
    "The environments state knows: how many models each shows, where, and when it last changed.",
    params=(),
    output=(
        Column("env", "string", "Environment name."),
        Column("models", "bigint", "Number of models the environment holds."),
        Column("schemas", "string", "Schemas holding its views, comma-separated (prod: the models' own schemas)."),
        Column("updated_at", "timestamp", "When an apply last changed it (UTC)."),
    ),
)
def environments(spark: Any) -> list[tuple]:
    store = StateStore(spark)
    held = store.environments()
    changed = _last_changes(store)
    rows = []
    for env, models in held.items():
        schemas = sorted({table_for(name, env).db for name in models})
        rows.append((env, len(models), ", ".join(schemas), changed.get(env)))
    return rows


@procedure(
    "drop_environment",
    "Remove an environment: drop its views and forget which versions it holds. Physical tables stay for "
    "environments showing the same versions; incr.janitor drops the ones nothing references. prod cannot be dropped.",
    params=(Param("env", "string", "The environment to drop (not prod).", required=True), WAIT),
    output=(
        Column("model", "string", "Model name."),
        Column("view", "string", "The view dropped (NULL for models without one: EXTERNAL, EMBEDDED)."),
        Column("status", "string", "dropped."),
    ),
)
def drop_environment(spark: Any, env: str, wait: str | None = None) -> list[tuple]:
    name = check_env(env)
    if name == PROD:
        raise ArgumentError("drop_environment: env 'prod' cannot be dropped; remove its models from the project "
                            "(or incr.drop_model) and apply instead")
    store = StateStore(spark)
    _held_or_refuse(store, name)
    key = env_key(name)
    locks = Locks(spark, store.schema, owner_id(uuid.uuid4().hex), "drop_environment", wait_arg("drop_environment", wait))
    with locks.held({key}):
        store = StateStore(spark)  # what an apply to it did while this call waited counts
        held = _held_or_refuse(store, name)
        locks.commit(key, "drop")
        rows, removed = [], []
        for model, entry in sorted(held.items()):
            view = table_for(model, name) if entry.parsed().kind.builds_object else None
            if view is not None and tables.exists(spark, view):
                tables.drop(spark, view)
            removed.append({"env": name, "model": model, "fingerprint": entry.fingerprint,
                            "metadata_hash": entry.metadata_hash, "definition": entry.definition,
                            "source": entry.source, "model_source": entry.model_source, "context": entry.context,
                            "table_name": entry.table_name, "start_ms": entry.start_ms, "op": "remove"})
            rows.append((model, view.sql("spark") if view is not None else None, "dropped"))
        locks.commit(key, "forget")
        store.append(t.ENVIRONMENTS, removed)
        for schema in sorted({table_for(model, name).db for model in held}):
            _drop_if_empty(spark, schema)
    return rows


def _held_or_refuse(store: StateStore, name: str) -> dict:
    held = store.environment(name)
    if not held:
        known = ", ".join(store.environments()) or "none"
        raise ArgumentError(f"drop_environment: environment {name!r} holds no models (environments: {known})")
    return held


def _drop_if_empty(spark: Any, schema: str) -> None:
    if spark.catalog.databaseExists(schema) and not tables.names_in(spark, schema):
        spark.sql(ddl.drop_schema(schema))


def _last_changes(store: StateStore) -> dict[str, Any]:
    """When an apply last changed what each environment holds: a row recording the entry its model already
    had changes nothing, and a run of 'apply' rows recording one entry changed it at the run's earliest time
    (:func:`~pyspark_incr.state.entries.refolded`: as compaction leaves it, and as a reader sees it meanwhile)."""
    holds: dict[tuple[str, str], EnvEntry | None] = {}
    latest: dict[str, Any] = {}
    for row in refolded(store.read(t.ENVIRONMENTS)):
        slot, entry = (row["env"], row["model"]), entry_of(row) if row["op"] == "apply" else None
        if slot in holds and holds[slot] == entry:
            continue
        holds[slot] = entry
        at, env = row["at"], row["env"]
        if at is not None and (env not in latest or at > latest[env]):
            latest[env] = at
    return latest
