"""INCREMENTAL_BY_CURSOR (OndatraSQL's ``@incremental``): each due run appends the rows above the high-water mark.

- The mark is MAX(cursor_column) of the target table, read when the batch starts
  (:mod:`pyspark_incr.writers.high_water`); nothing else remembers it.
- ``@last_value`` is that mark as a literal of the cursor column's type; while the table holds
  no cursor value (first load, the load after a reset, or after loads that appended nothing)
  it is ``initial_value``, or NULL without one, and ``@is_backfill`` is TRUE.
- Whatever the query says, its output is wrapped in ``cursor_column > @last_value``
  (:func:`pyspark_incr.model.render.cursor_filter`); ``@last_value`` inside the query only
  filters earlier (at a source, or on a column of another name).
- A batch is one due run: the interval only decides *when* the model runs, the cursor decides
  *which* rows; like INCREMENTAL_UNMANAGED, everything missing is one batch, never split.
- The append is one ``INSERT INTO``: one Spark job whose files appear when it commits. A failed
  append leaves the table and its MAX as they were, so the next run reads the same rows again.
- A changed definition recreates the table (the planner's rebuild): it is empty, so the next
  batch is a backfill from ``initial_value``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlglot import exp

from pyspark_incr.intervals.batching import covering
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model
from pyspark_incr.model.render import FIRST_LOAD, cursor_filter
from pyspark_incr.writers import high_water, tables
from pyspark_incr.writers.base import BuildContext, TableWriter, register


@register
class CursorWriter(TableWriter):
    kind: ClassVar[str] = "INCREMENTAL_BY_CURSOR"

    def plan_batches(self, model: Model, expected: Interval, missing: IntervalSet,
                     per_partition: bool = False) -> list[Interval]:
        """One batch per run covering everything missing: the cursor picks the rows, so splitting adds nothing."""
        return covering(missing)

    def output(self, ctx: BuildContext, interval: Interval) -> Any:
        """The rows of a first load, which a new table takes its schema from; refuses an unusable cursor column.

        The query is analyzed once without a mark to learn the cursor column's type: only then
        can ``initial_value`` be written as a literal of that type.
        """
        kind = ctx.model.kind
        probe = ctx.dataframe(self._query(ctx, interval, FIRST_LOAD))
        spark_type = high_water.cursor_type(probe.schema, kind.cursor_column, f"model {ctx.model.name}")
        return ctx.dataframe(self.rows(ctx, interval, spark_type, high_water.initial(kind.initial_value, spark_type)))

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        """Append the rows above the table's high-water mark; the number of rows appended."""
        kind = ctx.model.kind
        spark_type, mark = high_water.read(ctx.spark, ctx.table, kind.cursor_column, f"model {ctx.model.name}")
        backfill = mark is None
        if backfill:
            mark = high_water.initial(kind.initial_value, spark_type)
        df = ctx.dataframe(self.rows(ctx, interval, spark_type, mark, backfill))
        return tables.insert(df, ctx.table, ctx.spark)

    def rows(self, ctx: BuildContext, interval: Interval, spark_type: str, last_value: exp.Expression | None,
             backfill: bool = True) -> exp.Select:
        """The query rendered with ``@last_value``/``@is_backfill``, keeping only rows above ``last_value``.

        Without a mark ``@last_value`` is a NULL of the cursor's type, so ``COALESCE(@last_value, ...)`` types.
        """
        typed = last_value if last_value is not None else exp.cast(exp.null(), high_water.data_type(spark_type))
        macros = {"last_value": typed, "is_backfill": exp.Boolean(this=backfill)}
        return cursor_filter(self._query(ctx, interval, macros), ctx.model.kind.cursor_column, last_value)

    def _query(self, ctx: BuildContext, interval: Interval, macros: dict[str, exp.Expression]) -> exp.Query:
        return ctx.query(interval, macros)
