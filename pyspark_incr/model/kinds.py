"""Model kinds as frozen records, looked up by name in :data:`KINDS`.

Each kind reads its own properties; writers are found separately by kind name
(see :mod:`pyspark_incr.writers`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import ClassVar, Protocol

from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.block import KindSpec, Property
from pyspark_incr.model.values import as_int, as_string


class Kind(Protocol):
    """What every kind record offers."""

    name: ClassVar[str]
    #: True when the kind has time intervals to track (VIEW has none).
    has_intervals: ClassVar[bool]
    #: Fields that change how the model is built, never what it holds (kept out of the data hash).
    build_fields: ClassVar[tuple[str, ...]]

    @classmethod
    def from_spec(cls, spec: KindSpec, where: str) -> "Kind": ...


def _no_properties(spec: KindSpec, where: str, allowed: tuple[str, ...] = ()) -> None:
    for key, prop in spec.properties.items():
        if key not in allowed:
            hint = difflib.get_close_matches(key, allowed, n=1)
            also = f"; did you mean {hint[0]!r}?" if hint else ""
            allowed_text = ", ".join(allowed) or "none"
            raise ModelDefinitionError(
                f"{where}: line {prop.line}: kind {spec.name} has no property {key!r}{also} "
                f"(its properties: {allowed_text})"
            )


@dataclass(frozen=True)
class FullKind:
    """Rebuilt completely whenever a new interval is due."""

    name: ClassVar[str] = "FULL"
    has_intervals: ClassVar[bool] = True
    build_fields: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_spec(cls, spec: KindSpec, where: str) -> "FullKind":
        _no_properties(spec, where)
        return cls()


@dataclass(frozen=True)
class ViewKind:
    """A Spark view over the query; nothing is stored, nothing is backfilled."""

    name: ClassVar[str] = "VIEW"
    has_intervals: ClassVar[bool] = False
    build_fields: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_spec(cls, spec: KindSpec, where: str) -> "ViewKind":
        _no_properties(spec, where)
        return cls()


@dataclass(frozen=True)
class IncrementalByTimeRangeKind:
    """Each interval's rows are replaced by the query run for that interval."""

    name: ClassVar[str] = "INCREMENTAL_BY_TIME_RANGE"
    has_intervals: ClassVar[bool] = True
    build_fields: ClassVar[tuple[str, ...]] = ("batch_size",)
    _PROPS: ClassVar[tuple[str, ...]] = ("time_column", "batch_size")

    time_column: str
    time_column_format: str | None = None
    batch_size: int | None = None

    @classmethod
    def from_spec(cls, spec: KindSpec, where: str) -> "IncrementalByTimeRangeKind":
        _no_properties(spec, where, cls._PROPS)
        prop = spec.properties.get("time_column")
        if prop is None:
            raise ModelDefinitionError(
                f"{where}: line {spec.line}: kind INCREMENTAL_BY_TIME_RANGE needs a time_column, "
                "e.g. kind INCREMENTAL_BY_TIME_RANGE (time_column ds)"
            )
        column, fmt = _time_column(prop, where)
        batch = spec.properties.get("batch_size")
        batch_size = as_int(batch, where) if batch else None
        if batch_size == 0:
            raise ModelDefinitionError(f"{where}: line {batch.line}: batch_size must be at least 1")
        return cls(column, fmt, batch_size)


def _time_column(prop: Property, where: str) -> tuple[str, str | None]:
    v = prop.value
    if isinstance(v, exp.Column):
        return v.name, None
    if isinstance(v, exp.Tuple) and len(v.expressions) == 2 and isinstance(v.expressions[0], exp.Column):
        fmt = v.expressions[1]
        if isinstance(fmt, exp.Literal) and fmt.is_string:
            return v.expressions[0].name, fmt.this
    raise ModelDefinitionError(
        f"{where}: line {prop.line}: time_column must be a column or (column, 'format'), got {prop.text!r}"
    )


KINDS: dict[str, type] = {k.name: k for k in (FullKind, ViewKind, IncrementalByTimeRangeKind)}


def kind_from_spec(spec: KindSpec, where: str) -> Kind:
    """The kind record for ``kind NAME (...)``; unknown names list the supported ones."""
    cls = KINDS.get(spec.name)
    if cls is None:
        hint = difflib.get_close_matches(spec.name, KINDS, n=1)
        also = f" Did you mean {hint[0]}?" if hint else ""
        raise ModelDefinitionError(
            f"{where}: line {spec.line}: unknown model kind {spec.name!r}.{also} "
            f"Supported kinds: {', '.join(sorted(KINDS))}"
        )
    return cls.from_spec(spec, where)
