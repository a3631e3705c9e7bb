"""INCREMENTAL_BY_CURSOR (OndatraSQL's ``@incremental``): append rows above the high-water mark of a cursor column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.block import Property
from pyspark_incr.model.kinds.base import KindBase
from pyspark_incr.model.macros import CURSOR
from pyspark_incr.model.properties import DATA, Prop
from pyspark_incr.model.values import _value, as_names


def read_cursor_column(prop: Property, where: str) -> str:
    names = as_names(prop, where)
    if len(names) != 1:
        raise ModelDefinitionError(f"{where}: {prop.at}: cursor_column must be one column, got {prop.text!r}")
    return names[0]


def read_initial_value(prop: Property, where: str) -> str:
    """A literal (string, number or typed literal like TIMESTAMP '2024-01-01') kept as Spark SQL."""
    v = _value(prop, where)
    if isinstance(v, (exp.Literal, exp.Null)) or (isinstance(v, (exp.Neg, exp.Cast)) and isinstance(v.this, exp.Literal)):
        return v.sql("spark")
    raise ModelDefinitionError(
        f"{where}: {prop.at}: initial_value must be a literal like 0 or '2024-01-01', got {prop.text!r}"
    )


@dataclass(frozen=True)
class IncrementalByCursorKind(KindBase):
    """Appends the rows whose cursor column is above the table's MAX(cursor_column) (writers/cursor.py).

    It has intervals for scheduling only: a due interval means "run now"; the cursor, not the
    interval, decides which rows are appended.
    """

    name: ClassVar[str] = "INCREMENTAL_BY_CURSOR"
    ordered_batches: ClassVar[bool] = True
    macros: ClassVar[frozenset[str]] = CURSOR
    props: ClassVar[tuple[Prop, ...]] = (
        Prop("cursor_column", read_cursor_column, DATA, required=True,
             example="kind INCREMENTAL_BY_CURSOR (cursor_column updated_at)"),
        Prop("initial_value", read_initial_value, DATA),
    )

    cursor_column: str
    initial_value: str | None = None
