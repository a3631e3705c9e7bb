"""FULL: the whole table is recomputed whenever a new interval is due, and published atomically.

The new content is staged beside the table and switched in with one catalog
call (see ``generations``), so readers never see an empty or half-written table.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model
from pyspark_incr.sqltext import ident
from pyspark_incr.writers import formats, generations, tables
from pyspark_incr.writers.base import BuildContext, TableWriter, register


@register
class FullWriter(TableWriter):
    kind: ClassVar[str] = "FULL"

    def plan_batches(self, model: Model, expected: Interval, missing: IntervalSet,
                     per_partition: bool = False) -> list[Interval]:
        """Any missing interval means one rebuild covering the whole expected range."""
        return [expected] if missing else []

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        return self.replace(ctx, self.output(ctx, interval))

    def replace(self, ctx: BuildContext, df: Any) -> int | None:
        """Make ``df`` the table's whole content, atomically for readers; rows written."""
        return replace_content(ctx, df, self.partition_columns(ctx.model))


def replace_content(ctx: BuildContext, df: Any, partition_columns: tuple[str, ...]) -> int | None:
    """Make ``df`` the whole content of ``ctx.table`` in one step readers see at once; rows written.

    Parquet: a new generation published by one catalog call. Delta: one INSERT OVERWRITE commit.
    """
    if ctx.table_format == formats.DELTA:
        return tables.insert(df, ctx.table, ctx.spark, overwrite=True)
    columns = ctx.spark.table(ctx.table_sql).columns
    df, rows = tables.counted(df.select(*[ident(c) for c in columns]))
    generations.replace_all(ctx.spark, ctx.table, df, partition_columns, formats.storage(ctx.model))
    return rows()
