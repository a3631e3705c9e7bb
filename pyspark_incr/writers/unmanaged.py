"""INCREMENTAL_UNMANAGED: each due batch appends the query's output (or replaces the table with insert_overwrite)."""

from __future__ import annotations

from typing import ClassVar

from pyspark_incr.intervals.batching import covering
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model
from pyspark_incr.writers import tables
from pyspark_incr.writers.base import BuildContext, TableWriter, register


@register
class UnmanagedWriter(TableWriter):
    kind: ClassVar[str] = "INCREMENTAL_UNMANAGED"

    def plan_batches(self, model: Model, expected: Interval, missing: IntervalSet,
                     per_partition: bool = False) -> list[Interval]:
        """One append per run covering everything missing: appends are not idempotent, so never split them."""
        return covering(missing)

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        df = self.output(ctx, interval)
        return tables.insert(df, ctx.table, ctx.spark, overwrite=ctx.model.kind.insert_overwrite)
