"""Catalog operations the writers share, with identifiers always quoted by sqlglot."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterable

from sqlglot import exp

from pyspark_incr import commits, ddl, managed
from pyspark_incr.runtime import shim_class
from pyspark_incr.model.definition import Model
from pyspark_incr.sqltext import ident, literal
from pyspark_incr.writers import docs, formats


def exists(spark: Any, table: exp.Table) -> bool:
    """Whether ``table`` exists; each part quoted, so no name is misread (';' or quotes in it).

    >>> class Catalog:
    ...     def tableExists(self, name): return name == "`raw`.`x; drop table y`"
    >>> exists(type("Spark", (), {"catalog": Catalog()})(), exp.table_("x; drop table y", "raw"))
    True
    """
    return bool(spark.catalog.tableExists(".".join(ident(p.name) for p in table.parts)))


def names_in(spark: Any, schema: str) -> set[str]:
    """Lowercased names of the tables and views in ``schema`` (empty when it does not exist)."""
    found = shim_class(spark, "CatalogReads").tableNames(spark._jsparkSession, schema)
    return {name.lower() for name in found.splitlines()}


def names_in_each(spark: Any, schemas: Iterable[str]) -> dict[str, set[str]]:
    """:func:`names_in` of each of ``schemas``, in one JVM call."""
    wanted = list(dict.fromkeys(schemas))
    if any("\n" in schema or "\t" in schema for schema in wanted):  # not to be told apart in the reply's lines
        return {schema: names_in(spark, schema) for schema in wanted}
    found: dict[str, set[str]] = {schema: set() for schema in wanted}
    if not wanted:
        return found
    text = shim_class(spark, "CatalogReads").tableNamesIn(spark._jsparkSession, "\n".join(wanted))
    for line in text.split("\n"):  # not splitlines: a name may hold other line breaks (\r, \x1c ...)
        schema, tab, name = line.partition("\t")
        if tab:
            found[schema].add(name.lower())
    return found


def is_view(spark: Any, table: exp.Table) -> bool:
    """True when ``table`` is a view (dropping it needs DROP VIEW)."""
    jtable = spark._jsparkSession.catalog().getTable(table.db, table.name)
    return jtable.tableType().upper() == "VIEW"


def drop(spark: Any, table: exp.Table) -> None:
    """Drop a table or view if it exists."""
    if exists(spark, table):
        what = "VIEW" if is_view(spark, table) else "TABLE"
        spark.sql(ddl.drop(what, table))


def ensure_schema(spark: Any, table: exp.Table) -> None:
    """Create ``table``'s schema unless the current catalog has it: asked first, as ``CREATE DATABASE IF NOT
    EXISTS`` costs the embedded Derby metastore 40-60 ms when the schema is there (an apply of 1,000 new
    models asks twice a model: its table's schema and its view's), the question ~4 ms."""
    try:
        if shim_class(spark, "CatalogReads").schemaExists(spark._jsparkSession, table.db):
            return
    except Exception:  # noqa: BLE001 - no JVM at hand (Spark Connect): the statement alone decides
        pass
    spark.sql(ddl.create_schema(table.db))


def create_like(spark: Any, table: exp.Table, df: Any, model: Model, partitioned_by: tuple[str, ...] = ()) -> None:
    """An empty table with ``df``'s schema, in the model's storage format, documented and with its properties."""
    columns = docs.columns_ddl(spark, df, model)
    parts = ", ".join(ident(c) for c in partitioned_by)
    clauses = f" PARTITIONED BY ({parts})" if parts else ""
    if model.description:
        clauses += f" COMMENT {literal(model.description)}"
    clauses += docs.properties_clause(docs.table_properties(model))
    managed.create(spark, f"CREATE TABLE {table.sql('spark')} ({columns}) USING {formats.create_using(model)}{clauses}",
                   f"model {model.name}'s table {table.sql('spark')}")


def add_columns(spark: Any, table: exp.Table, columns: tuple[tuple[str, str], ...]) -> None:
    """``ALTER TABLE ... ADD COLUMNS``: rows already written read NULL in them.

    >>> from unittest.mock import MagicMock
    >>> spark = MagicMock(); add_columns(spark, exp.to_table("db.t"), (("b", "string"), ("c`d", "int")))
    >>> spark.sql.call_args[0][0]
    'ALTER TABLE db.t ADD COLUMNS (`b` STRING, `c``d` INT)'
    """
    spark.sql(ddl.add_columns(table, columns))


def counted(df: Any, column: str | None = None) -> tuple[Any, Any]:
    """``df`` counting its rows (or, given ``column``, the rows where it is not NULL) as a write consumes it
    (no second pass), and the function reading the count."""
    from pyspark.sql.classic.dataframe import DataFrame

    # two round trips here and one for the count (PySpark's Observation: fourteen and four)
    found = shim_class(df.sparkSession, "Staging").counted(df._jdf, ident(column) if column else None,
                                                            f"incr_rows_{uuid.uuid4().hex}")
    return DataFrame(found.dataset(), df.sparkSession), lambda: int(found.rows())


def insert(df: Any, table: exp.Table, spark: Any, overwrite: bool = False,
           replace_where: exp.Expression | None = None) -> int | None:
    """Insert ``df`` by column name into ``table``; the number of rows written (None if Spark does not say).

    A SQL INSERT over a temporary view, rather than ``insertInto``, because its
    command plan carries Spark's own ``numOutputRows`` metric: counting would run the query twice.
    ``replace_where`` (Delta) replaces exactly the rows matching it, in the same transaction.
    """
    discard_dead_commit(spark, table)
    columns = spark.table(table.sql("spark")).columns
    view = f"__incr_batch_{uuid.uuid4().hex}"
    df.select(*[ident(c) for c in columns]).createOrReplaceTempView(view)
    try:
        # an INSERT computes and commits in one Spark job: its job commit checks the claim once more
        commits.check(f"insert into {table.sql('spark')}")
        with _commit_checked(spark, commits.claim()):
            return _rows_written(spark.sql(insert_sql(table, view, overwrite, replace_where)))
    finally:
        spark.catalog.dropTempView(view)


#: Spark's own commit protocol, and ours: the same, with the claim checked first at job commit.
SPARK_COMMIT_PROTOCOL = "org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol"
FENCED_COMMIT_PROTOCOL = "pysparkincr.FencedCommitProtocol"
_COMMIT_PROTOCOL = "spark.sql.sources.commitProtocolClass"
_CLAIM_PROPERTY = "pyspark_incr.claim"


@contextmanager
def _commit_checked(spark: Any, claim_ref: str | None) -> Iterator[None]:
    """Within the block, this thread's INSERT checks ``claim_ref`` at its job commit.

    The session's commit protocol becomes ours only where it was Spark's default (ours behaves
    exactly as Spark's for every other write); a protocol of the user's own (an object store's
    committer) is left alone, and the claim is then checked just before the INSERT only.
    """
    if claim_ref is None:
        yield
        return
    if spark.conf.get(_COMMIT_PROTOCOL, SPARK_COMMIT_PROTOCOL) == SPARK_COMMIT_PROTOCOL:
        spark.conf.set(_COMMIT_PROTOCOL, FENCED_COMMIT_PROTOCOL)
    context = spark.sparkContext
    context.setLocalProperty(_CLAIM_PROPERTY, claim_ref)
    try:
        yield
    finally:
        context.setLocalProperty(_CLAIM_PROPERTY, None)


def forget_cached(spark: Any, table: exp.Table | str) -> None:
    """Make this session list ``table``'s files again on its next read, as REFRESH TABLE does, without
    resolving it (a table that does not exist is fine)."""
    parsed = table if isinstance(table, exp.Table) else exp.to_table(table, dialect="spark")
    try:
        shim_class(spark, "StateFiles").invalidate(spark._jsparkSession, parsed.db or "default", parsed.name)
    except Exception:  # noqa: BLE001 - no JVM catalog at hand (Spark Connect): Spark's own refresh is all there is
        pass


def discard_dead_commit(spark: Any, table: exp.Table) -> None:
    """Delete the ``_temporary`` directory a killed INSERT left in the table's directory.

    Hadoop's FileOutputCommitter stages each task's files under ``<table>/_temporary/0/``, and a job's
    commit moves into the table every committed task directory it finds there: its own and a dead job's
    alike. An INSERT killed after some of its tasks committed leaves theirs behind, and the next INSERT
    would publish them with its own rows (the crash harness saw a cursor model append rows twice). One
    writer per table runs at a time (locks), so whatever is there belongs to a dead job.
    """
    try:
        temporary = location(spark, table).rstrip("/") + "/_temporary"
    except Exception:  # noqa: BLE001 - no JVM catalog (Spark Connect) or no location: nothing we can see
        return
    delete_dir(spark, temporary)


def location(spark: Any, table: exp.Table) -> str:
    """The table's directory as the catalog records it (one JVM call)."""
    return str(shim_class(spark, "CatalogReads").location(spark._jsparkSession, table.db, table.name))


@dataclass(frozen=True)
class Described:
    """What the catalog says of a table, from one metastore query: what a build asks before it writes."""

    #: Its format, lowercased (``parquet``, ``hive``, ``delta``); None when the catalog records none.
    provider: str | None
    #: The schema a read of it shows, as Spark's JSON (``schema``); trusted only for formats the
    #: metastore holds the schema of (:data:`CATALOG_SCHEMAS`): Delta keeps its own.
    schema_json: str
    #: Its directory, as :func:`location` spells it.
    location: str

    @cached_property
    def schema(self) -> Any:
        """The read schema as a ``StructType``."""
        from pyspark.sql.types import StructType

        return StructType.fromJson(json.loads(self.schema_json))


#: Providers whose schema the metastore itself keeps (so :class:`Described` may answer for a read).
CATALOG_SCHEMAS = frozenset({"parquet", "hive"})


def described(spark: Any, table: exp.Table) -> Described | None:
    """The catalog's :class:`Described` of ``table`` (one JVM call), None when it does not exist."""
    return described_each(spark, [table]).get(catalog_key(table))


def described_each(spark: Any, tables: list[exp.Table]) -> dict[tuple[str, str], Described]:
    """The catalog's :class:`Described` of each of ``tables`` that exists, by :func:`catalog_key`: a JVM call and
    two metastore queries per schema, whatever the number of tables (none for no tables)."""
    names_by_schema: dict[str, list[str]] = {}
    for table in tables:
        names_by_schema.setdefault(table.db, []).append(table.name)
    found: dict[tuple[str, str], Described] = {}
    reads = shim_class(spark, "CatalogReads") if names_by_schema else None
    for schema, names in names_by_schema.items():
        reply = json.loads(str(reads.describe(spark._jsparkSession, schema, "\n".join(names))))
        for name, entry in reply.items():  # keyed by the catalog's spelling of the name
            found[(schema.lower(), name.lower())] = Described(entry.get("provider"), entry["schema"], entry["location"])
    return found


def catalog_key(table: exp.Table) -> tuple[str, str]:
    """How the catalog tells tables apart: schema and name, case-insensitively (as Hive keeps them)."""
    return table.db.lower(), table.name.lower()


def hadoop_path(spark: Any, location: str) -> Any:
    """A Hadoop ``Path`` for ``location`` in ``spark``'s JVM."""
    return spark._jvm.org.apache.hadoop.fs.Path(location)


def delete_dir(spark: Any, location: str) -> None:
    """Delete ``location`` and everything under it, on whichever FileSystem it lives (nothing when it is not there)."""
    path = hadoop_path(spark, location)
    path.getFileSystem(spark._jsc.hadoopConfiguration()).delete(path, True)


def insert_sql(table: exp.Table, view: str, overwrite: bool = False, replace_where: exp.Expression | None = None) -> str:
    """The INSERT statement reading every column of ``view``.

    >>> insert_sql(exp.to_table("db.t"), "v", replace_where=exp.condition("ds >= '2024-01-01'"))
    "INSERT INTO db.t REPLACE WHERE ds >= '2024-01-01' SELECT * FROM `v`"
    """
    source = exp.select("*").from_(exp.Table(this=exp.to_identifier(view, quoted=True)))
    statement = exp.Insert(this=table.copy(), expression=source, overwrite=overwrite)
    if replace_where is not None:
        statement.set("where", replace_where.copy())
    return statement.sql("spark")


def _rows_written(result: Any) -> int | None:
    try:
        plan = result._jdf.queryExecution().executedPlan().commandPhysicalPlan()
        for _ in range(3):  # adaptive execution wraps the write command when the query shuffles
            metrics = plan.metrics()
            if metrics.contains("numOutputRows"):
                return int(metrics.apply("numOutputRows").value())
            plan = plan.finalPhysicalPlan()
    except Exception:  # noqa: BLE001 - a metric is a nicety; its absence must not fail a written batch
        return None
    return None
