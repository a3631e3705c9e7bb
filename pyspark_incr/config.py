"""Settings read from the Spark session conf, with their defaults."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

#: Schema holding the state tables.
STATE_SCHEMA = "spark.incr.stateSchema"
#: Schema holding every model version's physical table (environments are views over them).
PHYSICAL_SCHEMA = "spark.incr.physicalSchema"
#: Environment used when a procedure is called without ``env``.
DEFAULT_ENV = "spark.incr.defaultEnv"

#: How many independent models, and batches of a model, an apply or run builds at once.
CONCURRENCY = "spark.incr.concurrency"

#: Seconds a call waits for another call's claim on what it writes (the default of the ``wait`` argument).
LOCK_TIMEOUT = "spark.incr.lockTimeout"
#: Seconds a claim stays valid without renewal (renewed every quarter of it): how long the claim of a killed
#: run blocks others. 60: a killed run blocks the next one for about a minute, while a holder misses three
#: renewals in a row (a long GC pause, a slow store) before anyone may take over.
LOCK_LEASE = "spark.incr.lockLease"

#: Stop starting batches once one fails (the rest of the run is reported skipped); default false.
FAIL_FAST = "spark.incr.failFast"
#: Once apply, run or restate has finished and recorded state, raise if a batch failed (for jobs); default false.
RAISE_ON_FAILURE = "spark.incr.raiseOnFailure"
#: A state table holding this many data files is compacted by the next call that writes state.
STATE_COMPACT_FILES = "spark.incr.stateCompactFiles"
#: A refusal shows its Python traceback and Java frames too (default false: its message names the fault and fix).
ERROR_TRACES = "spark.incr.errors.stackTrace"

_DEFAULTS = {STATE_SCHEMA: "incr_state", PHYSICAL_SCHEMA: "incr_physical", DEFAULT_ENV: "prod", CONCURRENCY: "4",
             LOCK_TIMEOUT: "60", LOCK_LEASE: "60",
             STATE_COMPACT_FILES: "100", FAIL_FAST: "false", RAISE_ON_FAILURE: "false", ERROR_TRACES: "false"}


#: The session of the call running in this thread and its settings, as sent with the call (:func:`settings_of`).
_CALL: ContextVar[tuple[Any, dict[str, str]] | None] = ContextVar("incr_call_settings", default=None)


def setting(spark: Any, key: str) -> str:
    """The session's value of ``key`` or its default."""
    known = _CALL.get()
    if known is not None and known[0] is spark:
        return known[1].get(key, _DEFAULTS[key])
    return spark.conf.get(key, _DEFAULTS[key])


@contextmanager
def settings_of(spark: Any, values: dict[str, str] | None) -> Iterator[None]:
    """Within the block, :func:`setting` answers for ``spark`` from ``values`` (its ``spark.incr.*`` settings,
    sent by the JVM with the call) rather than asking the session, a round trip each. Other sessions (a model's
    own, with its session_properties) and other threads still ask.
    """
    token = _CALL.set((spark, values) if values is not None else None)
    try:
        yield
    finally:
        _CALL.reset(token)
