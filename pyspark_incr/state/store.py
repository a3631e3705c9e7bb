"""Typed access to the state tables of one Spark session.

Each procedure call builds one :class:`StateStore` and reads each table at most
once (Arrow); writes are appends of whole row batches.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from pyspark_incr import ddl, managed
from pyspark_incr.runtime import runtime, shim_class
from pyspark_incr.config import STATE_SCHEMA, setting
from pyspark_incr.errors import LocationTaken, StateError
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.state import files
from pyspark_incr.state import built
from pyspark_incr.state import snapshot as snapshots
from pyspark_incr.state import tables as t
from pyspark_incr.state.entries import EnvEntry, held  # noqa: F401 - EnvEntry re-exported: callers import it here

APPEND_PREFIX = files.APPEND_PREFIX


class StateStore:
    """The state of one Spark session's catalog, in schema ``spark.incr.stateSchema``."""

    def __init__(self, spark: Any, schema: str | None = None) -> None:
        self.spark = spark
        self.runtime = runtime(spark)
        self.schema = schema or setting(spark, STATE_SCHEMA)
        self._cache: dict[str, pa.Table] = {}
        #: The files (:func:`files_version`) each table was read from.
        self._versions: dict[str, frozenset[str]] = {}

    def ensure(self) -> None:
        """Create the state schema and tables once per Spark application."""
        if self.schema in self.runtime.ensured:
            return
        existing = _described(self.spark, self.schema, t.ALL_TABLES)
        created = [table for table, columns in existing.items() if columns is None]
        if created:
            self.spark.sql(ddl.create_schema(self.schema))
            self._refuse_occupied(created)
        for table, columns in existing.items():
            if columns is None:
                self.create(table)
            else:
                self._upgrade(table, columns)
        if created:  # where the new tables live, in one catalog call (else one per table at its first read)
            _described_by_shim(self.spark, self.schema, created)
        self.runtime.ensured.add(self.schema)

    def _refuse_occupied(self, missing: list[t.StateTable]) -> None:
        """Before creating any state table: fail, creating none, when files lie where one would be."""
        taken = managed.occupied(self.spark, self.schema, [table.name for table in missing])
        if taken:
            verb = "hold" if len(taken) > 1 else "holds"
            raise LocationTaken(f"Cannot create the state tables of schema {self.schema}: {', '.join(taken)} "
                                f"already {verb} files {managed.WHY_AND_FIX}, or point spark.incr.stateSchema at "
                                "another schema.")

    def create(self, table: t.StateTable) -> None:
        """Create ``table`` in the state schema unless it exists."""
        managed.create(self.spark, table.ddl(self.schema), f"state table {table.qualified(self.schema)}")

    def _upgrade(self, table: t.StateTable, existing: list[str]) -> None:
        """Add the columns a table created by an older version lacks (another process may just have)."""
        try:
            ddl = table.upgrade(self.schema, existing)
            if ddl is not None:
                self.spark.sql(ddl)
        except Exception as e:  # noqa: BLE001 - fine when the columns are there now, whoever added them
            now = _columns(self.spark, self.schema, table.name)
            if now is None or table.upgrade(self.schema, now) is not None:
                raise StateError(
                    f"state table {table.qualified(self.schema)} cannot be upgraded to this version's columns "
                    f"({e}); point spark.incr.stateSchema at a fresh schema"
                ) from e

    def read(self, table: t.StateTable) -> pa.Table:
        """The table's rows: read once per call, and reused across calls while its files are unchanged."""
        if table.name not in self._cache:
            try:
                self._read(table)
            except StateError:
                # The schema was dropped since this application created it (a user starting over):
                # create it again, as on first use, rather than failing every call until a restart.
                if self.spark.catalog.tableExists(table.qualified(self.schema)):
                    raise
                self.runtime.forget(self.schema)
                self._read(table)
        return self._cache[table.name]

    def _read(self, table: t.StateTable) -> None:
        self.ensure()
        name = table.qualified(self.schema)
        try:
            root = table_root(self.spark, self.schema, table.name)
            if root is None:  # no JVM catalog at hand (Spark Connect): Spark reads it
                self.spark.catalog.refreshTable(name)
                self._cache[table.name] = self.spark.table(name).toArrow()
                return
            listed = files.listing(self.spark, root)
            if listed is None:
                raise StateError(f"the directory of {name} ({root}) is missing")
            self._cache[table.name] = file_cache(self.spark, self.schema, table).rows(self.spark, root, listed)
            self._versions[table.name] = listed
            if "seq" in table.schema.names and self._cache[table.name].num_rows:
                t.observe_seq(pc.max(self._cache[table.name]["seq"]).as_py())
        except Exception as e:  # noqa: BLE001 - any read failure is a state problem for the user
            raise StateError(
                f"state table {name} cannot be read ({e}); "
                "check the catalog, or point spark.incr.stateSchema at a fresh schema"
            ) from e

    def read_version(self, table: t.StateTable) -> frozenset[str] | None:
        """The names of the files this store read ``table`` from (None when it has not read them)."""
        return self._versions.get(table.name) if table.name in self._cache else None

    def append(self, table: t.StateTable, rows: Iterable[dict[str, Any]]) -> None:
        rows = list(rows)
        if not rows:
            return
        self.ensure()
        now = datetime.now(timezone.utc)
        names = set(table.schema.names)
        for row in rows:
            if "seq" in names:
                row.setdefault("seq", t.next_seq())
            if "at" in names:
                row.setdefault("at", now)
            judgement = row.pop("judgement", None)
            if table is t.ENVIRONMENTS and row.get("op") == "apply" and row.get("snapshot") is None:
                row["snapshot"] = snapshots.snapshot_for(
                    row["definition"], row.get("model_source") or "registry", row.get("context") or "", judgement)
        write_rows(self.spark, table, self.schema, t.to_arrow(table, rows))
        self._cache.pop(table.name, None)

    # -- registry -----------------------------------------------------------

    def registry(self) -> dict[str, str]:
        """Registered definitions by model name (latest create, minus drops)."""
        current: dict[str, str | None] = {}
        for row in _in_seq(self.read(t.MODELS)):
            current[row["name"]] = row["definition"] if row["op"] == "create" else None
        return {k: v for k, v in current.items() if v is not None}

    # -- environments -------------------------------------------------------

    def environment(self, env: str) -> dict[str, EnvEntry]:
        """The model versions ``env`` holds now."""
        return dict(self._folded(t.ENVIRONMENTS, ("held", env), lambda rows: held(rows, env).get(env, {})))

    def env_version(self, env: str) -> int:
        """The ``seq`` of ``env``'s latest state row (0 when it has none): it changes with every apply to it."""
        rows = self.read(t.ENVIRONMENTS)
        if not rows.num_rows:
            return 0
        latest = pc.max(rows.filter(pc.equal(rows["env"], env))["seq"]).as_py()
        return latest or 0

    def environments(self) -> dict[str, dict[str, EnvEntry]]:
        """Every environment holding at least one model, with the model versions it holds now."""
        return {env: models for env, models in sorted(held(self.read(t.ENVIRONMENTS)).items()) if models}

    # -- intervals ----------------------------------------------------------

    def coverage(self) -> dict[str, IntervalSet]:
        """Built intervals per physical table: each table's rows folded in ``seq`` order.

        A physical table holds one model version, so its intervals are its own whichever
        environment built them.
        """
        return dict(self._folded(t.INTERVALS, "coverage", built.coverage_of, built.grown_coverage).tables)

    def _folded(self, table: t.StateTable, what: Any, fold: Any, grow: Any = None) -> Any:
        """``fold(rows of table)``, folded once for as long as the table's files stay the same (across calls),
        and grown by ``grow`` (see :meth:`FileCache.derived`) when files only appeared."""
        return file_cache(self.spark, self.schema, table).derived(self.read(table), what, fold, grow)

    def built_by(self, run_id: str) -> dict[str, IntervalSet]:
        """Intervals each model had recorded built by one run (its 'add' rows), whatever came after."""
        table = self.read(t.INTERVALS)
        if not table.num_rows:
            return {}
        rows = table.filter(pc.and_(pc.equal(table["run_id"], run_id), pc.equal(table["op"], "add")))
        found: dict[str, list[Interval]] = {}
        for model, start, end in zip(*(rows[c].to_pylist() for c in ("model", "start_ms", "end_ms"))):
            found.setdefault(model, []).append(Interval(start, end))
        return {model: IntervalSet(intervals) for model, intervals in found.items()}


