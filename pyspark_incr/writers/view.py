"""VIEW: a Spark view over the rendered query; nothing is stored."""

from __future__ import annotations

from typing import ClassVar

from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model
from pyspark_incr.writers import tables
from pyspark_incr.writers.base import BuildContext, register


@register
class ViewWriter:
    kind: ClassVar[str] = "VIEW"

    def plan_batches(self, model: Model, expected: Interval, missing: IntervalSet) -> list[Interval]:
        return []

    def prepare(self, ctx: BuildContext, interval: Interval) -> None:
        query = ctx.query(interval)
        ctx.dataframe(query)  # analysis first: a broken query must not replace a working view
        tables.ensure_schema(ctx.spark, ctx.table)
        if tables.exists(ctx.spark, ctx.table) and not tables.is_view(ctx.spark, ctx.table):
            tables.drop(ctx.spark, ctx.table)
        ctx.spark.sql(f"CREATE OR REPLACE VIEW {ctx.table_sql} AS {query.sql('spark')}")

    def write(self, ctx: BuildContext, interval: Interval) -> None:
        """Views have no intervals to build."""
