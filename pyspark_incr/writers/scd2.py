"""SCD type 2 (by time and by column): each run merges the source's current rows into the history.

A run reads the whole source (a snapshot), compares it with the table's open
rows and changes only the keys that changed: their open row closes, their new
version is added, deleted keys close (see :mod:`scd2_sql` for the semantics).
Batches follow SQLMesh's scheduler: a run builds one batch covering whatever is
missing, and the batch's execution time is the run's.

Two strategies, chosen by the table's format (``formats.chosen``: the model's ``table_format``
for a new table, the catalog's for an existing one):

- Parquet (default): Spark cannot update Parquet files, nor overwrite a table it
  reads, so the new version of the table -- or, when partitioned, of only the
  partitions the changes touch -- is staged as a new generation and published in
  one catalog call (:mod:`generations`). Untouched partitions keep their files; a
  failure before the publish leaves the previous version whole. A run that
  changes nothing leaves the table's files as they were.
- Delta: one ``MERGE INTO`` that closes and inserts exactly the changed keys.
"""

from __future__ import annotations

from functools import reduce
from typing import Any, ClassVar

from pyspark import StorageLevel
from pyspark.sql import functions as F
from sqlglot import exp

from pyspark_incr import ddl
from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals.batching import covering
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model
from pyspark_incr.sqltext import ident
from pyspark_incr.writers import formats, generations, partitions, scd2_spec, scd2_sql, tables
from pyspark_incr.writers.base import BuildContext, TableWriter, register

@register
class Scd2ByTimeWriter(TableWriter):
    kind: ClassVar[str] = "SCD_TYPE_2_BY_TIME"

    def plan_batches(self, model: Model, expected: Interval, missing: IntervalSet,
                     per_partition: bool = False) -> list[Interval]:
        """One batch covering everything missing: every batch would merge the same snapshot.

        >>> from pyspark_incr.intervals import to_ms
        >>> day = lambda a, b: Interval(to_ms(a), to_ms(b))
        >>> missing = IntervalSet([day("2024-01-01", "2024-01-03"), day("2024-01-05", "2024-01-06")])
        >>> [str(b) for b in Scd2ByTimeWriter().plan_batches(None, day("2024-01-01", "2024-01-06"), missing, True)]
        ['[2024-01-01, 2024-01-06)']
        """
        return covering(missing)

    def check(self, model: Model) -> None:
        super().check(model)
        if model.kind.time_data_type.upper() not in scd2_spec.TIME_TYPES:
            raise ModelDefinitionError(
                f"model {model.name}: time_data_type {model.kind.time_data_type} is not one of "
                f"{', '.join(scd2_spec.TIME_TYPES)}")

    def spec(self, ctx: BuildContext, interval: Interval) -> tuple[scd2_spec.Scd2Spec, exp.Query]:
        """The model's SCD spec for its query's columns, and the query rendered for ``interval``.

        The query is analysed once per call (creating the table and writing it render the same text), unless
        the model has pre/post-statements, which may change what it reads in between.
        """
        query = ctx.query(interval)
        key = ("scd2 spec", query.sql("spark"))
        spec = ctx.memo.get(key)
        if spec is None:
            analysed = ctx.dataframe(query)
            spec = scd2_spec.Scd2Spec.of(ctx.model, analysed.columns, dict(analysed.dtypes))
            if not ctx.has_statements:
                ctx.memo[key] = spec
        return spec, query

    def output(self, ctx: BuildContext, interval: Interval) -> Any:
        """The table's shape: the query's columns (``updated_at`` as the time type), valid_from, valid_to."""
        spec, query = self.spec(ctx, interval)
        return ctx.dataframe(scd2_sql.table_shape(spec, query))

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        """Merge the source's current rows into the history; the number of rows closed and added."""
        spec, query = self.spec(ctx, interval)
        empty = _empty(ctx)
        parts = self.partition_columns(ctx.model)
        if ctx.table_format != formats.DELTA and not parts and not empty:
            return _rewrite_table(ctx, scd2_sql.next_version_query(spec, query, ctx.table, ctx.execution_ms))
        changes = scd2_sql.changes_query(spec, query, ctx.table, ctx.execution_ms, initial_load=empty)
        if ctx.table_format == formats.DELTA:
            return _merge(ctx, spec, changes)
        # on a first load the changes are the whole table
        return _rewrite(ctx, spec, changes, parts) if parts else _rewrite_table(ctx, changes)


@register
class Scd2Writer(Scd2ByTimeWriter):
    """``SCD_TYPE_2`` is SQLMesh's short name for SCD_TYPE_2_BY_TIME."""

    kind: ClassVar[str] = "SCD_TYPE_2"


@register
class Scd2ByColumnWriter(Scd2ByTimeWriter):
    kind: ClassVar[str] = "SCD_TYPE_2_BY_COLUMN"