def write_rows(spark: Any, table: t.StateTable, schema: str, rows: pa.Table) -> None:
    """Append ``rows`` to a state table as ONE file, moved in whole by a rename: an append is atomic.

    Not ``insertInto``: Spark would split the rows over a file per slice (a crash between two
    renames leaves half an append -- half a promotion, half a set of lock claims -- read as truth),
    and it commits through the table's shared ``_temporary`` directory, where a killed append's
    committed tasks wait to be published by the next append, and where two applications
    appending at once move (and delete) each other's files. Each append is staged in a
    directory of its own (``_incr_append_<id>``, hidden from readers), which a crash leaves
    behind at worst (compaction deletes it later).
    """
    root = table_root(spark, schema, table.name)
    if root is None:  # no JVM catalog at hand (Spark Connect): Spark's own append is all there is
        spark.createDataFrame(rows).coalesce(1).write.insertInto(table.qualified(schema))
        return
    name = files.append(spark, root, rows)
    file_cache(spark, schema, table).wrote(name, rows)
    files.invalidate(spark, schema, table.name)


def file_cache(spark: Any, schema: str, table: t.StateTable) -> files.FileCache:
    """This application's cache of ``table``'s file rows."""
    caches = runtime(spark).state_files
    cache = caches.get((schema, table.name))
    if cache is None:
        cache = caches.setdefault((schema, table.name), files.FileCache(table.schema))
    return cache


