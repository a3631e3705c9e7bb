"""INCREMENTAL_BY_UNIQUE_KEY: each batch upserts the query's rows for its interval by ``unique_key``.

A matched key's row is decided by ``when_matched`` (default: the source row
replaces it), ``merge_filter`` limits which target rows may match, a new key's
row is inserted, and keys absent from the batch keep their rows. Two rows with
one key in a batch fail the batch before anything is written. The semantics are
those of one ``MERGE`` (``merge_sql``); the strategy depends on the table format:

The format is the table's (``formats.chosen``):

- Parquet/ORC (``ParquetUpsert``): Spark cannot overwrite a Parquet table it
  reads, so a batch computes the new version of only the partitions it touches
  (those of its rows and of the table's rows sharing a key), stages it as a
  generation and publishes it in one catalog call (``generations``). Other
  partitions keep their files; an unpartitioned table is restaged whole.
- Delta (``DeltaMerge``): the MERGE statement itself, which Delta commits atomically.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, ClassVar

from pyspark.sql import functions as F
from sqlglot import exp

from pyspark_incr.errors import DuplicateKeyError, ModelDefinitionError, ModelQueryError
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.model.definition import Model
from pyspark_incr.model.render import render_query
from pyspark_incr.writers import formats, generations, merge_frames, merge_sql, partitions
from pyspark_incr.sqltext import ident
from pyspark_incr.writers.base import BuildContext, TableWriter, first_line, register


@register
class UniqueKeyWriter(TableWriter):
    kind: ClassVar[str] = "INCREMENTAL_BY_UNIQUE_KEY"

    def check(self, model: Model) -> None:
        super().check(model)
        merge_sql.check_whens(merge_sql.parse_whens(model.kind.when_matched), f"model {model.name}")

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        return strategy_for(ctx).write(ctx, interval)


def strategy_for(ctx: BuildContext) -> "ParquetUpsert | DeltaMerge":
    """MERGE where the table is Delta, the generation rewrite otherwise.

    The format is the model's ``table_format`` for a table being (re)created, the
    catalog's for an existing one (``formats.chosen``).
    """
    delta = ctx.table_format == formats.DELTA
    return DeltaMerge() if delta else ParquetUpsert()


class DeltaMerge:
    """Delta tables: one ``MERGE INTO`` per batch."""

    def statement(self, ctx: BuildContext, interval: Interval) -> exp.Merge:
        """The batch's MERGE (needs no Spark: the fixtures in tests/fixtures/unique_key_sql check it)."""
        whens, merge_filter = clauses(ctx, interval)
        return merge_sql.merge(ctx.table, ctx.query(interval), ctx.model.kind.unique_key, whens, merge_filter)

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        statement = self.statement(ctx, interval)
        source = ctx.dataframe(statement.args["using"].this)
        # Delta only refuses duplicates that match a target row; unmatched ones would both be inserted.
        rows = unique_rows(ctx, source, ctx.model.kind.unique_key, interval)
        if rows:
            ctx.spark.sql(statement.sql("spark"))
        return rows


class ParquetUpsert:
    """Tables without MERGE: rewrite the touched partitions as a generation, publish it atomically."""

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        where = f"model {ctx.model.name}"
        table = ctx.spark.table(ctx.table_sql)
        columns = table.columns
        keys = resolve(ctx.model.kind.unique_key, columns, "unique_key", where)
        whens, merge_filter = clauses(ctx, interval)
        unknown = sorted(merge_sql.assigned_columns(whens) - {c.lower() for c in columns})
        if unknown:
            raise ModelDefinitionError(f"{where}: when_matched sets {', '.join(unknown)}, which the table does not "
                                       f"have ({', '.join(columns)})")
        source = _select(ctx, ctx.dataframe(ctx.query(interval)), columns).persist()
        try:
            rows = unique_rows(ctx, source, keys, interval)
            if rows:
                self._publish(ctx, source, table, keys, columns, whens, merge_filter)
            return rows
        finally:
            source.unpersist()

    def _publish(self, ctx: BuildContext, source: Any, table: Any, keys: tuple[str, ...], columns: list[str],
                 whens: list[exp.When], merge_filter: exp.Expression | None) -> None:
        parts = partition_columns(ctx.spark, ctx.table)
        fmt = formats.storage(ctx.model)
        touched = merge_frames.touched_partitions(source, table, keys, parts) if parts else []
        # A when_matched assignment to a partition column can send a row to a partition that was
        # not read; publishing it would drop that partition's other rows. Read it too and restage.
        for _ in range(3):
            target = table.where(F.expr(partitions.partition_filter(touched, parts).sql("spark"))) if parts else table
            try:
                rows = merge_frames.merged(source, target, keys, columns, whens, merge_filter)
            except Exception as e:  # noqa: BLE001 - Spark's analysis errors: a clause names a wrong column
                raise ModelDefinitionError(f"model {ctx.model.name}: Spark cannot apply when_matched / "
                                           f"merge_filter: {first_line(e)}") from e
            staged = generations.stage(ctx.spark, ctx.table, rows, parts, fmt)
            try:
                read = {partitions.spec_key(s) for s in touched}
                outside = [s for s in staged.spec_dicts() if partitions.spec_key(s) not in read]
                if not outside:
                    written = {partitions.spec_key(s) for s in staged.spec_dicts()}
                    emptied = [s for s in touched if partitions.spec_key(s) not in written]
                    generations.publish(ctx.spark, ctx.table, staged, parts, emptied)
                    return
            except BaseException:
                generations.discard(ctx.spark, staged)
                raise
            generations.discard(ctx.spark, staged)
            touched = touched + outside
        raise ModelQueryError(f"model {ctx.model.name}: the merged rows keep landing in partitions not read")


