"""FULL: the whole table is recomputed whenever a new interval is due."""

from __future__ import annotations

from typing import ClassVar

from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model
from pyspark_incr.writers import tables
from pyspark_incr.writers.base import BuildContext, TableWriter, register


@register
class FullWriter(TableWriter):
    kind: ClassVar[str] = "FULL"

    def plan_batches(self, model: Model, expected: Interval, missing: IntervalSet,
                     per_partition: bool = False) -> list[Interval]:
        """Any missing interval means one rebuild covering the whole expected range."""
        return [expected] if missing else []

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        df = self.output(ctx, interval)
        return tables.insert(df, ctx.table, ctx.spark, overwrite=True)
