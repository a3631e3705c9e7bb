"""The MERGE of ``merge_sql`` emulated with DataFrames, for tables without MERGE (Parquet, ORC).

``merged`` computes the new version of the target rows it is given: a full
outer join of target and source on the merge's ON condition, projected through
the ``when_matched`` clauses. The caller decides which target rows to give it
(the partitions a batch touches, see ``touched_partitions``) and stages the
result as a generation.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F
from sqlglot import exp

from pyspark_incr.writers import merge_sql

#: How Spark names the partition of a NULL (or empty string) value, in paths and in the catalog.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def merged(source: Any, target: Any, keys: tuple[str, ...], columns: list[str], whens: list[exp.When],
           merge_filter: exp.Expression | None) -> Any:
    """``target`` after merging ``source`` into it (both with ``columns``), in ``columns`` order and types.

    Every target row that could match a source row must be in ``target``, or its
    source row would be inserted a second time.
    """
    types = {f.name: f.dataType for f in target.schema.fields}
    t = target.select(*[quoted(c) for c in columns], F.lit(True).alias(merge_sql.IN_TARGET)).alias(merge_sql.TARGET)
    s = source.select(*[quoted(c) for c in columns], F.lit(True).alias(merge_sql.IN_SOURCE)).alias(merge_sql.SOURCE)
    joined = t.join(s, F.expr(merge_sql.on_condition(keys, merge_filter).sql("spark")), "full_outer")
    projection = [F.expr(e.this.sql("spark")).cast(types[c]).alias(c)
                  for c, e in zip(columns, merge_sql.merged_row(columns, whens))]
    return joined.where(F.expr(merge_sql.kept_rows(whens).sql("spark"))).select(*projection)


def touched_partitions(source: Any, table: Any, keys: tuple[str, ...], partitions: tuple[str, ...]) -> list[dict[str, str]]:
    """The partitions a merge of ``source`` may change: those of its rows, and of the table's rows sharing a key.

    A matched row may move to the source row's partition, so the partition it
    leaves is touched too. Values are spelled as Spark spells them in partition
    paths and in the catalog (``CAST(value AS STRING)``, NULL as ``__HIVE_DEFAULT_PARTITION__``),
    so they compare equal to ``generations.Staged.partitions``. Only key and partition
    columns of the table are read.
    """
    spelled = [_spelled(c) for c in partitions]
    new = source.select(*spelled)
    old = table.join(source.select(*[quoted(k) for k in keys]).distinct(), on=list(keys), how="left_semi")
    rows = new.union(old.select(*spelled)).distinct().collect()
    return [dict(zip(partitions, row)) for row in rows]


def partition_filter(specs: list[dict[str, str]], partitions: tuple[str, ...]) -> exp.Expression:
    """A predicate over partition columns only, true in exactly ``specs`` (so Spark prunes the others).

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


def _spelled(column: str) -> Any:
    text = F.col(quoted(column)).cast("string")
    # Spark writes an empty string to the NULL partition too.
    return F.when(text.isNull() | (text == ""), F.lit(NULL_PARTITION)).otherwise(text).alias(column)


def quoted(column: str) -> str:
    """A column name for the DataFrame API, backquoted (names may hold dots or spaces).

    >>> quoted("a`b")
    '`a``b`'
    """
    return "`" + column.replace("`", "``") + "`"
