"""Kinds with few or no properties: FULL, VIEW, EMBEDDED, INCREMENTAL_UNMANAGED, SEED, EXTERNAL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyspark_incr.model.kinds.base import AUTO_RESTATEMENT_PROPS, KindBase, finish_time_column, read_time_column
from pyspark_incr.model.properties import BUILD, DATA, Prop
from pyspark_incr.model.values import as_bool, as_int, as_literal_mapping, as_string


@dataclass(frozen=True)
class FullKind(KindBase):
    """Rebuilt completely whenever a new interval is due."""

    name: ClassVar[str] = "FULL"
    whole_table: ClassVar[bool] = True


@dataclass(frozen=True)
class ViewKind(KindBase):
    """A Spark view over the query; nothing is stored, nothing is backfilled."""

    name: ClassVar[str] = "VIEW"
    has_intervals: ClassVar[bool] = False
    props: ClassVar[tuple[Prop, ...]] = (Prop("materialized", as_bool, DATA),)

    materialized: bool = False

    @property
    def stores_rows(self) -> bool:  # type: ignore[override]
        return self.materialized


@dataclass(frozen=True)
class EmbeddedKind(KindBase):
    """No table: the query is inlined into every model that reads it."""

    name: ClassVar[str] = "EMBEDDED"
    has_intervals: ClassVar[bool] = False
    builds_object: ClassVar[bool] = False
    inlined: ClassVar[bool] = True


@dataclass(frozen=True)
class IncrementalUnmanagedKind(KindBase):
    """Append-only: each run appends the query's output."""

    name: ClassVar[str] = "INCREMENTAL_UNMANAGED"
    props: ClassVar[tuple[Prop, ...]] = (Prop("insert_overwrite", as_bool, DATA), *AUTO_RESTATEMENT_PROPS)

    insert_overwrite: bool = False
    #: Accepted as SQLMesh does; never acted on, as there (its INCREMENTAL_UNMANAGED has disable_restatement).
    auto_restatement_cron: str | None = None


@dataclass(frozen=True)
class SeedKind(KindBase):
    """A table loaded from a CSV file of the project (``path`` relative to the model file)."""

    name: ClassVar[str] = "SEED"
    has_intervals: ClassVar[bool] = False
    needs_query: ClassVar[bool] = False
    props: ClassVar[tuple[Prop, ...]] = (
        Prop("path", as_string, DATA, required=True, example="kind SEED (path '../seeds/items.csv')"),
        Prop("csv_settings", as_literal_mapping, DATA),
        Prop("batch_size", as_int(1), BUILD),
    )

    path: str
    csv_settings: tuple[tuple[str, str], ...] = ()
    batch_size: int | None = None


@dataclass(frozen=True)
class ExternalKind(KindBase):
    """A table built elsewhere; declared so its columns and time column are known.

    With a ``time_column`` it is a timeseries source: the time-sliced models reading it get
    its rows filtered to what their run window needs (source pushdown, see ``pyspark_incr.safety``).
    """

    name: ClassVar[str] = "EXTERNAL"
    has_intervals: ClassVar[bool] = False
    needs_query: ClassVar[bool] = False
    builds_object: ClassVar[bool] = False
    props: ClassVar[tuple[Prop, ...]] = (
        Prop("time_column", read_time_column, BUILD, ("time_column", "time_column_format")),
    )
    hashed_when_set: ClassVar[frozenset[str]] = frozenset({"time_column", "time_column_format"})

    time_column: str | None = None
    time_column_format: str | None = None

    finish = classmethod(finish_time_column)