def clauses(ctx: BuildContext, interval: Interval) -> tuple[list[exp.When], exp.Expression | None]:
    """``when_matched`` and ``merge_filter`` with macros rendered for ``interval`` (as in the query).

    Both go through ``render_query`` inside one MERGE text, so ``@start_ds``,
    ``@this_model`` and other models' names resolve exactly as in the model's query.
    """
    kind = ctx.model.kind
    whens = merge_sql.parse_whens(kind.when_matched)
    text = (f"MERGE INTO {merge_sql.TARGET} USING {merge_sql.SOURCE} ON {kind.merge_filter or 'TRUE'} "
            + " ".join(w.sql("spark") for w in whens))
    rendered = render_query(text, interval, ctx.execution_ms, where=f"model {ctx.model.name} (when_matched/merge_filter)",
                            table_map=ctx.table_map, this_table=ctx.table, embedded=ctx.embedded)
    merge_filter = rendered.args["on"] if kind.merge_filter else None
    return list(rendered.args["whens"].expressions), merge_filter


def unique_rows(ctx: BuildContext, source: Any, keys: tuple[str, ...], interval: Interval) -> int:
    """The batch's row count; raises ``DuplicateKeyError`` naming a key that appears twice.

    One pass: rows per key, then their sum and the most frequent non-NULL key (a key
    with a NULL never matches, as in MERGE, so its rows are not duplicates of each other).
    """
    key_cols = [F.col(ident(k)) for k in keys]
    per_key = source.groupBy(*key_cols).agg(F.count(F.lit(1)).alias("__incr_n"))
    complete = F.lit(True)
    for c in keys:
        complete = complete & F.col(ident(c)).isNotNull()
    repeats = F.when(complete, F.col("__incr_n")).otherwise(F.lit(0))
    row = per_key.agg(F.sum("__incr_n").alias("rows"), F.max(repeats).alias("most"),
                      F.max_by(F.struct(*key_cols), repeats).alias("key")).first()
    if row is None or row["rows"] is None:
        return 0
    if row["most"] > 1:
        sample = ", ".join(f"{k}={_shown(v)}" for k, v in zip(keys, row["key"]))
        raise DuplicateKeyError(
            f"model {ctx.model.name}: unique_key ({', '.join(keys)}) is not unique in the batch {interval}: "
            f"key ({sample}) appears {row['most']} times; nothing was written, fix the query so each key has one row"
        )
    return int(row["rows"])


def resolve(names: tuple[str, ...], columns: list[str], what: str, where: str) -> tuple[str, ...]:
    """``names`` spelled as the table spells them (Spark matches columns case-insensitively).

    >>> resolve(("ID",), ["id", "name"], "unique_key", "model m")
    ('id',)
    >>> resolve(("idx",), ["id", "name"], "unique_key", "model m")
    Traceback (most recent call last):
    ...
    pyspark_incr.errors.ModelDefinitionError: model m: unique_key column idx is not a column of the model's output (id, name)
    """
    by_lower = {c.lower(): c for c in columns}
    out = []
    for name in names:
        if name.lower() not in by_lower:
            raise ModelDefinitionError(f"{where}: {what} column {name} is not a column of the model's output "
                                       f"({', '.join(columns)})")
        out.append(by_lower[name.lower()])
    return tuple(out)


def partition_columns(spark: Any, table: exp.Table) -> tuple[str, ...]:
    """The table's partition columns as the catalog names them (generations match its spelling)."""
    return tuple(c.name for c in spark.catalog.listColumns(f"{table.db}.{table.name}") if c.isPartition)


def _select(ctx: BuildContext, df: Any, columns: list[str]) -> Any:
    try:
        return df.select(*[ident(c) for c in columns])
    except Exception as e:  # noqa: BLE001 - the query no longer produces a column of the table
        raise ModelQueryError(f"model {ctx.model.name}: the query's output does not fit the table "
                              f"({', '.join(columns)}): {first_line(e)}") from e


def _shown(value: Any) -> str:
    """A key value as a SQL literal would spell it."""
    if value is None:
        return "NULL"
    if isinstance(value, (str, date, datetime)):
        return "'" + str(value).replace("'", "''") + "'"
    return str(value)
