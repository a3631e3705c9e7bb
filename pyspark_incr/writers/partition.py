"""INCREMENTAL_BY_PARTITION: a run recomputes the whole query and overwrites exactly the partitions it produced.

Partitions the output does not hold keep their rows (dynamic partition overwrite).
The strategy depends on the table format (``formats.chosen``):

- Parquet/ORC: the output is staged as a generation beside the table and its
  partitions are switched in with one catalog call (``generations.publish``), so
  readers see every overwritten partition old or every one new, never a mix, and
  a failure before the switch changes nothing.
- Delta: one ``INSERT ... REPLACE WHERE`` over the output's partitions, one transaction.

An empty output overwrites nothing.
"""

from __future__ import annotations

from typing import Any, ClassVar


from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model
from pyspark_incr.sqltext import ident
from pyspark_incr.writers import formats, generations, partitions, tables
from pyspark_incr.writers.base import BuildContext, TableWriter, register
from pyspark_incr.writers.unique_key import partition_columns


@register
class PartitionWriter(TableWriter):
    kind: ClassVar[str] = "INCREMENTAL_BY_PARTITION"

    def plan_batches(self, model: Model, expected: Interval, missing: IntervalSet,
                     per_partition: bool = False) -> list[Interval]:
        """Not time-sliced: any missing interval means one run of the whole query."""
        return [expected] if missing else []

    def check(self, model: Model) -> None:
        super().check(model)
        if not model.partitioned_by:  # parse_model refuses this; a model record built otherwise must not pass
            raise ModelDefinitionError(f"model {model.name}: kind {self.kind} needs partitioned_by")

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        df = self.output(ctx, interval)
        parts = partition_columns(ctx.spark, ctx.table)
        if ctx.table_format == formats.DELTA:
            return _replace_delta(ctx, df, parts)
        schema = ctx.spark.table(ctx.table_sql).schema
        new, rows = tables.counted(df.select(*[ident(c) for c in schema.names]))
        staged = generations.stage(ctx.spark, ctx.table, new, parts, formats.storage(ctx.model), schema)
        try:
            if staged.partitions:
                generations.publish(ctx.spark, ctx.table, staged, parts)
            else:
                generations.discard(ctx.spark, staged)
        except BaseException:
            generations.discard(ctx.spark, staged)
            raise
        return rows()


def _replace_delta(ctx: BuildContext, df: Any, parts: tuple[str, ...]) -> int | None:
    """Replace the partitions ``df`` holds in one Delta transaction; the others keep their rows."""
    df = df.persist()  # read twice: for its partitions, then for the write
    try:
        specs = [row.asDict() for row in df.select(*[partitions.spelled(c) for c in parts]).distinct().collect()]
        if not specs:
            return 0
        condition = partitions.partition_filter(specs, parts)
        return tables.insert(df, ctx.table, ctx.spark, replace_where=condition)
    finally:
        df.unpersist()
