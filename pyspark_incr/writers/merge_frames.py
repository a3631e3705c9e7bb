"""The MERGE of ``merge_sql`` emulated with DataFrames, for tables without MERGE (Parquet, ORC).

``merged`` computes the new version of the target rows it is given: a full
outer join of target and source on the merge's ON condition, projected through
the ``when_matched`` clauses. The caller decides which target rows to give it
(the partitions a batch touches, see ``touched_partitions``; spellings and
filters in ``partitions``) and stages the result as a generation.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F
from sqlglot import exp

from pyspark_incr.sqltext import ident
from pyspark_incr.writers import merge_sql
from pyspark_incr.writers.partitions import spelled


def merged(source: Any, target: Any, keys: tuple[str, ...], columns: list[str], whens: list[exp.When],
           merge_filter: exp.Expression | None) -> Any:
    """``target`` after merging ``source`` into it (both with ``columns``), in ``columns`` order and types.

    Every target row that could match a source row must be in ``target``, or its
    source row would be inserted a second time.
    """
    types = {f.name: f.dataType for f in target.schema.fields}
    t = target.select(*[ident(c) for c in columns], F.lit(True).alias(merge_sql.IN_TARGET)).alias(merge_sql.TARGET)
    s = source.select(*[ident(c) for c in columns], F.lit(True).alias(merge_sql.IN_SOURCE)).alias(merge_sql.SOURCE)
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
    names = [spelled(c) for c in partitions]
    new = source.select(*names)
    old = table.join(source.select(*[ident(k) for k in keys]).distinct(), on=list(keys), how="left_semi")
    rows = new.union(old.select(*names)).distinct().collect()
    return [dict(zip(partitions, row)) for row in rows]
