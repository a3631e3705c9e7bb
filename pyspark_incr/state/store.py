"""Typed access to the state tables of one Spark session.

Each procedure call builds one :class:`StateStore` and reads each table at most
once (Arrow); writes are appends of whole row batches.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable

import pyarrow as pa

from pyspark_incr.config import STATE_SCHEMA, setting
from pyspark_incr.errors import StateError
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model, reparse
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

    def parsed(self) -> "Model":
        """The applied model, parsed again as it was applied."""
        return reparse(self.definition, self.model_source or "registry", self.context or "")


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
        self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {quoted}")
        for table in t.ALL_TABLES:
            self.spark.sql(table.ddl(self.schema))
        _ensured.add(key)

    def read(self, table: t.StateTable) -> pa.Table:
        """The table's rows: read once per call, and reused across calls while its files are unchanged."""
        if table.name not in self._cache:
            self.ensure()
            name = table.qualified(self.schema)
            try:
                version = _files_version(self.spark, self.schema, table.name)
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
        current: dict[str, EnvEntry | None] = {}
        for row in _in_seq(self.read(t.ENVIRONMENTS)):
            if row["env"] != env:
                continue
            current[row["model"]] = _entry(row) if row["op"] == "apply" else None
        return {k: v for k, v in current.items() if v is not None}

    # -- intervals ----------------------------------------------------------

    def coverage(self) -> dict[tuple[str, str], IntervalSet]:
        """Built intervals per (physical table, fingerprint)."""
        sets: dict[tuple[str, str], IntervalSet] = {}
        for row in _in_seq(self.read(t.INTERVALS)):
            key = (row["table_name"], row["fingerprint"])
            change = IntervalSet([Interval(row["start_ms"], row["end_ms"])])
            current = sets.get(key, IntervalSet())
            sets[key] = current | change if row["op"] == "add" else current - change
        return sets


def _files_version(spark: Any, schema: str, name: str) -> tuple | None:
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


def _entry(row: dict[str, Any]) -> EnvEntry:
    return EnvEntry(**{f: row[f] for f in EnvEntry.__dataclass_fields__})


def _in_seq(table: pa.Table) -> list[dict[str, Any]]:
    return table.sort_by("seq").to_pylist() if table.num_rows else []
