"""INCREMENTAL_BY_TIME_RANGE on Parquet: each batch replaces exactly its interval's rows, atomically.

The table is partitioned by the time column unless ``partitioned_by`` says
otherwise (e.g. a date partition for an hourly timestamp column). A batch
stages the new version of every partition it touches -- the query's filtered
output, plus, where a partition also holds rows outside the interval, those
rows -- and publishes it in one catalog call (see ``generations``). Partitions
left without rows are emptied in the same call. So an interval whose new output
is empty ends up with no rows, readers see the old rows or the new ones and
never a mix, and a crash before the publish leaves the table as it was.
Batches of one model touch disjoint partitions when the table is partitioned by
the time column, so they may run at the same time (batch_concurrency).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError, ModelQueryError
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.intervals.units import IntervalUnit
from pyspark_incr.model.definition import Model
from pyspark_incr.intervals.times import to_ms
from pyspark_incr.model.render import DEFAULT_TIME_FORMAT, QUERY_ALIAS, output_filter
from pyspark_incr.writers import formats, generations, partitions, tables
from pyspark_incr.sqltext import ident
from pyspark_incr.writers.base import BuildContext, TableWriter, register

@register
class TimeRangeWriter(TableWriter):
    kind: ClassVar[str] = "INCREMENTAL_BY_TIME_RANGE"

    def audited_rows(self, ctx: BuildContext, interval: Interval) -> exp.Expression:
        """Only the batch's interval of the table."""
        spark_type = _time_type(ctx, ctx.table_schema)
        kind = ctx.model.kind
        return output_filter(exp.select("*").from_(ctx.table.copy()), kind.time_column, interval, spark_type,
                             kind.time_column_format).subquery("__incr_batch")

    def partition_columns(self, model: Model) -> tuple[str, ...]:
        return tuple(model.partitioned_by) or (model.kind.time_column,)

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        table_schema = ctx.table_schema
        df, spark_type = self._output(ctx, interval, _column_type(table_schema, ctx.model.kind.time_column),
                                      tuple(table_schema.names))
        if ctx.table_format == formats.DELTA:
            return self._write_delta(ctx, interval, df, spark_type)
        parts = self.partition_columns(ctx.model)
        if df.schema.names != table_schema.names:  # mostly equal: the table was created from the query's columns
            df = df.select(*[ident(c) for c in table_schema.names])
        new, rows = tables.counted(df)
        staged = generations.stage(ctx.spark, ctx.table, new, parts, formats.storage(ctx.model), table_schema,
                                   root=ctx.table_root, df_schema=df.schema)
        try:
            if self._by_time_column(ctx):
                before = [{parts[0]: v} for v in self._partitions_in(ctx, interval, spark_type)]
            else:
                staged, before = self._keep_rows_outside(ctx, interval, spark_type, staged)
            written = {tuple(sorted(p.items())) for p in staged.spec_dicts()}
            emptied = [p for p in before if tuple(sorted(p.items())) not in written]
            generations.publish(ctx.spark, ctx.table, staged, parts, emptied)
        except BaseException:
            generations.discard(ctx.spark, staged)
            raise
        return rows()

    def _write_delta(self, ctx: BuildContext, interval: Interval, df: Any, spark_type: str) -> int | None:
        """Delta replaces exactly the interval's rows in one transaction: INSERT ... REPLACE WHERE."""
        kind = ctx.model.kind
        where = time_condition(kind.time_column, interval, spark_type, kind.time_column_format)
        return tables.insert(df, ctx.table, ctx.spark, replace_where=where)

    def _by_time_column(self, ctx: BuildContext) -> bool:
        parts = self.partition_columns(ctx.model)
        return len(parts) == 1 and parts[0].lower() == ctx.model.kind.time_column.lower()

    def _keep_rows_outside(self, ctx: BuildContext, interval: Interval, spark_type: str,
                           staged: generations.Staged) -> tuple[generations.Staged, list[dict[str, str]]]:
        """Add to ``staged`` the rows outside ``interval`` of every partition the batch touches.

        Touched: partitions the new rows went to, and partitions whose old rows lie in the interval.
        Returns the extended generation and the touched partitions (those left empty get emptied).
        """
        kind, parts = ctx.model.kind, self.partition_columns(ctx.model)
        inside = time_condition(kind.time_column, interval, spark_type, kind.time_column_format).sql("spark")
        table = ctx.spark.table(ctx.table_sql)
        old = table.where(inside).select(*[partitions.spelled(c) for c in parts]).distinct().collect()
        touched = {tuple(sorted(s.items())) for s in staged.spec_dicts()}
        touched |= {tuple(sorted((c, r[c]) for c in parts)) for r in old}
        if not touched:
            return staged, []
        specs = [dict(t) for t in touched]
        kept = table.where(f"NOT ({inside})").where(partitions.partition_filter(specs, parts).sql("spark"))
        return generations.extend(ctx.spark, staged, kept, parts, formats.storage(ctx.model)), specs

    def output(self, ctx: BuildContext, interval: Interval) -> Any:
        """The query's rows for ``interval``, wrapped in the output filter."""
        return self._output(ctx, interval)[0]

    def _output(self, ctx: BuildContext, interval: Interval, table_type: str | None = None,
                columns: tuple[str, ...] = ()) -> tuple[Any, str]:
        """:meth:`output`, and the Spark type of its time column (read once: each read is a round trip).

        ``table_type``: the type of the table's time column, when it has one. The query is then analysed once,
        filtered on that type, which is the query's own in all but odd cases (checked: those, and a query Spark
        refuses, take the way below, which says what is wrong). ``columns``: the table's, selected in its order
        in that same statement (a DataFrame ``select`` after it costs a dozen round trips and an analysis).
        """
        kind = ctx.model.kind
        query = ctx.query(interval)
        if table_type is not None:
            try:
                filtered = output_filter(query, kind.time_column, interval, table_type, kind.time_column_format)
                if columns:
                    filtered = filtered.select(*[exp.column(c, table=QUERY_ALIAS, quoted=True) for c in columns],
                                               append=False)
                df = ctx.dataframe(filtered)
                if _column_type(df.schema, kind.time_column) == table_type:
                    return df, table_type
            except ModelQueryError:
                pass
        df = ctx.dataframe(query)
        spark_type = _time_type(ctx, df.schema)
        # The filter goes on the analysed query: parsing and analysing the query again costs ~50 ms a batch.
        where = output_filter(exp.select("*").from_("t"), kind.time_column, interval, spark_type, kind.time_column_format)
        return df.alias(QUERY_ALIAS).where(where.args["where"].this.sql("spark")), spark_type

    def _partitions_in(self, ctx: BuildContext, interval: Interval, spark_type: str) -> list[str]:
        """Values of the time-column partitions inside ``interval``: for a DATE column every day in it (publish
        ignores the ones the table lacks), else those a catalog listing shows."""
        if spark_type == "date":
            return days_in(interval)
        fmt = ctx.model.kind.time_column_format or DEFAULT_TIME_FORMAT
        tz = ZoneInfo(ctx.spark.conf.get("spark.sql.session.timeZone"))
        column = ctx.model.kind.time_column
        values = [spec[column] for spec in generations.current_partitions(ctx.spark, ctx.table)]
        return [v for v in values
                if v != partitions.NULL_PARTITION and interval.start <= _instant(v, spark_type, fmt, tz) < interval.end]


