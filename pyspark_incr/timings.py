"""Where a call's time goes: named phase durations of one CALL, and the Spark SQL statements issued in each.

Off by default, and then a phase costs one module attribute check (``_active is None``) and
returns a shared do-nothing context. On when the process's environment has
``PYSPARK_INCR_PROFILE=1``, when the Spark application was started with ``spark.incr.profile=true``
(read once per SparkContext: a per-call conf lookup would be a py4j round trip on the very path
being measured), or after :func:`enable`.

While a profiled call runs, each ``with phase(name):`` records its wall time and, nested phases
included, how many statements went through ``SparkSession.sql`` in that thread and how long those
calls took (eager commands execute inside ``sql``; a query's rows are read later, by its action).
A finished call's :class:`Profile` is kept (:func:`last`, :func:`profiles`) and logged at INFO on
the ``pyspark_incr.timings`` logger. Phases record wall-clock start and end, so a reader can line
Spark's own job and query timings (status store, listener) up with them.

Calls profiled at once on several threads each keep their own profile for the phases of their
own thread; phases of worker threads (concurrent models or batches) go to the newest call's.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, TypeVar

#: The application conf (``--conf``, the session builder) that turns profiling on.
PROFILE_CONF = "spark.incr.profile"
#: The environment variable that turns profiling on for every call of the process.
PROFILE_ENV = "PYSPARK_INCR_PROFILE"

T = TypeVar("T")

_log = logging.getLogger("pyspark_incr.timings")
_NULL: ContextManager[None] = nullcontext()
#: The SparkContext attribute caching whether its application asked for profiling.
_CONF_ATTRIBUTE = "_incr_profile"
_TRUE = ("1", "true", "yes", "on")

#: The newest call being profiled, or None: the one check every phase makes when profiling is off.
_active: "Profile | None" = None
#: None: as the environment and the application conf say; True/False: :func:`enable` / :func:`disable`.
_forced: bool | None = None
_env = os.environ.get(PROFILE_ENV, "").strip().lower() in _TRUE
_local = threading.local()
_lock = threading.Lock()
_finished: deque["Profile"] = deque(maxlen=32)
_patched = False


@dataclass
class Phase:
    """One phase of a call: when it ran (epoch seconds), and the SparkSession.sql statements inside it."""

    name: str
    path: str
    thread: str
    start: float
    end: float = 0.0
    statements: int = 0
    statement_ms: float = 0.0

    @property
    def ms(self) -> float:
        """Wall time of the phase in milliseconds."""
        return (self.end - self.start) * 1000


@dataclass
class Profile:
    """The phases of one call, in the order they started (the call itself is the first)."""

    call: str
    phases: list[Phase] = field(default_factory=list)
    #: The call's own phase, once it started.
    root: Phase | None = None

    def add(self, found: Phase) -> None:
        """Record a phase (threads of concurrent batches add theirs at once)."""
        with _lock:
            self.phases.append(found)

    @property
    def ms(self) -> float:
        """Wall time of the whole call in milliseconds."""
        return self.phases[0].ms if self.phases else 0.0

    def totals(self) -> dict[str, dict[str, float]]:
        """Per phase path (``run/execute/batch``): how many times it ran, its ms and its statements, summed."""
        out: dict[str, dict[str, float]] = {}
        for p in self.phases:
            row = out.setdefault(p.path, {"count": 0, "ms": 0.0, "statements": 0, "statement_ms": 0.0})
            row["count"] += 1
            row["ms"] += p.ms
            row["statements"] += p.statements
            row["statement_ms"] += p.statement_ms
        return out

    def describe(self) -> str:
        """One line per phase path: its ms, times run and statements (what the INFO log shows)."""
        lines = [f"incr.{self.call}: {self.ms:.1f} ms"]
        for path, row in self.totals().items():
            lines.append(f"  {path}: {row['ms']:.1f} ms in {int(row['count'])}, "
                         f"{int(row['statements'])} statements {row['statement_ms']:.1f} ms")
        return "\n".join(lines)


class _Timed:
    """An open phase: on the thread's stack while it runs, recorded when it ends."""

    def __init__(self, profile: Profile, name: str) -> None:
        self.profile, self.name = profile, name

    def __enter__(self) -> Phase:
        stack = _stack()
        # a worker thread's first phase hangs under the call (its stack starts empty)
        parent = stack[-1].path if stack else (None if isinstance(self, _Call) else self.profile.call)
        path = f"{parent}/{self.name}" if parent else self.name
        self.phase = Phase(self.name, path, threading.current_thread().name, time.time())
        stack.append(self.phase)
        return self.phase

    def __exit__(self, *exc: Any) -> None:
        self.phase.end = time.time()
        stack = _stack()
        if stack and stack[-1] is self.phase:
            stack.pop()
        self.profile.add(self.phase)


