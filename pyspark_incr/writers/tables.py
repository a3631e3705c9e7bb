"""Catalog operations the writers share, with identifiers always quoted by sqlglot."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from pyspark_incr.model.definition import Model
from pyspark_incr.writers import docs


def exists(spark: Any, table: exp.Table) -> bool:
    return bool(spark.catalog.tableExists(f"{table.db}.{table.name}"))


def is_view(spark: Any, table: exp.Table) -> bool:
    """True when ``table`` is a view (dropping it needs DROP VIEW)."""
    jtable = spark._jsparkSession.catalog().getTable(table.db, table.name)
    return jtable.tableType().upper() == "VIEW"


def drop(spark: Any, table: exp.Table) -> None:
    """Drop a table or view if it exists."""
    if exists(spark, table):
        what = "VIEW" if is_view(spark, table) else "TABLE"
        spark.sql(f"DROP {what} IF EXISTS {table.sql('spark')}")


def ensure_schema(spark: Any, table: exp.Table) -> None:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {exp.to_identifier(table.db, quoted=True).sql('spark')}")


def create_like(spark: Any, table: exp.Table, df: Any, model: Model, partitioned_by: tuple[str, ...] = ()) -> None:
    """An empty table with ``df``'s schema, in the model's storage format, documented and with its properties."""
    columns = docs.columns_ddl(spark, df, model)
    parts = ", ".join(exp.to_identifier(c, quoted=True).sql("spark") for c in partitioned_by)
    clauses = f" PARTITIONED BY ({parts})" if parts else ""
    if model.description:
        clauses += f" COMMENT {docs.literal(model.description)}"
    clauses += docs.properties_clause(docs.table_properties(model))
    fmt = model.storage_format or "parquet"
    spark.sql(f"CREATE TABLE {table.sql('spark')} ({columns}) USING {fmt}{clauses}")


def insert(df: Any, table: exp.Table, spark: Any, overwrite: bool = False) -> None:
    """Insert ``df`` by column name into ``table`` (Spark's insertInto is positional)."""
    columns = spark.table(table.sql("spark")).columns
    df.select(*[f"`{c.replace('`', '``')}`" for c in columns]).write.insertInto(table.sql("spark"), overwrite=overwrite)