def days_in(interval: Interval) -> list[str]:
    """Every day whose midnight (UTC) lies in ``interval``, spelled as Spark names a DATE partition.

    >>> days_in(Interval(to_ms("2024-02-28 06:00:00"), to_ms("2024-03-02")))
    ['2024-02-29', '2024-03-01']
    """
    day = IntervalUnit.DAY
    return [datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d")
            for ms in range(day.ceil(interval.start), interval.end, day.approx_ms)]


def time_condition(time_column: str, interval: Interval, spark_type: str, fmt: str | None) -> exp.Expression:
    """``time_column`` in ``interval``, over the table's own columns (what a Delta REPLACE WHERE replaces).

    >>> from pyspark_incr.intervals.times import to_ms
    >>> time_condition("ds", Interval(to_ms("2024-01-01"), to_ms("2024-01-03")), "date", None).sql("spark")
    "`ds` >= CAST('2024-01-01' AS DATE) AND `ds` < CAST('2024-01-03' AS DATE)"
    """
    select = output_filter(exp.select("*").from_("t"), time_column, interval, spark_type, fmt)
    return _unqualified(select.args["where"].this)


def _unqualified(condition: exp.Expression) -> exp.Expression:
    condition = condition.copy()
    for column in condition.find_all(exp.Column):
        column.set("table", None)
    return condition


def _time_type(ctx: BuildContext, schema: Any) -> str:
    """The Spark type of the time column in ``schema`` (a query's output, or the table's)."""
    column = ctx.model.kind.time_column
    found = _column_type(schema, column)
    if found is None:
        raise ModelDefinitionError(
            f"model {ctx.model.name}: time_column {column!r} is not a column of the query's output "
            f"({', '.join(schema.names)}); select it or fix time_column"
        )
    return found


def _column_type(schema: Any, column: str) -> str | None:
    """The Spark type of ``column`` (any case) in ``schema``, or None when it has no such column."""
    return next((f.dataType.simpleString() for f in schema.fields if f.name.lower() == column.lower()), None)


def _instant(value: str, spark_type: str, fmt: str, tz: ZoneInfo) -> int:
    """Epoch ms of a partition value as Spark stored it."""
    if spark_type == "date":
        return to_ms(value)
    if spark_type.startswith("timestamp"):
        zone = timezone.utc if spark_type == "timestamp_ntz" else tz
        return to_ms(datetime.fromisoformat(value).replace(tzinfo=zone))
    return to_ms(datetime.strptime(value, fmt).replace(tzinfo=timezone.utc))
