"""Typed access to the state tables of one Spark session.

Each procedure call builds one :class:`StateStore` and reads each table at most
once (Arrow); writes are appends of whole row batches.
"""

from __future__ import annotations

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
        if table.name not in self._cache:
            self.ensure()
            try:
                self._cache[table.name] = self.spark.table(table.qualified(self.schema)).toArrow()
            except Exception as e:  # noqa: BLE001 - any read failure is a state problem for the user
                raise StateError(
                    f"state table {table.qualified(self.schema)} cannot be read ({e}); "
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


def _entry(row: dict[str, Any]) -> EnvEntry:
    return EnvEntry(**{f: row[f] for f in EnvEntry.__dataclass_fields__})


def _in_seq(table: pa.Table) -> list[dict[str, Any]]:
    return table.sort_by("seq").to_pylist() if table.num_rows else []
