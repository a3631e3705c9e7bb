"""Running a plan under the locks of what it writes, so two calls never apply the same work twice.

A plan is made without locks (a call with nothing to write takes none). When it writes, the
call locks every physical table it writes and, when it changes what an environment shows, that
environment; then it plans again if state moved while it waited (the previous holder built what
this call was about to build), and executes the fresh plan.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from pyspark_incr.errors import LockTimeout
from pyspark_incr.plan.planner import METADATA, REMOVED, Plan
from pyspark_incr.run.executor import BatchResult, Executor
from pyspark_incr.run.locks import Locks, owner_id, table_key
from pyspark_incr.state import compact
from pyspark_incr.state import tables as t
from pyspark_incr.state.store import StateStore, files_version

_ATTEMPTS = 3


def execute(spark: Any, store: StateStore, plan: Plan, make_plan: Callable[[], Plan], procedure: str,
            concurrency: int = 1, fail_fast: bool = False) -> list[BatchResult]:
    """Lock what ``plan`` writes, plan again with ``make_plan`` if state changed meanwhile, execute."""
    keys = written(plan)
    for _ in range(_ATTEMPTS):
        if not keys:
            return Executor(spark, store, plan, procedure, concurrency, fail_fast=fail_fast).execute()
        marker = _state_marker(spark, store.schema)
        run_id = uuid.uuid4().hex
        with Locks(spark, store.schema, owner_id(run_id), procedure).held(keys):
            now = _state_marker(spark, store.schema)
            if now != marker or None in now:
                plan = make_plan()
            if written(plan) <= keys:
                results = Executor(spark, store, plan, procedure, concurrency, run_id=run_id,
                                   fail_fast=fail_fast).execute()
                break
        keys = keys | written(plan)  # the fresh plan writes more: take those locks too, in order
    else:
        raise LockTimeout(f"incr.{procedure}: what this call writes kept changing while it waited for locks "
                          f"({', '.join(sorted(keys))}); run it again")
    compact.after_call(spark, store.schema)  # after the release: its own lock rows count too
    return results


def written(plan: Plan) -> set[str]:
    """Lock keys of what executing ``plan`` changes: physical tables it writes, environments it repoints."""
    keys = set()
    for mp in plan.models:
        writes = mp.batches or mp.rebuild or mp.change == METADATA or mp.schema_change is not None
        if writes and mp.builds_object and mp.table_name:
            keys.add(table_key(mp.table_name))
        if mp.change == REMOVED or mp.promotes or mp.records_entry:
            keys.add(f"environment {plan.env}")
    return keys


def _state_marker(spark: Any, schema: str) -> tuple:
    """What changes when another call records intervals or environment rows (their files, listed)."""
    return tuple(files_version(spark, schema, table.name) for table in (t.INTERVALS, t.ENVIRONMENTS))
