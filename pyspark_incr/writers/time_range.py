"""INCREMENTAL_BY_TIME_RANGE on Parquet: the table is partitioned by the time column.

Each batch first drops every partition inside its interval, then writes the
filtered output with a dynamic partition overwrite. So an interval's old rows
are replaced exactly, and an interval whose new output is empty ends up with no
rows (the overwrite alone would keep them). The overwrite, unlike a plain
INSERT INTO, stages each job's files in a directory of its own: batches of one
model can be written at the same time (batch_concurrency).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, ClassVar
from urllib.parse import unquote
from zoneinfo import ZoneInfo

from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals.batching import batches
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model
from pyspark_incr.intervals.times import to_ms
from pyspark_incr.model.render import DEFAULT_TIME_FORMAT, output_filter
from pyspark_incr.writers import tables
from pyspark_incr.writers.base import BuildContext, TableWriter, register

_NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
#: Replace only the partitions a write produces (a table option, so the session's setting does not matter).
_DYNAMIC = {"partitionOverwriteMode": "dynamic"}


@register
class TimeRangeWriter(TableWriter):
    kind: ClassVar[str] = "INCREMENTAL_BY_TIME_RANGE"

    def plan_batches(self, model: Model, expected: Interval, missing: IntervalSet,
                     per_partition: bool = False) -> list[Interval]:
        return batches(missing, model.schedule.unit, 1 if per_partition else model.kind.batch_size)

    def audited_rows(self, ctx: BuildContext, interval: Interval) -> exp.Expression:
        """Only the batch's interval of the table."""
        table = ctx.table.sql("spark")
        spark_type = _time_type(ctx, ctx.spark.table(table))
        kind = ctx.model.kind
        return output_filter(exp.select("*").from_(ctx.table.copy()), kind.time_column, interval, spark_type,
                             kind.time_column_format).subquery("__incr_batch")

    def partition_columns(self, model: Model) -> tuple[str, ...]:
        return (model.kind.time_column,)

    def table_options(self, model: Model) -> dict[str, str]:
        return dict(_DYNAMIC)

    def check(self, model: Model) -> None:
        super().check(model)
        if model.partitioned_by and tuple(model.partitioned_by) != (model.kind.time_column,):
            raise ModelDefinitionError(
                f"model {model.name}: partitioned_by other than the time column is not supported by this version "
                f"yet for INCREMENTAL_BY_TIME_RANGE; the table is partitioned by {model.kind.time_column}"
            )

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        df = self.output(ctx, interval)
        self._drop_partitions(ctx, interval, _time_type(ctx, df))
        tables.ensure_options(ctx.spark, ctx.table, _DYNAMIC)  # a static overwrite would empty the whole table
        return tables.insert(df, ctx.table, ctx.spark, overwrite=True)

    def output(self, ctx: BuildContext, interval: Interval) -> Any:
        """The query's rows for ``interval``, wrapped in the output filter."""
        query = ctx.query(interval)
        kind = ctx.model.kind
        spark_type = _time_type(ctx, ctx.dataframe(query))
        return ctx.dataframe(output_filter(query, kind.time_column, interval, spark_type, kind.time_column_format))

    def _drop_partitions(self, ctx: BuildContext, interval: Interval, spark_type: str) -> None:
        column = ctx.model.kind.time_column
        fmt = ctx.model.kind.time_column_format or DEFAULT_TIME_FORMAT
        tz = ZoneInfo(ctx.spark.conf.get("spark.sql.session.timeZone"))
        doomed = []
        for row in ctx.spark.sql(f"SHOW PARTITIONS {ctx.table_sql}").collect():
            _, _, raw = row[0].partition("=")
            value = unquote(raw)
            if value != _NULL_PARTITION and interval.start <= _instant(value, spark_type, fmt, tz) < interval.end:
                doomed.append(value)
        if doomed:
            ident = exp.to_identifier(column, quoted=True).sql("spark")
            specs = ", ".join(f"PARTITION ({ident} = {exp.Literal.string(v).sql('spark')})" for v in doomed)
            ctx.spark.sql(f"ALTER TABLE {ctx.table_sql} DROP IF EXISTS {specs}")


def _time_type(ctx: BuildContext, df: Any) -> str:
    column = ctx.model.kind.time_column
    fields = {f.name.lower(): f for f in df.schema.fields}
    field = fields.get(column.lower())
    if field is None:
        raise ModelDefinitionError(
            f"model {ctx.model.name}: time_column {column!r} is not a column of the query's output "
            f"({', '.join(df.columns)}); select it or fix time_column"
        )
    return field.dataType.simpleString()


def _instant(value: str, spark_type: str, fmt: str, tz: ZoneInfo) -> int:
    """Epoch ms of a partition value as Spark stored it."""
    if spark_type == "date":
        return to_ms(value)
    if spark_type.startswith("timestamp"):
        zone = timezone.utc if spark_type == "timestamp_ntz" else tz
        return to_ms(datetime.fromisoformat(value).replace(tzinfo=zone))
    return to_ms(datetime.strptime(value, fmt).replace(tzinfo=timezone.utc))
