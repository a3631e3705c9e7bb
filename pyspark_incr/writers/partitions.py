"""Partition values as Spark spells them, for the writers that rewrite only the partitions a batch touches.

A partition is named by the string Spark writes in its directory and the catalog
keeps in its spec: ``CAST(value AS STRING)``, and ``__HIVE_DEFAULT_PARTITION__``
for NULL (and for an empty string, which Spark writes there too). Specs spelled
this way compare equal to ``generations.Staged.partitions`` and to
``generations.current_partitions``.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F
from sqlglot import exp

from pyspark_incr.sqltext import ident

#: How Spark names the partition of a NULL (or empty string) value, in paths and in the catalog.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def spelled(column: str) -> Any:
    """A DataFrame column: ``column``'s value as Spark names its partition."""
    text = F.col(ident(column)).cast("string")
    return F.when(text.isNull() | (text == ""), F.lit(NULL_PARTITION)).otherwise(text).alias(column)


def partition_filter(specs: list[dict[str, str]], partitions: tuple[str, ...]) -> exp.Expression:
    """A predicate over partition columns only, true in exactly ``specs`` (so Spark prunes the others).

    Rows read back from a table never hold an empty string in a partition column
    (Spark wrote it as NULL), so the NULL partition is ``IS NULL``.

    >>> partition_filter([{"ds": "2024-01-01"}, {"ds": NULL_PARTITION}], ("ds",)).sql("spark")
    "CAST(`ds` AS STRING) IN ('2024-01-01') OR `ds` IS NULL"
    >>> partition_filter([{"a": "1", "b": "x"}], ("a", "b")).sql("spark")
    "CAST(`a` AS STRING) = '1' AND CAST(`b` AS STRING) = 'x'"
    >>> partition_filter([], ("ds",)).sql("spark")
    'FALSE'
    """
    if not specs:
        return exp.false()
    if len(partitions) == 1:  # one IN list instead of hundreds of ORs: a year of daily partitions stays one term
        (column,) = partitions
        values = sorted({s[column] for s in specs if s[column] != NULL_PARTITION})
        terms = [_as_string(column).isin(*[exp.Literal.string(v) for v in values])] if values else []
        if any(s[column] == NULL_PARTITION for s in specs):
            terms.append(exp.column(column, quoted=True).is_(exp.null()))
        return exp.or_(*terms)
    return exp.or_(*[exp.and_(*[_equals(c, s[c]) for c in partitions]) for s in specs])


def spec_key(spec: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """A partition spec as a hashable value, its column names lowercased (the catalog's spelling)."""
    return tuple(sorted((k.lower(), v) for k, v in spec.items()))


def _equals(column: str, value: str) -> exp.Expression:
    if value == NULL_PARTITION:
        return exp.column(column, quoted=True).is_(exp.null())
    return _as_string(column).eq(exp.Literal.string(value))


def _as_string(column: str) -> exp.Expression:
    return exp.cast(exp.column(column, quoted=True), "STRING")
