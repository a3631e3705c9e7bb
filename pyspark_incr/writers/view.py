"""VIEW: a Spark view over the rendered query; nothing is stored."""

from __future__ import annotations

from typing import ClassVar

from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model
from sqlglot import exp

from pyspark_incr.writers import docs, tables
from pyspark_incr.writers.base import BuildContext, register


@register
class ViewWriter:
    kind: ClassVar[str] = "VIEW"

    def plan_batches(self, model: Model, expected: Interval, missing: IntervalSet,
                     per_partition: bool = False) -> list[Interval]:
        return []

    def prepare(self, ctx: BuildContext, interval: Interval) -> None:
        query = ctx.query(interval)
        df = ctx.dataframe(query)  # analysis first: a broken query must not replace a working view
        tables.ensure_schema(ctx.spark, ctx.table)
        if tables.exists(ctx.spark, ctx.table) and not tables.is_view(ctx.spark, ctx.table):
            tables.drop(ctx.spark, ctx.table)
        comments = dict(ctx.model.column_descriptions)
        columns = ", ".join(
            exp.to_identifier(c, quoted=True).sql("spark") + (f" COMMENT {docs.literal(comments[c])}" if c in comments else "")
            for c in df.columns
        )
        clauses = f" COMMENT {docs.literal(ctx.model.description)}" if ctx.model.description else ""
        clauses += docs.properties_clause(docs.table_properties(ctx.model))
        ctx.spark.sql(f"CREATE OR REPLACE VIEW {ctx.table_sql} ({columns}){clauses} AS {query.sql('spark')}")

    def check(self, model: Model) -> None:
        """Any view can be built; ``materialized true`` is ignored, as the spec says for engines without
        materialized views."""

    def document(self, ctx: BuildContext, interval: Interval) -> None:
        """A view's comments live in its definition: recreate it."""
        self.prepare(ctx, interval)

    def write(self, ctx: BuildContext, interval: Interval) -> None:
        """Views have no intervals to build."""
