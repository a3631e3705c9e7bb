"""The schema half of a table diff: columns added, removed or retyped in the target.

Names match case-insensitively, as Spark resolves them; types are compared as Spark writes
them (``simpleString``), so nullability alone is no difference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import ArrayType, MapType, StructType


@dataclass(frozen=True)
class SchemaDiff:
    """How the target's columns differ from the source's."""

    #: Columns only the target has: ``(name, type)``.
    added: tuple[tuple[str, str], ...]
    #: Columns only the source has: ``(name, type)``.
    removed: tuple[tuple[str, str], ...]
    #: Columns both have with another type: ``(name, source type, target type)``.
    retyped: tuple[tuple[str, str, str], ...]
    #: Columns both have with one type: ``(source name, target name, type)``, in the source's order.
    shared: tuple[tuple[str, str, str], ...]

    @property
    def matches(self) -> bool:
        """Whether both sides have the same columns with the same types."""
        return not (self.added or self.removed or self.retyped)


def schema_diff(source: Any, target: Any) -> SchemaDiff:
    """Compare two Spark ``StructType`` schemas.

    >>> from pyspark.sql.types import StructType, StructField, IntegerType, LongType, StringType
    >>> s = StructType([StructField("id", IntegerType()), StructField("Name", StringType()),
    ...                 StructField("x", IntegerType())])
    >>> t = StructType([StructField("id", IntegerType(), False), StructField("name", StringType()),
    ...                 StructField("x", LongType()), StructField("y", StringType())])
    >>> d = schema_diff(s, t)
    >>> d.added, d.removed, d.retyped, d.shared
    ((('y', 'string'),), (), (('x', 'int', 'bigint'),), (('id', 'id', 'int'), ('Name', 'name', 'string')))
    """
    theirs = {f.name.lower(): f for f in target.fields}
    ours = {f.name.lower() for f in source.fields}
    removed, retyped, shared = [], [], []
    for field in source.fields:
        other = theirs.get(field.name.lower())
        mine = field.dataType.simpleString()
        if other is None:
            removed.append((field.name, mine))
        elif other.dataType.simpleString() != mine:
            retyped.append((field.name, mine, other.dataType.simpleString()))
        else:
            shared.append((field.name, other.name, mine))
    added = [(f.name, f.dataType.simpleString()) for f in target.fields if f.name.lower() not in ours]
    return SchemaDiff(tuple(added), tuple(removed), tuple(retyped), tuple(shared))


def comparable(data_type: Any) -> bool:
    """Whether Spark can compare values of ``data_type`` for equality (a map, even nested, cannot be).

    >>> from pyspark.sql.types import StringType, StructField
    >>> nested = StructType([StructField("m", MapType(StringType(), StringType()))])
    >>> comparable(ArrayType(StringType())), comparable(nested), comparable(ArrayType(nested))
    (True, False, False)
    """
    if isinstance(data_type, MapType):
        return False
    if isinstance(data_type, ArrayType):
        return comparable(data_type.elementType)
    if isinstance(data_type, StructType):
        return all(comparable(f.dataType) for f in data_type.fields)
    return True