class _Call(_Timed):
    """A profiled call: its profile is the thread's (and the newest call's, for worker threads)."""

    def __init__(self, name: str) -> None:
        super().__init__(Profile(name), name)

    def __enter__(self) -> Phase:
        global _active
        _patch_sql()
        self.before = getattr(_local, "profile", None), getattr(_local, "stack", None), _active
        _local.profile, _local.stack = self.profile, []
        _active = self.profile
        self.profile.root = super().__enter__()
        return self.profile.root

    def __exit__(self, *exc: Any) -> None:
        global _active
        super().__exit__(*exc)
        with _lock:
            self.profile.phases.sort(key=lambda p: p.start)
        _local.profile, _local.stack, before = self.before
        _active = before if _active is self.profile else _active
        _finished.append(self.profile)
        _log.info("%s", self.profile.describe())


class _Entered:
    """Another context manager whose entering and leaving (not its block) are timed as phases."""

    def __init__(self, name: str, inner: ContextManager[Any], left: str | None) -> None:
        self.name, self.inner, self.left = name, inner, left

    def __enter__(self) -> Any:
        with phase(self.name):
            return self.inner.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        with phase(self.left) if self.left else _NULL:
            return self.inner.__exit__(*exc)


def phase(name: str) -> ContextManager[Any]:
    """Time the block as phase ``name`` of the call being profiled (nothing when none is)."""
    if _active is None:
        return _NULL
    profile = getattr(_local, "profile", None) or _active
    return _Timed(profile, name)


def entered(name: str, inner: ContextManager[Any], left: str | None = None) -> ContextManager[Any]:
    """``inner`` itself; when a call is profiled, its entering timed as phase ``name`` (taking claims) and its
    leaving as phase ``left`` (giving them back)."""
    return inner if _active is None else _Entered(name, inner, left)


def timed(name: str, fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` itself; when a call is profiled, ``fn`` whose every call is timed as phase ``name``."""
    if _active is None:
        return fn

    def timed_fn(*args: Any, **kwargs: Any) -> T:
        with phase(name):
            return fn(*args, **kwargs)

    return timed_fn


def call(spark: Any, name: str) -> ContextManager[Any]:
    """Profile the block as call ``name`` when profiling is on for ``spark``'s application."""
    return _Call(name) if enabled(spark) else _NULL


def enabled(spark: Any = None) -> bool:
    """Whether calls are profiled: :func:`enable`/:func:`disable`, else the environment, else the app's conf."""
    if _forced is not None:
        return _forced
    if _env or spark is None:
        return _env
    try:
        sc = spark.sparkContext
    except Exception:  # noqa: BLE001 - a Spark Connect client has no SparkContext: the server's side profiles
        return False
    found = getattr(sc, _CONF_ATTRIBUTE, None)
    if found is None:
        found = str(sc.getConf().get(PROFILE_CONF, "false")).strip().lower() in _TRUE
        setattr(sc, _CONF_ATTRIBUTE, found)
    return found


def enable(on: bool | None = True) -> None:
    """Profile every call from now on (``False``: none; ``None``: as the environment and conf say)."""
    global _forced
    _forced = on


def disable() -> None:
    """Profile no call from now on (whatever the environment and conf say)."""
    enable(False)


def last() -> Profile | None:
    """The newest finished profiled call, or None."""
    return _finished[-1] if _finished else None


def profiles() -> list[Profile]:
    """The finished profiled calls kept (the newest 32), oldest first."""
    return list(_finished)


def _stack() -> list[Phase]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def _count_in_call(stack: list[Phase], spent: float) -> None:
    """A worker thread's statement counts in its call's totals too (the call's phase is on another stack)."""
    profile = getattr(_local, "profile", None) or _active
    root = profile.root if profile is not None else None
    if root is not None and stack[0] is not root:
        with _lock:
            root.statements += 1
            root.statement_ms += spent


def _patch_sql() -> None:
    """Count statements at ``SparkSession.sql`` (done once, the first time a call is profiled).

    Until then nothing of pyspark is touched; afterwards an unprofiled thread pays one attribute check.
    """
    global _patched
    with _lock:
        if _patched:
            return
        from pyspark.sql.session import SparkSession

        original = SparkSession.sql

        def sql(self: Any, *args: Any, **kwargs: Any) -> Any:
            stack = getattr(_local, "stack", None)
            if not stack:
                return original(self, *args, **kwargs)
            started = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                spent = (time.perf_counter() - started) * 1000
                for open_phase in stack:
                    open_phase.statements += 1
                    open_phase.statement_ms += spent
                _count_in_call(stack, spent)

        sql.__doc__, sql.__wrapped__ = original.__doc__, original  # type: ignore[attr-defined]
        SparkSession.sql = sql  # type: ignore[method-assign]
        _patched = True
