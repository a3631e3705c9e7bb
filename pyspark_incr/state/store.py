"""Typed access to the state tables of one Spark session.

Each procedure call builds one :class:`StateStore` and reads each table at most
once (Arrow); writes are appends of whole row batches.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import groupby
from operator import itemgetter
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from pyspark_incr.config import STATE_SCHEMA, setting
from pyspark_incr.errors import StateError
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model
from pyspark_incr.state import snapshot as snapshots
from pyspark_incr.state import tables as t

_ensured: set[tuple[str, str]] = set()
_write_lock = threading.Lock()
#: State tables read earlier in this process, with the file listing they were read at.
_session_cache: dict[tuple[str, str, str], tuple[tuple, pa.Table]] = {}


@dataclass(frozen=True)
class EnvEntry:
    """One model version as an environment holds it."""

    model: str
    fingerprint: str
    metadata_hash: str
    definition: str
    source: str
    table_name: str | None
    start_ms: int | None
    #: Where the definition came from (a model file, or "registry") and the project context it was parsed with.
    model_source: str = "registry"
    context: str = ""
    #: The parsed model as JSON (:mod:`pyspark_incr.state.snapshot`); None in rows written before it existed.
    snapshot: str | None = field(default=None, compare=False, repr=False)
    #: After a forward-only change keeping the table: the query's output conformed to it, as JSON.
    conform: str | None = None

    def parsed(self) -> "Model":
        """The applied model as it was applied: rebuilt from its snapshot, or parsed again when that is not valid."""
        return snapshots.model_of(self.snapshot, self.definition, self.model_source or "registry", self.context or "")


class StateStore:
    """The state of one Spark session's catalog, in schema ``spark.incr.stateSchema``."""

    def __init__(self, spark: Any, schema: str | None = None) -> None:
        self.spark = spark
        self.schema = schema or setting(spark, STATE_SCHEMA)
        self._cache: dict[str, pa.Table] = {}

    def ensure(self) -> None:
        """Create the state schema and tables once per Spark application."""
        key = (str(self.spark.sparkContext.applicationId), self.schema)
        if key in _ensured:
            return
        quoted = "`" + self.schema.replace("`", "``") + "`"
        existing = {table: _columns(self.spark, self.schema, table.name) for table in t.ALL_TABLES}
        if None in existing.values():
            self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {quoted}")
        for table, columns in existing.items():
            if columns is None:
                self.spark.sql(table.ddl(self.schema))
            else:
                self._upgrade(table, columns)
        _ensured.add(key)

    def _upgrade(self, table: t.StateTable, existing: list[str]) -> None:
        """Add the columns a table created by an older version lacks (another process may just have)."""
        try:
            ddl = table.upgrade(self.schema, existing)
            if ddl is not None:
                self.spark.sql(ddl)
        except Exception as e:  # noqa: BLE001 - fine when the columns are there now, whoever added them
            now = _columns(self.spark, self.schema, table.name)
            if now is None or table.upgrade(self.schema, now) is not None:
                raise StateError(
                    f"state table {table.qualified(self.schema)} cannot be upgraded to this version's columns "
                    f"({e}); point spark.incr.stateSchema at a fresh schema"
                ) from e

    def read(self, table: t.StateTable) -> pa.Table:
        """The table's rows: read once per call, and reused across calls while its files are unchanged."""
        if table.name not in self._cache:
            self.ensure()
            name = table.qualified(self.schema)
            try:
                version = files_version(self.spark, self.schema, table.name)
                key = (str(self.spark.sparkContext.applicationId), self.schema, table.name)
                cached = _session_cache.get(key)
                if version is not None and cached is not None and cached[0] == version:
                    self._cache[table.name] = cached[1]
                else:
                    self._cache[table.name] = self.spark.table(name).toArrow()
                    if version is not None:
                        _session_cache[key] = (version, self._cache[table.name])
            except Exception as e:  # noqa: BLE001 - any read failure is a state problem for the user
                raise StateError(
                    f"state table {name} cannot be read ({e}); "
                    "check the catalog, or point spark.incr.stateSchema at a fresh schema"
                ) from e
        return self._cache[table.name]

    def append(self, table: t.StateTable, rows: Iterable[dict[str, Any]]) -> None:
        rows = list(rows)
        if not rows:
            return
        self.ensure()
        now = datetime.now(timezone.utc)
        names = set(table.schema.names)
        for row in rows:
            if "seq" in names:
                row.setdefault("seq", t.next_seq())
            if "at" in names:
                row.setdefault("at", now)
            if table is t.ENVIRONMENTS and row.get("op") == "apply" and row.get("snapshot") is None:
                row["snapshot"] = snapshots.snapshot_for(
                    row["definition"], row.get("model_source") or "registry", row.get("context") or "")
        df = self.spark.createDataFrame(t.to_arrow(table, rows))
        with _write_lock:  # concurrent appends to one table would share (and delete) its _temporary directory
            df.write.insertInto(table.qualified(self.schema))
        self._cache.pop(table.name, None)

    # -- registry -----------------------------------------------------------

    def registry(self) -> dict[str, str]:
        """Registered definitions by model name (latest create, minus drops)."""
        current: dict[str, str | None] = {}
        for row in _in_seq(self.read(t.MODELS)):
            current[row["name"]] = row["definition"] if row["op"] == "create" else None
        return {k: v for k, v in current.items() if v is not None}

    # -- environments -------------------------------------------------------

    def environment(self, env: str) -> dict[str, EnvEntry]:
        """The model versions ``env`` holds now."""
        return _held(self.read(t.ENVIRONMENTS), env).get(env, {})

    def env_version(self, env: str) -> int:
        """The ``seq`` of ``env``'s latest state row (0 when it has none): it changes with every apply to it."""
        rows = self.read(t.ENVIRONMENTS)
        if not rows.num_rows:
            return 0
        latest = pc.max(rows.filter(pc.equal(rows["env"], env))["seq"]).as_py()
        return latest or 0

    def environments(self) -> dict[str, dict[str, EnvEntry]]:
        """Every environment holding at least one model, with the model versions it holds now."""
        return {env: models for env, models in sorted(_held(self.read(t.ENVIRONMENTS)).items()) if models}

    # -- intervals ----------------------------------------------------------

    def coverage(self) -> dict[str, IntervalSet]:
        """Built intervals per physical table: each table's rows folded in ``seq`` order.

        A physical table holds one model version, so its intervals are its own whichever
        environment built them.
        """
        table = self.read(t.INTERVALS)
        if not table.num_rows:
            return {}
        cols = table.sort_by("seq").select(["table_name", "start_ms", "end_ms", "op"])
        changes: dict[str, list[tuple[str, Interval]]] = {}
        for name, start, end, op in zip(*(c.to_pylist() for c in cols.columns)):
            changes.setdefault(name, []).append((op, Interval(start, end)))
        return {key: _fold(rows) for key, rows in changes.items()}


