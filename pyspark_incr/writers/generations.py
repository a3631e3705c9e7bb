"""Atomic rewrites of Parquet tables: write a new generation beside the old one, then switch the catalog.

Parquet has no transactions, so a writer that must replace rows it also reads
(unique-key upserts, SCD type 2 history, time-range re-runs) never writes in
place. It stages the new version of the touched partitions (or of the whole
unpartitioned table) under ``<table root>/_incr_gen_<id>/`` -- a directory
Spark's file listing skips, as it skips every name starting with ``_`` -- and
then points the catalog at it in one call:

- partitioned tables: one ``alterPartitions`` over every touched partition
  (partitions the generation adds are first created pointing at an empty
  directory, which shows no rows), a single metastore transaction; a generation
  that only adds partitions is added at its place by one ``createPartitions``;
- unpartitioned tables: ``ALTER TABLE ... SET LOCATION``.

A crash before that call leaves the old version intact and an orphaned staging
directory; after it, readers see the whole new version. Superseded files are
deleted once published (a query already reading them may fail, as it would
after Spark's own INSERT OVERWRITE, but never sees a mix).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from pyspark_incr import commits, ddl
from pyspark_incr.runtime import shim_class
from pyspark_incr.sqltext import ident
from pyspark_incr.writers.partitions import NULL_PARTITION
from pyspark_incr.writers.tables import delete_dir, hadoop_path
from pyspark_incr.writers.tables import location as table_location

#: Prefix of generation directories under a table's root.
GEN_PREFIX = "_incr_gen_"
#: The directory partitions point at while they have no rows yet, or no longer.
EMPTY_DIR = "_incr_empty"


@dataclass(frozen=True)
class Staged:
    """A generation written but not yet visible: where, and which partitions it holds."""

    path: str
    partitions: tuple[tuple[tuple[str, str], ...], ...] = field(default_factory=tuple)

    def spec_dicts(self) -> list[dict[str, str]]:
        return [dict(p) for p in self.partitions]


def table_root(location: str) -> str:
    """The directory a table's generations live under: its location, or the parent of a generation.

    >>> table_root("file:/w/db.db/t")
    'file:/w/db.db/t'
    >>> table_root("file:/w/db.db/t/_incr_gen_ab12")
    'file:/w/db.db/t'
    """
    head, _, last = location.rstrip("/").rpartition("/")
    return head if last.startswith(GEN_PREFIX) else location.rstrip("/")


def stage(spark: Any, table: exp.Table, df: Any, partition_columns: tuple[str, ...], fmt: str = "parquet",
          table_schema: Any = None, root: str | None = None, df_schema: Any = None) -> Staged:
    """Write ``df`` (the table's columns, partition columns included) as a new, invisible generation.

    ``table_schema``, ``root`` (:func:`table_root`) and ``df_schema``: the table's schema and root, and
    ``df``'s schema, when the caller has them at hand (else they are looked up: a round trip each).
    """
    root = root or table_root(table_location(spark, table))
    path = f"{root}/{GEN_PREFIX}{uuid.uuid4().hex}"
    typed = in_table_types(spark, table, df, table_schema, df_schema)
    return _saved(spark, typed, fmt, "errorifexists", path, partition_columns)


def extend(spark: Any, staged: Staged, df: Any, partition_columns: tuple[str, ...], fmt: str = "parquet") -> Staged:
    """Add ``df``'s rows to a staged generation (rows the rewrite keeps from the old version)."""
    return _saved(spark, df, fmt, "append", staged.path, partition_columns)


def _saved(spark: Any, df: Any, fmt: str, mode: str, path: str, partition_columns: tuple[str, ...]) -> Staged:
    """``df`` written into ``path`` and the partitions ``path`` then holds, in one round trip (a DataFrameWriter
    takes one per option, and reading the partitions back another)."""
    specs = json.loads(shim_class(spark, "Staging").save(spark._jsparkSession, df._jdf, fmt, mode, path,
                                                         json.dumps(list(partition_columns))))
    return Staged(path, tuple(tuple(sorted(s.items())) for s in specs))


def in_table_types(spark: Any, table: exp.Table, df: Any, table_schema: Any = None, df_schema: Any = None) -> Any:
    """``df`` with each column of the table's type: files written with other types would make the table
    unreadable (Parquet keeps the type of each file), or read back as other values.

    A column whose type widens safely (INT to BIGINT, DATE to TIMESTAMP) is cast; any other difference (a
    source column that changed type, STRING where the table has INT) fails the batch, changing nothing.
    ``df_schema``: ``df``'s schema when the caller has it (asking ``df`` costs a round trip).
    """
    from pyspark.sql import functions as F

    from pyspark_incr.errors import ModelQueryError

    schema = table_schema if table_schema is not None else spark.table(table.sql("spark")).schema
    target = {f.name.lower(): f.dataType for f in schema.fields}
    fields = (df_schema if df_schema is not None else df.schema).fields
    casts = {}
    for column_field in fields:
        wanted = target.get(column_field.name.lower())
        if wanted is None or wanted.simpleString() == column_field.dataType.simpleString():
            continue
        if not _widens(spark, column_field.dataType, wanted):
            raise ModelQueryError(
                f"the query's column {column_field.name} is {column_field.dataType.simpleString().upper()} but table "
                f"{table.sql('spark')} holds {wanted.simpleString().upper()}; a source column changed type? Cast "
                f"it back in the query, or make the change breaking so the table is rebuilt, then run again")
        casts[column_field.name] = wanted
    if not casts:  # the common case, with no column objects built (a round trip each)
        return df
    return df.select(*[F.col(ident(f.name)).cast(casts[f.name]).alias(f.name) if f.name in casts
                       else F.col(ident(f.name)) for f in fields])


def _widens(spark: Any, source: Any, target: Any) -> bool:
    """Spark's own rule for a cast that loses nothing (``Cast.canUpCast``)."""
    parse = spark._jsparkSession.parseDataType
    return bool(spark._jvm.org.apache.spark.sql.catalyst.expressions.Cast.canUpCast(
        parse(source.json()), parse(target.json())))


def publish(spark: Any, table: exp.Table, staged: Staged, partition_columns: tuple[str, ...],
            emptied: list[dict[str, str]] = ()) -> None:
    """Make ``staged`` what readers see, in one catalog call; ``emptied`` partitions lose their rows with it.

    Partitions not in ``staged`` or ``emptied`` keep what they had; ``emptied`` partitions the table
    does not have are ignored.
    """
    commits.check(f"publish {table.sql('spark')}")
    if not partition_columns:
        root = staged.path.rsplit("/", 1)[0]  # stage() put it directly under the table's root
        location = table_location(spark, table)
        spark.sql(ddl.set_location(table, staged.path))
        _delete_superseded(spark, root, location)
        return
    # One py4j call: switching, dropping, refreshing and deleting through py4j cost ~0.1 s a batch.
    shim_class(spark, "Generations").publish(
        spark._jsparkSession, table.db, table.name, staged.path, json.dumps(list(partition_columns)),
        json.dumps(staged.spec_dicts()), json.dumps([dict(e) for e in emptied]))


def current_partitions(spark: Any, table: exp.Table) -> list[dict[str, str]]:
    """The table's partitions as specs (column -> value as the catalog spells it)."""
    found = shim_class(spark, "CatalogReads").partitionSpecs(spark._jsparkSession, table.db, table.name)
    return [{k: NULL_PARTITION if v is None else v for k, v in spec.items()} for spec in json.loads(found)]


def replace_all(spark: Any, table: exp.Table, df: Any, partition_columns: tuple[str, ...], fmt: str = "parquet") -> None:
    """Make ``df`` the table's whole content, atomically (partitions it does not produce are emptied)."""
    staged = stage(spark, table, df, partition_columns, fmt)
    try:
        written = set(staged.partitions)
        old = current_partitions(spark, table) if partition_columns else []
        emptied = [p for p in old if tuple(sorted(p.items())) not in written]
        publish(spark, table, staged, partition_columns, emptied)
    except BaseException:
        discard(spark, staged)
        raise


def discard(spark: Any, staged: Staged) -> None:
    """Delete a generation that will not be published (its batch failed)."""
    delete_dir(spark, staged.path)


def discard_orphans(spark: Any, table: exp.Table) -> list[str]:
    """Delete the generations under the table's root that nothing reads: what writers killed before they
    published left staged. Their names; nothing when the table does not exist.

    Only for a caller holding the table's claim: no live writer of it is staging beside.
    """
    try:
        locations = str(shim_class(spark, "CatalogReads").locations(spark._jsparkSession, table.db, table.name))
    except Exception:  # noqa: BLE001 - no such table (or no JVM catalog): no generations of it to look at
        return []
    listed = locations.splitlines()
    root = table_root(listed[0])
    read = {loc[len(root) + 1:].split("/", 1)[0] for loc in listed if loc.startswith(root + "/")}
    base = hadoop_path(spark, root)
    fs = base.getFileSystem(spark._jsc.hadoopConfiguration())
    if not fs.exists(base):
        return []
    orphans = [s.getPath() for s in fs.listStatus(base)
               if s.getPath().getName().startswith(GEN_PREFIX) and s.getPath().getName() not in read]
    for path in orphans:
        fs.delete(path, True)
    return [str(path.getName()) for path in orphans]


def _delete_superseded(spark: Any, root: str, old: str) -> None:
    """Delete an unpartitioned table's superseded version when it lies inside the table's root (ours to delete)."""
    old = old.rstrip("/")
    if old == root:  # the table's first version: its files, not the generations beside them
        base = hadoop_path(spark, root)
        fs = base.getFileSystem(spark._jsc.hadoopConfiguration())
        for status in fs.listStatus(base):
            if not status.getPath().getName().startswith("_"):
                fs.delete(status.getPath(), True)
    elif old.startswith(root + "/" + GEN_PREFIX):
        delete_dir(spark, old)
