"""What a writer gets to build one model version, and the writer registry.

A writer materializes one kind. ``prepare`` makes the physical object exist for
the current version (recreating it for a new version); ``write`` builds one
batch interval. The executor never looks at the kind itself.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Iterator, Protocol

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError, ModelQueryError
from pyspark_incr.intervals.batching import batches
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import Model
from pyspark_incr.model.render import render_query
from pyspark_incr.safety.pushdown import Pushdown
from pyspark_incr.model import python_model  # Python models
from pyspark_incr.model import statements as model_statements
from pyspark_incr.writers import docs, formats, generations, python_rows, tables


@dataclass(frozen=True)
class BuildContext:
    """One model version in one environment, ready to be built."""

    spark: Any
    model: Model
    table: exp.Table
    execution_ms: int
    #: Other models' names mapped to the tables this environment reads them from.
    table_map: dict[str, exp.Table] = field(default_factory=dict)
    #: EMBEDDED models' queries, inlined where they are read.
    embedded: dict[str, str] = field(default_factory=dict)
    #: True when the physical table holds another version (or is gone) and must be recreated.
    rebuild: bool = False
    #: After a forward-only change: the query's output as the kept table takes it, (column, type to cast to).
    conform: tuple[tuple[str, str | None], ...] = ()
    #: Timeseries sources read only over the run window widened by their bound (time-sliced kinds).
    pushdown: tuple[Pushdown, ...] = ()
    #: The catalog entries of the tables the call writes, by ``tables.catalog_key``: one dict shared by a call's
    #: builds, filled at the call's start (``Executor``) and by each build that reads its own; a build takes
    #: its table's from there, and a child its parent's (its time column's type, for the pushdown), instead
    #: of asking the metastore and analysing the table again.
    described_by_call: dict[tuple[str, str], tables.Described] = field(default_factory=dict)

    @property
    def table_sql(self) -> str:
        return self.table.sql("spark")

    @cached_property
    def table_format(self) -> str:
        """The format writes use (``formats.chosen``): looked up once per model and call, not per batch."""
        if self.rebuild:
            return formats.chosen(self.model, None)
        found = self._described()
        return formats.chosen(self.model, None if found is None else found.provider)

    @property
    def table_schema(self) -> Any:
        """The table's Spark schema, looked up once per model and call (each lookup is a metastore call and an
        analysis); again each time when the model has pre/post-statements, which could alter the table."""
        found = self._described()
        if found is not None and found.provider in tables.CATALOG_SCHEMAS:
            return found.schema
        if self.has_statements:
            return self.spark.table(self.table_sql).schema
        return self._read_schema

    @cached_property
    def _read_schema(self) -> Any:
        """The schema a read shows, for tables whose format keeps its own (Delta)."""
        return self.spark.table(self.table_sql).schema

    @property
    def table_root(self) -> str:
        """The directory the table's generations live under (``generations.table_root``), which no publish
        moves; cached like :attr:`table_schema`."""
        found = self._described()
        location = found.location if found is not None else tables.location(self.spark, self.table)
        return generations.table_root(location)

    def _described(self) -> tables.Described | None:
        """What the catalog says of the table (its format, schema and directory in one metastore query): read at
        the call's start or once by the build, once the table exists; each time when the model has
        pre/post-statements."""
        if self.has_statements:
            return tables.described(self.spark, self.table)
        key = tables.catalog_key(self.table)
        found = self.described_by_call.get(key)
        if found is None:
            found = tables.described(self.spark, self.table)
            if found is not None:  # a table not created yet is asked again once it is
                self.described_by_call[key] = found
        return found

    def query(self, interval: Interval, macros: dict[str, exp.Expression] | None = None) -> exp.Query:
        """The model query rendered for ``interval`` in this environment (``macros``: a kind's own macro values),
        conformed to the kept table after a forward-only change."""
        if python_model.is_python(self.model):  # Python models: execute()'s rows for the interval
            query = python_rows.query(self, interval)
        else:
            query = render_query(
                self.model.query, interval, self.execution_ms, where=f"model {self.model.name}",
                table_map=self.table_map, this_table=self.table, embedded=self.embedded, macros=macros,
                pushdown=self.source_filters(interval), context=self.model.context,
            )
        return conformed(query, self.conform) if self.conform else query

    @cached_property
    def memo(self) -> dict[Any, Any]:
        """What a writer works out once per model and call and keeps for its next step (the record is frozen)."""
        return {}

    @property
    def has_statements(self) -> bool:
        """True when the model runs pre/post-statements, which may change what a query or the table shows."""
        return bool(self.model.pre_statements or self.model.post_statements)

    @cached_property
    def python_views(self) -> dict[tuple[int, int], str]:
        """A Python model's temporary views by interval (:mod:`pyspark_incr.writers.python_rows`)."""
        return {}

    def source_filters(self, interval: Interval) -> dict[str, exp.Expression]:
        """Each pushed-down source's filter for a run over ``interval``.

        A source whose time column type cannot hold the bounds (or whose table cannot be read yet)
        gets none: it is read whole, which is slower but never wrong.
        """
        out = {}
        for p in self.pushdown:
            spark_type = self._source_types.get(p.source.name)
            if spark_type is None:
                continue
            try:
                out[p.source.name] = p.condition(interval, spark_type)
            except ModelDefinitionError:
                continue
        return out

    @cached_property
    def _source_types(self) -> dict[str, str]:
        """The Spark type of each pushed-down source's time column, read once per build."""
        types = {}
        for p in self.pushdown:
            table = self.table_map.get(p.source.name) or exp.to_table(p.source.name)
            try:
                fields = {f.name.lower(): f for f in self._schema_of(table).fields}
            except Exception:  # noqa: BLE001 - a parent not built yet: no filter, the query's analysis says why
                continue
            if p.source.column.lower() in fields:
                types[p.source.name] = fields[p.source.column.lower()].dataType.simpleString()
        return types

    def _schema_of(self, table: exp.Table) -> Any:
        """A source's read schema: from the call's entry of it when the call writes it (a model without
        pre/post-statements, whose table nothing else alters while the call holds its claim), else read."""
        entry = self.described_by_call.get(tables.catalog_key(table))
        if entry is not None and entry.provider in tables.CATALOG_SCHEMAS:
            return entry.schema
        return self.spark.table(table.sql("spark")).schema

    @contextmanager
    def statements_around(self, interval: Interval | None) -> Iterator[None]:
        """Run the model's pre-statements, the body, then its post-statements (not after a failed body), on this
        build's session: for a batch over ``interval``, or (None) around the creation of the table, which
        SQLMesh's runtime stage calls ``creating`` and renders with the epoch day."""
        self._run_statements(self.model.pre_statements, "pre-statement", interval)
        yield
        self._run_statements(self.model.post_statements, "post-statement", interval)

    def statement_sql(self, statement: model_statements.Statement, interval: Interval | None) -> str | None:
        """A pre/post-statement as Spark SQL for a batch over ``interval`` (None: for the table's creation); None
        when its ``@IF`` guard is false there."""
        stage = model_statements.EVALUATING if interval is not None else model_statements.CREATING
        return model_statements.render(
            statement, interval or model_statements.CREATION_INTERVAL, self.execution_ms, stage,
            where=f"model {self.model.name}", table_map=self.table_map, this_table=self.table,
            context=self.model.context)

    def _run_statements(self, statements: tuple, what: str, interval: Interval | None) -> None:
        for statement in statements:
            sql = self.statement_sql(statement, interval)
            if sql is None:
                continue
            try:
                self.spark.sql(sql)
            except Exception as e:  # noqa: BLE001 - Spark raises many types; all mean the statement failed
                stage = "creating the table" if interval is None else f"batch {interval}"
                raise ModelQueryError(f"model {self.model.name}: {what} {statement.shown!r} failed ({stage}): "
                                      f"{first_line(e)}") from e

    def dataframe(self, query: exp.Expression) -> Any:
        """A DataFrame of ``query``; Spark's analysis errors name the model."""
        try:
            return self.spark.sql(query.sql("spark"))
        except Exception as e:  # noqa: BLE001 - Spark raises many types; all mean the query is wrong
            raise ModelQueryError(f"model {self.model.name}: Spark cannot run the query: {first_line(e)}") from e


def conformed(query: exp.Query, columns: tuple[tuple[str, str | None], ...]) -> exp.Select:
    """``query`` with exactly ``columns``: cast where a type is given, a typed NULL where the query lacks one.

    >>> print(conformed(sqlglot.parse_one("SELECT a, c FROM t"), (("a", "int"), ("c", None), ("b", "string"))).sql("spark"))
    SELECT CAST(`q`.`a` AS INT) AS `a`, `q`.`c` AS `c`, CAST(NULL AS STRING) AS `b` FROM (SELECT a, c FROM t) AS q
    """
    present = {c.lower() for c in query.named_selects}
    items = []
    for name, type_ in columns:
        value = exp.column(name, table="q", quoted=True) if name.lower() in present else exp.null()
        if type_ is not None:
            value = exp.cast(value, exp.DataType.build(type_, dialect="spark"))
        items.append(exp.alias_(value, name, quoted=True))
    return exp.select(*items).from_(query.subquery("q", copy=True))


class Writer(Protocol):
    """Materializes one model kind."""

    kind: ClassVar[str]

    def plan_batches(self, model: Model, expected: Interval, missing: IntervalSet,
                     per_partition: bool = False) -> list[Interval]:
        """The jobs that build ``missing`` (within the model's ``expected`` range); one interval each if ``per_partition``."""

    def prepare(self, ctx: BuildContext, interval: Interval) -> None:
        """Make the physical object exist for this version (recreate it for a new one)."""

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        """Build one batch (the interval's rows become exactly the query's output for it); rows written."""

    def check(self, model: Model) -> None:
        """Raise when this version cannot build the model's layout (format, partitioning)."""

    def document(self, ctx: BuildContext, interval: Interval) -> None:
        """Apply a metadata-only change (comments, tags) to the existing object."""

    def stale(self, ctx: BuildContext, interval: Interval) -> str | None:
        """For kinds without intervals: why the current version's object must be rebuilt now (None: it is not)."""


#: Storage formats Spark writes without extra packages.
STORAGE_FORMATS = ("parquet", "orc")


class TableWriter:
    """What the writers of stored tables share: which layouts they can build, and documenting the table."""

    kind: ClassVar[str] = ""

    def plan_batches(self, model: Model, expected: Interval, missing: IntervalSet,
                     per_partition: bool = False) -> list[Interval]:
        """One job per ``batch_size`` units of each missing range (the whole range without one), or per unit."""
        return batches(missing, model.schedule.unit, 1 if per_partition else getattr(model.kind, "batch_size", None))

    def partition_columns(self, model: Model) -> tuple[str, ...]:
        """Columns the table is partitioned by."""
        return model.partitioned_by

    def output(self, ctx: "BuildContext", interval: Interval) -> Any:
        """The rows the model holds for ``interval``, as a DataFrame."""
        return ctx.dataframe(ctx.query(interval))

    def prepare(self, ctx: "BuildContext", interval: Interval) -> Any:
        """(Re)create the table with the output's schema when the version is new or the table is gone (whatever
        object stood there, view or table, is dropped); the output DataFrame, for a writer that fills it now."""
        df = self.output(ctx, interval)
        tables.ensure_schema(ctx.spark, ctx.table)
        if ctx.rebuild:
            tables.drop(ctx.spark, ctx.table)
        elif tables.exists(ctx.spark, ctx.table):
            return df
        tables.create_like(ctx.spark, ctx.table, df, ctx.model, self.partition_columns(ctx.model))
        return df

    def check(self, model: Model) -> None:
        """Refuse, before anything changes, a layout this version cannot build (formats: see ``formats.check``)."""
        where = f"model {model.name}"
        if model.storage_format and model.storage_format.lower() not in STORAGE_FORMATS:
            raise ModelDefinitionError(
                f"{where}: storage_format {model.storage_format!r} is not one of {', '.join(STORAGE_FORMATS)}"
            )
        if model.clustered_by:
            raise ModelDefinitionError(
                f"{where}: clustered_by needs a Delta or Iceberg table (clustering), which this version cannot "
                "build yet; remove clustered_by"
            )
        for column in model.partitioned_by:
            if not exp.to_identifier(column).name or not _is_column(column):
                raise ModelDefinitionError(
                    f"{where}: partitioned_by {column!r} is an expression; Parquet tables partition by columns only"
                )
        # The Hive metastore filters partitions by a text filter it cannot parse with other names in it.
        odd = [c for c in self.partition_columns(model) if not re.fullmatch(r"[A-Za-z0-9_]+", c)]
        if odd:
            raise ModelDefinitionError(
                f"{where}: partition column {odd[0]!r} may only hold ASCII letters, digits and underscores (the "
                "Hive metastore cannot filter partitions by other names); rename it, or partition by another "
                "column with partitioned_by"
            )

    def stale(self, ctx: "BuildContext", interval: Interval) -> str | None:
        """A stored table of the current version is rebuilt only when its intervals say so."""
        return None

    def audited_rows(self, ctx: "BuildContext", interval: Interval) -> exp.Expression:
        """The rows a batch of ``interval`` wrote, for its audits: the whole table unless a writer knows better."""
        return ctx.table.copy()

    def document(self, ctx: "BuildContext", interval: Interval) -> None:
        """Update the table's comments and properties after a metadata-only change."""
        docs.update_table(ctx.spark, ctx.table, ctx.model, set(self.partition_columns(ctx.model)))


def _is_column(sql: str) -> bool:
    return isinstance(sqlglot.parse_one(sql, read="spark"), exp.Column)


WRITERS: dict[str, Writer] = {}


def register(cls: type) -> type:
    """Class decorator: make ``cls`` the writer of its ``kind``."""
    WRITERS[cls.kind] = cls()
    return cls


def writer_for(model: Model) -> Writer:
    return WRITERS[model.kind.name]


def first_line(e: Exception) -> str:
    """The first line of a (Spark) error message, without the JVM stack trace.

    A JVM error pyspark does not translate (a failed job, a missing file, an
    OutOfMemoryError) only says "An error occurred while calling o123.save": its
    message is that of the exception that caused it, deepest first.

    >>> first_line(ValueError("bad value\\n  at somewhere"))
    'bad value'
    """
    text = (_jvm_cause(e) or str(getattr(e, "desc", None) or e)).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _jvm_cause(e: Exception) -> str | None:
    """The message of the deepest cause of a Py4JJavaError's Java exception (None for other errors)."""
    cause = getattr(e, "java_exception", None)
    message = None
    try:
        for _ in range(16):  # a cause chain is short; never follow a cycle
            if cause is None:
                break
            text = cause.getMessage()
            if text:
                message = text if text.lstrip().startswith("[") else f"{cause.getClass().getSimpleName()}: {text}"
            cause = cause.getCause()
    except Exception:  # noqa: BLE001 - the JVM is gone (a crash): the Python message must do
        pass
    return message
