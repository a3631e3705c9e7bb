"""VIEW with ``materialized true``: a table of the view's rows, rebuilt only when they can have changed.

Spark has no materialized views, so the rows are stored like a FULL model's
(published atomically, see ``generations``). A new query is a new version and
rebuilds the table as any kind does; between versions the table is refreshed
only when the data it was built from changed. That data is identified by the
files the query reads (``Dataset.inputFiles`` after partition pruning): every
Spark write (an append, a generation, a Delta commit) adds files with new
names, so an unchanged set of files means unchanged rows. The digest of that
set is kept in a table property and compared when planning.

A query reading anything that is not a file-based table (JDBC, a streaming or
RDD-backed temporary view) cannot be versioned this way and is refreshed on
every run.
"""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar

from pyspark_incr import ddl
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.sqltext import literal
from pyspark_incr.writers import docs
from pyspark_incr.writers.base import BuildContext
from pyspark_incr.writers.full import FullWriter

#: Plan leaves whose rows are part of the query itself, so they never change between runs.
_CONSTANT_LEAVES = frozenset({"LocalRelation", "OneRowRelation", "Range"})


class MaterializedView(FullWriter):
    """Stores a VIEW's rows; ``ViewWriter`` hands materialized models to it."""

    kind: ClassVar[str] = "VIEW"

    def prepare(self, ctx: BuildContext, interval: Interval) -> None:
        """Create the table and fill it with the output its creation analyzed."""
        self._fill(ctx, super().prepare(ctx, interval))

    def write(self, ctx: BuildContext, interval: Interval) -> int | None:
        return self._fill(ctx, self.output(ctx, interval))

    def _fill(self, ctx: BuildContext, df: Any) -> int | None:
        version = sources_version(df)  # before writing: a source changing meanwhile makes the next run refresh
        rows = self.replace(ctx, df)
        ctx.spark.sql(ddl.set_properties(ctx.table, {docs.SOURCES_VERSION: version or ""}))
        return rows

    def stale(self, ctx: BuildContext, interval: Interval) -> str | None:
        """Why the table must be refreshed although its version is current; None when it is up to date."""
        current = sources_version(self.output(ctx, interval))
        if current is None:
            return "reads a source that is not a file-based table: refreshed on every run"
        stamped = _property(ctx, docs.SOURCES_VERSION)
        if stamped != current:
            return "the data it reads changed since it was built: refresh"
        return None


def sources_version(df: Any) -> str | None:
    """A digest of the data files ``df`` reads; None when one of its sources is not a file-based table."""
    leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves().iterator()
    while leaves.hasNext():
        leaf = leaves.next()
        kind = leaf.getClass().getSimpleName()
        if kind in _CONSTANT_LEAVES:
            continue
        if kind != "LogicalRelation" or leaf.relation().getClass().getSimpleName() != "HadoopFsRelation":
            return None
    files = "\n".join(sorted(df.inputFiles()))
    return hashlib.sha256(files.encode()).hexdigest()


def _property(ctx: BuildContext, key: str) -> str | None:
    rows = ctx.spark.sql(f"SHOW TBLPROPERTIES {ctx.table_sql} ({literal(key)})").collect()
    value = rows[0].value if rows else None
    # Spark answers a missing key with a row saying so, not with no row.
    return None if value is None or value.startswith("Table ") else value
