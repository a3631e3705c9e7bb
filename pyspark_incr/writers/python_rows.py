"""A Python model's rows for one batch, as a query the writers wrap like a SQL model's.

``execute()`` runs once per batch interval and build context: its DataFrame becomes a temporary view
with a unique name, and the query selects the declared columns from it. A writer that asks twice for
one interval (``prepare`` creating the table with the first batch, then writing that batch) gets the
same view, so ``execute`` is not run again. The views are dropped with their build context.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from typing import Any

from sqlglot import exp

from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.model import python_run

_lock = threading.Lock()


def query(ctx: Any, interval: Interval) -> exp.Select:
    """``SELECT <declared columns> FROM <view of execute()'s rows for interval>`` for the build context ``ctx``."""
    views = ctx.python_views
    key = (interval.start, interval.end)
    with _lock:
        name = views.get(key)
    if name is None:
        df = python_run.rows(ctx.model, ctx.spark, ctx.table_map, interval.start, interval.end, ctx.execution_ms)
        name = f"__incr_python_{uuid.uuid4().hex}"
        df.createOrReplaceTempView(name)
        weakref.finalize(ctx, _drop, ctx.spark, name).atexit = False  # the session may be gone by then
        with _lock:
            views[key] = name
    columns = [exp.column(c, quoted=True) for c, _ in ctx.model.columns]
    return exp.select(*columns).from_(exp.table_(name, quoted=True))


def _drop(spark: Any, name: str) -> None:
    try:
        spark.catalog.dropTempView(name)
    except Exception:  # noqa: BLE001 - a stopped session holds no views
        pass