def files_version(spark: Any, schema: str, name: str) -> tuple | None:
    """The data files of a state table (name, size, modification time); None when they cannot be listed.

    State tables only ever grow by appended files, so an unchanged listing means unchanged rows,
    whichever process wrote last. Listing costs milliseconds; reading costs a Spark job.
    """
    try:
        jvm = spark._jvm
        ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(name, jvm.scala.Some(schema))
        location = spark._jsparkSession.sessionState().catalog().getTableMetadata(ident).location()
        path = jvm.org.apache.hadoop.fs.Path(location)
        fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
        statuses = fs.listStatus(path) if fs.exists(path) else []
        return tuple(sorted((s.getPath().getName(), s.getLen(), s.getModificationTime()) for s in statuses))
    except Exception:  # noqa: BLE001 - without a listing we simply read the table
        return None


def _fold(changes: list[tuple[str, Interval]]) -> IntervalSet:
    """Adds and removes applied in order; a run of adds (or of removes) is applied at once.

    >>> _fold([("add", Interval(0, 10)), ("add", Interval(20, 30)), ("remove", Interval(5, 25)), ("add", Interval(8, 9))])
    IntervalSet([0, 5), [8, 9), [25, 30))
    """
    current = IntervalSet()
    for op, run in groupby(changes, key=itemgetter(0)):
        intervals = [interval for _, interval in run]
        current = current | intervals if op == "add" else current - IntervalSet(intervals)
    return current


def _columns(spark: Any, schema: str, name: str) -> list[str] | None:
    """The columns of table ``schema.name``, None when it does not exist."""
    try:
        jvm = spark._jvm
        catalog = spark._jsparkSession.sessionState().catalog()
        ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(name, jvm.scala.Some(schema))
        if not catalog.tableExists(ident):
            return None
        return list(catalog.getTableMetadata(ident).schema().fieldNames())
    except Exception:  # noqa: BLE001 - no JVM catalog at hand (Spark Connect): ask through the public API
        qualified = exp.table_(name, db=schema, quoted=True).sql("spark")
        return spark.table(qualified).columns if spark.catalog.tableExists(qualified) else None


def _held(rows: pa.Table, env: str | None = None) -> dict[str, dict[str, EnvEntry]]:
    """Per environment (only ``env`` when given), the entries its rows leave after folding them in ``seq`` order."""
    if env is not None and rows.num_rows:
        rows = rows.filter(pc.equal(rows["env"], env))
    current: dict[str, dict[str, EnvEntry | None]] = {}
    for row in _in_seq(rows):
        current.setdefault(row["env"], {})[row["model"]] = _entry(row) if row["op"] == "apply" else None
    return {e: {k: v for k, v in models.items() if v is not None} for e, models in current.items()}


def _entry(row: dict[str, Any]) -> EnvEntry:
    return EnvEntry(**{f: row[f] for f in EnvEntry.__dataclass_fields__ if f in row})


def _in_seq(table: pa.Table) -> list[dict[str, Any]]:
    return table.sort_by("seq").to_pylist() if table.num_rows else []