def _empty(ctx: BuildContext) -> bool:
    """Whether the table holds no row: known without a query for the first write into a table this call created
    (a Spark job saved on every first load), unless pre/post-statements ran, which may have written into it."""
    first = not ctx.memo.get("scd2 written")
    ctx.memo["scd2 written"] = True
    if ctx.rebuild and first and not ctx.has_statements:
        return True
    return not ctx.spark.sql(ddl.any_row(ctx.table)).collect()


def _merge(ctx: BuildContext, spec: scd2_spec.Scd2Spec, changes: exp.Query) -> int | None:
    """Delta: one MERGE; Delta reports the rows it updated and inserted."""
    rows = ctx.spark.sql(scd2_sql.merge_statement(spec, ctx.table, changes).sql("spark")).collect()
    metrics = rows[0].asDict() if rows else {}
    return int(metrics["num_affected_rows"]) if "num_affected_rows" in metrics else None


def _rewrite(ctx: BuildContext, spec: scd2_spec.Scd2Spec, changes: exp.Query, parts: tuple[str, ...]) -> int:
    """Parquet, partitioned: stage the new version of the partitions the changes touch and publish it atomically.

    Their new version is their old rows, minus the open rows of the keys that close, plus the changes.
    """
    spark = ctx.spark
    table = spark.table(ctx.table_sql)
    # Computed once: counted, scanned for the partitions it touches, then written.
    changed = ctx.dataframe(changes).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        written = changed.count()
        if not written:
            return 0  # nothing changed: the table keeps its files
        closing = changed.filter(F.col(scd2_sql.ACTION) == scd2_sql.CLOSE)
        touched = _touched(changed, closing, parts, spec)
        old = table.filter(F.expr(partitions.partition_filter([dict(p) for p in touched], parts).sql("spark")))
        staged = generations.stage(spark, ctx.table, _next_version(old, changed, spec), parts, formats.storage(ctx.model))
        try:
            emptied = [dict(p) for p in touched - set(staged.partitions)]
            generations.publish(spark, ctx.table, staged, parts, emptied)
        except BaseException:
            generations.discard(spark, staged)
            raise
        return written
    finally:
        changed.unpersist()


def _rewrite_table(ctx: BuildContext, next_version: exp.Query) -> int:
    """Parquet, unpartitioned: the table's next version (rows flagged by action) staged in one Spark job and
    published; the rows closed and added, counted as the write consumes them.

    A run that changed nothing drops what it staged, so the table keeps its files.
    """
    spark = ctx.spark
    staged = None
    try:
        schema = ctx.table_schema  # asked of the catalog once per call, with the table's root
        version, rows = tables.counted(ctx.dataframe(next_version), scd2_sql.ACTION)
        staged = generations.stage(spark, ctx.table, version.select(*[ident(c) for c in schema.fieldNames()]), (),
                                   formats.storage(ctx.model), table_schema=schema, root=ctx.table_root)
        written = rows()
        if written:
            generations.publish(spark, ctx.table, staged, ())
            return written
        generations.discard(spark, staged)
        return 0
    except BaseException:
        if staged is not None:
            generations.discard(spark, staged)
        raise


def _next_version(old: Any, changed: Any, spec: scd2_spec.Scd2Spec) -> Any:
    """``old`` without the open rows of the keys ``changed`` closes, plus the changes."""
    columns = [ident(c) for c in old.columns]
    closing = changed.filter(F.col(scd2_sql.ACTION) == scd2_sql.CLOSE)
    keys = closing.select(*[F.col(ident(k)).alias(f"__incr_k{i}") for i, k in enumerate(spec.unique_key)])
    replaced = reduce(lambda a, b: a & b, [old[ident(k)].eqNullSafe(keys[f"__incr_k{i}"])
                                            for i, k in enumerate(spec.unique_key)])
    kept = old.join(keys, old[ident(spec.valid_to)].isNull() & replaced, "left_anti").select(*columns)
    return kept.unionByName(changed.select(*columns))


def _touched(changed: Any, closing: Any, parts: tuple[str, ...], spec: scd2_spec.Scd2Spec) -> set[tuple]:
    """Partitions the changes write to and those the closed open rows lie in, spelled as the catalog spells them.

    A closed row leaves its partition only when the table is partitioned by valid_to: its open
    version sat in the NULL partition.
    """
    written = changed.select(*[partitions.spelled(c) for c in parts])
    left = closing.select(*[F.lit(partitions.NULL_PARTITION).alias(c) if c.lower() == spec.valid_to.lower()
                            else partitions.spelled(c) for c in parts])
    rows = written.union(left).distinct().collect()
    return {tuple(sorted((c, row[c]) for c in parts)) for row in rows}
