"""incr.janitor: drop the physical tables (and views) of model versions no environment references any more.

Every model version has its own object in a physical schema; environments are
views over them. Changing a model, removing it or dropping an environment leaves
the earlier version's object behind (so reverting stays instant). The janitor
finds those no environment references, unreferenced for longer than
``older_than``, and lists them (``dry_run``, the default) or drops them.

Only objects pyspark-incr created are ever candidates: named
``<db>__<name>__<10 hex digits>`` (or that with ``__<env>``: a forward-only
change previewed in an environment) after the model state records for them, in
a physical schema, and recorded in the environments or intervals state table.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from sqlglot import exp

from pyspark_incr.config import PHYSICAL_SCHEMA, setting
from pyspark_incr.intervals.ranges import ALL_TIME
from pyspark_incr.plan.environment import physical_table
from pyspark_incr.procedures.common import WAIT, duration_arg, wait_arg
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param
from pyspark_incr.run import adopt
from pyspark_incr.run.locks import Locks, owner_id, table_key
from pyspark_incr.state import tables as t
from pyspark_incr.state.store import StateStore
from pyspark_incr.writers import generations, tables

_VERSION = re.compile(r"[0-9a-f]{10}")
#: An environment name as a forward-only preview table's suffix (lowercased, as the catalog lists it).
_ENV = re.compile(r"[a-z][a-z0-9_]{0,63}")


@dataclass(frozen=True)
class _Recorded:
    """What state says of one physical object: its model and version, and when it was last referenced."""

    model: str
    fingerprint: str | None
    last_seen: datetime


@procedure(
    "janitor",
    "List (dry_run, the default) or drop the physical tables and views of model versions no environment "
    "references any more, unreferenced for longer than older_than. Only objects pyspark-incr created and "
    "state recorded are touched (never a table incr.adopt registered); a dropped table's intervals are removed "
    "from state.",
    params=(
        Param("older_than", "string",
              "Only objects unreferenced for longer than this: '7 days', '12 hours', '30 minutes', '0 days', "
              "or an ISO-8601 duration ('P7D', 'PT12H').", default="7 days"),
        Param("dry_run", "boolean", "Only list what would be dropped.", default=True),
        WAIT,
    ),
    output=(
        Column("table", "string", "The physical table or view."),
        Column("model", "string", "The model whose version it holds."),
        Column("unreferenced_since", "timestamp",
               "When state last referenced it (an environment holding it, or a batch written to it; UTC)."),
        Column("action", "string", "would drop (dry run) or dropped."),
    ),
)
def janitor(spark: Any, older_than: str | None, dry_run: bool | None, wait: str | None = None) -> list[tuple]:
    age = duration_arg("janitor", "older_than", older_than if older_than is not None else "7 days")
    dry = True if dry_run is None else bool(dry_run)
    cutoff = datetime.now(timezone.utc) - age
    store = StateStore(spark)
    candidates = _candidates(spark, store, cutoff)
    if dry or not candidates:
        return [(table.sql("spark"), seen.model, seen.last_seen, "would drop") for table, seen in candidates]
    keys = {table_key(table.sql("spark")) for table, _ in candidates}
    locks = Locks(spark, store.schema, owner_id(f"janitor-{uuid.uuid4().hex}"), "janitor", wait_arg("janitor", wait))
    with locks.held(keys):
        # what an apply did while this call waited counts: a table it took up again is no candidate now
        candidates = [c for c in _candidates(spark, StateStore(spark), cutoff)
                      if table_key(c[0].sql("spark")) in keys]
        for table, _ in candidates:
            locks.commit(table_key(table.sql("spark")), "drop")
        # Tables first, state last. A call that planned from state before this record sees state moved
        # once it holds the claim, and plans again; one that plans after it sees the tables gone (the
        # reverse order let an apply plan between the two from a table about to go: race trials, mode
        # revert). A crash between the two leaves intervals of a table that is gone: a plan that takes
        # that version up again finds no table and builds it anew.
        for table, _ in candidates:
            _drop(spark, table)
        store.append(t.INTERVALS, [
            t.interval_row(table.sql("spark"), seen.fingerprint, seen.model, ALL_TIME.start, ALL_TIME.end, "remove",
                           "janitor")
            for table, seen in candidates])
    return [(table.sql("spark"), seen.model, seen.last_seen, "dropped") for table, seen in candidates]


def _candidates(spark: Any, store: StateStore, cutoff: datetime) -> list[tuple[exp.Table, _Recorded]]:
    """The objects pyspark-incr created that no environment references, unreferenced since before ``cutoff``."""
    recorded, referenced = _recorded(store)
    schemas = {db for db, _ in recorded} | {setting(spark, PHYSICAL_SCHEMA).lower()}
    candidates = []
    for schema in sorted(schemas):
        for name in sorted(tables.names_in(spark, schema)):
            key = (schema, name)
            seen = recorded.get(key)
            if seen is None or key in referenced or not _named_for(name, seen.model, schema):
                continue
            table = exp.table_(name, db=schema, quoted=True)
            if seen.last_seen < cutoff and not adopt.is_adopted(spark, table):  # another tool created it: not ours
                candidates.append((table, seen))
    return candidates


def _recorded(store: StateStore) -> tuple[dict[tuple[str, str], _Recorded], set[tuple[str, str]]]:
    """Every physical object state has named, with when it was last referenced; and those referenced now.

    An object is referenced by a row naming it, and until an environment's entry for
    its model moves to another object (or is removed): an environment may hold a
    version for months after the row that put it there.
    """
    recorded: dict[tuple[str, str], _Recorded] = {}

    def seen(table_name: str | None, model: str, fingerprint: str | None, at: datetime | None) -> None:
        key = _key(table_name)
        if key is None or at is None:
            return
        earlier = recorded.get(key)
        if earlier is None or at >= earlier.last_seen:
            recorded[key] = _Recorded(model, fingerprint, at)

    held: dict[tuple[str, str], str | None] = {}  # (env, model) -> the table_name its entry names now
    envs = store.read(t.ENVIRONMENTS)
    for row in envs.sort_by("seq").to_pylist() if envs.num_rows else ():
        slot = (row["env"], row["model"])
        before = held.get(slot)
        if before is not None and before != row["table_name"]:  # the entry leaves the object it named
            earlier = recorded.get(_key(before))
            if earlier is not None:
                seen(before, earlier.model, earlier.fingerprint, row["at"])
        seen(row["table_name"], row["model"], row["fingerprint"], row["at"])
        held[slot] = row["table_name"] if row["op"] == "apply" else None
    intervals = store.read(t.INTERVALS)
    for row in intervals.sort_by("seq").to_pylist() if intervals.num_rows else ():
        seen(row["table_name"], row["model"], row["fingerprint"], row["at"])
    referenced = {_key(e.table_name) for models in store.environments().values() for e in models.values()}
    return recorded, referenced - {None}


def _key(table_name: str | None) -> tuple[str, str] | None:
    """(schema, name) of a recorded table name, lowercased as the catalog lists them; None without a schema."""
    if not table_name:
        return None
    try:
        table = exp.to_table(table_name, dialect="spark")
    except Exception:  # noqa: BLE001 - a name we cannot read is one we will not drop
        return None
    return (table.db.lower(), table.name.lower()) if table.db and table.name else None


def _named_for(name: str, model: str, schema: str) -> bool:
    """True when ``name`` is a physical object name of ``model``: ``<db>__<name>__<10 hex>``, or that
    with ``__<env>`` (a forward-only change previewed in an environment other than prod).

    >>> names = ("shop__daily__0123456789", "shop__daily__0123456789__dev", "shop__daily__012345678z",
    ...          "shop__other__0123456789", "shop__daily__0123456789__", "shop__daily")
    >>> [_named_for(n, "shop.daily", "p") for n in names]
    [True, True, False, False, False, False]
    """
    if model.count(".") != 1:
        return False
    base = physical_table(model.lower(), "0" * 10, schema).name[:-10]
    version, tail = name[len(base):len(base) + 10], name[len(base) + 10:]
    if not name.startswith(base) or not _VERSION.fullmatch(version):
        return False
    return tail == "" or (tail.startswith("__") and _ENV.fullmatch(tail[2:]) is not None)


def _drop(spark: Any, table: exp.Table) -> None:
    """Drop the table or view, and what a managed table leaves of its directory (generations moved its location)."""
    leftover = _managed_root(spark, table)
    tables.drop(spark, table)
    if leftover is None:
        return
    tables.delete_dir(spark, leftover)


def _managed_root(spark: Any, table: exp.Table) -> str | None:
    """The root directory of a managed table (its generations' parent); None for views, external tables,
    or when the catalog cannot say."""
    try:
        jvm = spark._jvm
        ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(table.name, jvm.scala.Some(table.db))
        meta = spark._jsparkSession.sessionState().catalog().getTableMetadata(ident)
        if meta.tableType().name() != "MANAGED":
            return None
        root = generations.table_root(str(meta.location().toString()))
    except Exception:  # noqa: BLE001 - without metadata there is no directory we know to be ours
        return None
    # only the table's own directory, never a schema's or the warehouse's
    return root if root.rstrip("/").rpartition("/")[2].lower() == table.name.lower() else None
