"""VIEW: a Spark view over the rendered query; nothing is stored.

With ``materialized true`` the rows are stored instead: each method hands the
model to ``materialized.MaterializedView``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model

from pyspark_incr.writers import docs, tables
from pyspark_incr.writers.base import BuildContext, register
from pyspark_incr.writers.materialized import MaterializedView

_STORED = MaterializedView()


@register
class ViewWriter:
    kind: ClassVar[str] = "VIEW"

    def plan_batches(self, model: Model, expected: Interval, missing: IntervalSet,
                     per_partition: bool = False) -> list[Interval]:
        return []

    def prepare(self, ctx: BuildContext, interval: Interval) -> None:
        if _materialized(ctx.model):
            return _STORED.prepare(ctx, interval)
        query = ctx.query(interval)
        df = ctx.dataframe(query)  # analysis first: a broken query must not replace a working view
        tables.ensure_schema(ctx.spark, ctx.table)
        if tables.exists(ctx.spark, ctx.table) and not tables.is_view(ctx.spark, ctx.table):
            tables.drop(ctx.spark, ctx.table)
        ctx.spark.sql(docs.create_view_sql(ctx.table, df.columns, ctx.model, query.sql("spark")))

    def check(self, model: Model) -> None:
        """Any plain view can be built; a materialized one needs a layout a stored table can have."""
        if _materialized(model):
            _STORED.check(model)

    def document(self, ctx: BuildContext, interval: Interval) -> None:
        """A view's comments live in its definition: recreate it."""
        if _materialized(ctx.model):
            return _STORED.document(ctx, interval)
        self.prepare(ctx, interval)

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        """Refresh a materialized view (planned only when its sources changed); plain views store nothing."""
        return _STORED.write(ctx, interval) if _materialized(ctx.model) else None

    def stale(self, ctx: BuildContext, interval: Interval) -> str | None:
        return _STORED.stale(ctx, interval) if _materialized(ctx.model) else None

    def audited_rows(self, ctx: BuildContext, interval: Interval) -> Any:
        return _STORED.audited_rows(ctx, interval) if _materialized(ctx.model) else ctx.table.copy()


def _materialized(model: Model) -> bool:
    return model.kind.materialized
