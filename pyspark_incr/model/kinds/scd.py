"""SCD type 2, by time (``SCD_TYPE_2`` / ``SCD_TYPE_2_BY_TIME``) and by column (``SCD_TYPE_2_BY_COLUMN``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.block import Property
from pyspark_incr.model.kinds.base import AUTO_RESTATEMENT_PROPS, CHANGE_PROPS, KindBase
from pyspark_incr.model.properties import DATA, Prop
from pyspark_incr.model.values import _value, as_bool, as_names, as_string


def read_type(prop: Property, where: str) -> str:
    """A Spark type name such as TIMESTAMP or DATE."""
    name = as_string(prop, where)
    try:
        return exp.DataType.build(name, dialect="spark").sql("spark")
    except Exception:  # noqa: BLE001 - sqlglot raises several types for a bad type name
        raise ModelDefinitionError(f"{where}: {prop.at}: {prop.key} {name!r} is not a type; use e.g. TIMESTAMP") from None


def read_columns_or_star(prop: Property, where: str) -> tuple[str, ...]:
    """Columns to compare, or ``*`` for all of them."""
    v = _value(prop, where)
    if isinstance(v, exp.Star) or (isinstance(v, exp.Column) and isinstance(v.this, exp.Star)):
        return ("*",)
    return as_names(prop, where)


_SHARED = (
    Prop("unique_key", as_names, DATA, required=True, example="unique_key id"),
    Prop("valid_from_name", as_string, DATA),
    Prop("valid_to_name", as_string, DATA),
    Prop("invalidate_hard_deletes", as_bool, DATA),
    Prop("time_data_type", read_type, DATA),
    *CHANGE_PROPS,
    *AUTO_RESTATEMENT_PROPS,
)


@dataclass(frozen=True)
class ScdType2ByTimeKind(KindBase):
    name: ClassVar[str] = "SCD_TYPE_2_BY_TIME"
    has_intervals: ClassVar[bool] = True
    ordered_batches: ClassVar[bool] = True
    props: ClassVar[tuple[Prop, ...]] = (
        *_SHARED,
        Prop("updated_at_name", as_string, DATA),
        Prop("updated_at_as_valid_from", as_bool, DATA),
    )

    unique_key: tuple[str, ...]
    valid_from_name: str = "valid_from"
    valid_to_name: str = "valid_to"
    invalidate_hard_deletes: bool = True
    time_data_type: str = "TIMESTAMP"
    updated_at_name: str = "updated_at"
    updated_at_as_valid_from: bool = False
    forward_only: bool = True
    on_destructive_change: str = "error"
    on_additive_change: str = "allow"
    disable_restatement: bool = True
    auto_restatement_cron: str | None = None


@dataclass(frozen=True)
class ScdType2Kind(ScdType2ByTimeKind):
    """``SCD_TYPE_2`` is SQLMesh's short name for SCD_TYPE_2_BY_TIME."""

    name: ClassVar[str] = "SCD_TYPE_2"


@dataclass(frozen=True)
class ScdType2ByColumnKind(KindBase):
    name: ClassVar[str] = "SCD_TYPE_2_BY_COLUMN"
    ordered_batches: ClassVar[bool] = True
    props: ClassVar[tuple[Prop, ...]] = (
        *_SHARED,
        Prop("columns", read_columns_or_star, DATA, required=True, example="columns (name, price)"),
        Prop("execution_time_as_valid_from", as_bool, DATA),
    )

    unique_key: tuple[str, ...]
    columns: tuple[str, ...]
    valid_from_name: str = "valid_from"
    valid_to_name: str = "valid_to"
    invalidate_hard_deletes: bool = True
    time_data_type: str = "TIMESTAMP"
    execution_time_as_valid_from: bool = False
    forward_only: bool = True
    on_destructive_change: str = "error"
    on_additive_change: str = "allow"
    disable_restatement: bool = True
    auto_restatement_cron: str | None = None
