"""SEED: a table loaded from a CSV file, reloaded whenever the file (or the model) changes.

The CSV is read on the driver with pyarrow, so the file only has to exist where
the procedures run, not on executors.

A reload replaces the table's content the way FULL does (a new generation
published in one catalog call, or one Delta ``INSERT OVERWRITE``), so readers
see the old rows until the new ones are complete and a failed reload leaves the
old rows in place. Only a table whose layout no longer fits the seed (columns,
types, partitioning, format) is dropped and recreated first.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.csv as pacsv
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model
from pyspark_incr.project.loader import seed_path
from pyspark_incr.sqltext import ident
from pyspark_incr.writers import formats, tables
from pyspark_incr.writers.base import BuildContext, TableWriter, register
from pyspark_incr.writers.full import replace_content

_PARSE = {"delimiter": "delimiter", "quotechar": "quote_char", "escapechar": "escape_char"}
#: The CSV line each row came from (a row per line; quoted newlines would shift it), dropped once checked.
LINE = "__incr_line"
_SAMPLES = 5


def read_seed(model: Model) -> pa.Table:
    """The seed's rows; declared ``columns`` decide the types, else pyarrow infers them."""
    path = seed_path(model)
    settings = dict(model.kind.csv_settings)
    parse = pacsv.ParseOptions(**{_PARSE[k]: v for k, v in settings.items() if k in _PARSE})
    header = settings.get("header", "true").lower() != "false"
    names = [c for c, _ in model.columns] or None
    read = pacsv.ReadOptions(column_names=None if header else names)
    # Declared columns are read as text and cast by Spark, so a bad value is reported with its line.
    convert = pacsv.ConvertOptions(strings_can_be_null=True, column_types={c: pa.string() for c in names or ()})
    try:
        rows = pacsv.read_csv(path, read_options=read, parse_options=parse, convert_options=convert)
    except (OSError, pa.ArrowInvalid) as e:
        raise ModelDefinitionError(f"model {model.name}: seed file {path} cannot be read: {e}") from None
    first = 2 if header else 1
    return rows.append_column(LINE, pa.array(range(first, first + rows.num_rows), pa.int64()))


@register
class SeedWriter(TableWriter):
    kind: ClassVar[str] = "SEED"

    def plan_batches(self, model: Model, expected: Interval, missing: IntervalSet,
                     per_partition: bool = False) -> list[Interval]:
        return []

    def prepare(self, ctx: BuildContext, interval: Interval) -> None:
        """Make the CSV's rows the table's whole content; the file is read and type-checked before anything changes.

        A table that already has the seed's layout is kept and its content replaced
        atomically; one that does not (or no table) is created first.
        """
        df = _typed(ctx.spark.createDataFrame(read_seed(ctx.model)), ctx.model)
        partition_columns = self.partition_columns(ctx.model)
        tables.ensure_schema(ctx.spark, ctx.table)
        kept = fits(ctx.spark, ctx.table, df, ctx.model, partition_columns)
        if not kept:
            tables.drop(ctx.spark, ctx.table)
            tables.create_like(ctx.spark, ctx.table, df, ctx.model, partition_columns)
        replace_content(ctx, df, partition_columns)
        if kept:  # a new table got the model's comments and properties when it was created
            self.document(ctx, interval)

    def write(self, ctx: BuildContext, interval: Interval) -> None:
        """Seeds have no intervals: prepare loads them."""


def fits(spark: Any, table: exp.Table, df: Any, model: Model, partition_columns: tuple[str, ...]) -> bool:
    """True when ``table`` exists as a table with ``df``'s columns and types, the model's partitioning and format.

    Column order is not compared: rows are written by column name, and Spark moves
    partition columns last anyway.
    """
    if not tables.exists(spark, table) or tables.is_view(spark, table):
        return False
    if formats.existing(spark, table) != formats.create_using(model):
        return False
    existing = {f.name: f.dataType for f in spark.table(table.sql("spark")).schema.fields}
    wanted = {f.name: f.dataType for f in df.schema.fields}
    partitioned = sorted(c.name for c in spark.catalog.listColumns(f"{table.db}.{table.name}") if c.isPartition)
    return existing == wanted and partitioned == sorted(partition_columns)


def _typed(df: Any, model: Model) -> Any:
    """The seed's rows with the declared column types; values that do not convert are an error naming their lines."""
    if not model.columns:
        return df.drop(LINE)
    missing = [c for c, _ in model.columns if c not in df.columns]
    if missing:
        raise ModelDefinitionError(
            f"model {model.name}: declared columns {', '.join(missing)} are not in the seed file {seed_path(model)}"
        )
    _check_types(df, model)
    return df.selectExpr(*[f"CAST({ident(c)} AS {t}) AS {ident(c)}" for c, t in model.columns])


def _check_types(df: Any, model: Model) -> None:
    from pyspark.sql import functions as F

    problems = [F.when(F.col(c).isNotNull() & F.expr(f"try_cast({ident(c)} AS {t})").isNull(), F.lit(f"{c}|{t}"))
                for c, t in model.columns]
    flagged = df.select(F.col(LINE), *[F.col(c) for c, _ in model.columns], F.concat_ws(",", *problems).alias("bad"))
    bad = flagged.where(F.col("bad") != "").orderBy(LINE).limit(_SAMPLES).collect()
    if not bad:
        return
    count = flagged.where(F.col("bad") != "").count()
    samples = []
    for row in bad:
        for item in row["bad"].split(","):
            column, _, type_ = item.partition("|")
            samples.append(f"line {row[LINE]}: {column} {row[column]!r} does not convert to {type_}")
    raise ModelDefinitionError(
        f"model {model.name}: {count} row(s) of seed file {seed_path(model)} do not match the declared column types "
        f"({'; '.join(samples)}); fix the file or the model's columns"
    )