def table_location(spark: Any, schema: str, name: str) -> Any:
    """The Hadoop path of table ``schema.name``'s directory; None when there is no JVM catalog at hand.

    Asked of the metastore once per application (or made from the text :meth:`StateStore.ensure`
    kept): a state table does not move.
    """
    locations = runtime(spark).locations
    if (schema, name) not in locations:
        try:
            jvm = spark._jvm
            root = runtime(spark).roots.get((schema, name))
            if root is None:
                ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(name, jvm.scala.Some(schema))
                root = spark._jsparkSession.sessionState().catalog().getTableMetadata(ident).location()
            locations[(schema, name)] = jvm.org.apache.hadoop.fs.Path(root)
        except Exception:  # noqa: BLE001 - Spark Connect, or no such table (yet): ask again next time
            return None
    return locations[(schema, name)]


def table_root(spark: Any, schema: str, name: str) -> str | None:
    """:func:`table_location` as text, kept beside it (None when there is no JVM catalog at hand)."""
    roots = runtime(spark).roots
    found = roots.get((schema, name))
    if found is None:
        path = table_location(spark, schema, name)
        if path is None:
            return None
        found = roots.setdefault((schema, name), path.toString())
    return found


def files_version(spark: Any, schema: str, name: str) -> frozenset[str] | None:
    """The names of a state table's files now; None when they cannot be asked.

    State tables only change by files appearing (appends, compaction's folded file) and
    disappearing (compaction), so an unchanged listing means unchanged rows, whichever process
    wrote last. Asking costs one call into the JVM however many files there are.
    """
    try:
        root = table_root(spark, schema, name)
        listed = files.listing(spark, root) if root is not None else None
    except Exception:  # noqa: BLE001 - without a version the caller simply reads the table
        listed = None
    if listed is None:
        runtime(spark).locations.pop((schema, name), None)
        runtime(spark).roots.pop((schema, name), None)
        return None
    return listed


def _described(spark: Any, schema: str, tables: Iterable[t.StateTable]) -> dict[t.StateTable, list[str] | None]:
    """Each table's columns (None when it does not exist), asked of the catalog in one call.

    The call also says where each table lives, kept as :func:`table_root` would: a cold
    application's first call would otherwise ask the metastore again for each table it reads.
    """
    tables = list(tables)
    found = _described_by_shim(spark, schema, tables)
    if found is None:  # no JVM at hand (Spark Connect): each table through the public API
        return {table: _columns(spark, schema, table.name) for table in tables}
    return {table: found.get(table.name, {}).get("columns") for table in tables}


def _described_by_shim(spark: Any, schema: str, tables: list[t.StateTable]) -> dict[str, dict[str, Any]] | None:
    """The shim's description of each existing table by name, its root kept for :func:`table_root`; None when
    there is no JVM at hand (where no root is kept either)."""
    try:
        found = json.loads(str(shim_class(spark, "CatalogReads").describe(
            spark._jsparkSession, schema, "\n".join(table.name for table in tables))))
    except Exception:  # noqa: BLE001 - no JVM at hand (Spark Connect)
        return None
    roots = runtime(spark).roots
    for name, described in found.items():
        roots.setdefault((schema, name.lower()), described["root"])
    return found


def _columns(spark: Any, schema: str, name: str) -> list[str] | None:
    """The columns of table ``schema.name``, None when it does not exist."""
    try:
        jvm = spark._jvm
        catalog = spark._jsparkSession.sessionState().catalog()
        ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(name, jvm.scala.Some(schema))
        if not catalog.tableExists(ident):
            return None
        return list(catalog.getTableMetadata(ident).schema().fieldNames())
    except Exception:  # noqa: BLE001 - no JVM catalog at hand (Spark Connect): ask through the public API
        qualified = exp.table_(name, db=schema, quoted=True).sql("spark")
        return spark.table(qualified).columns if spark.catalog.tableExists(qualified) else None


def _in_seq(table: pa.Table) -> list[dict[str, Any]]:
    return table.sort_by("seq").to_pylist() if table.num_rows else []


class StateIfAny(StateStore):
    """The state as it is, read as empty while its schema does not exist: procedures that only look
    (incr.explain, incr.lineage) must not create it."""

    def read(self, table: t.StateTable) -> pa.Table:
        if table.name not in self._cache and not self.spark.catalog.databaseExists(self.schema):
            self._cache[table.name] = table.schema.empty_table()
        return super().read(table)
