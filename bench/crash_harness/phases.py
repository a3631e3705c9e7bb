"""Markers a child prints around each step that writes, so the parent can tell where its kill landed.

The child wraps (in its own process only, the package's files untouched) the calls that change
something: taking locks, staging and publishing a generation, a cursor's INSERT, a state append,
a writer's batch. Each prints ``@ <monotonic s> begin|end <phase>`` at once (flushed): the last
markers the parent read before its SIGKILL say which step was open.
"""

from __future__ import annotations

import functools
import threading
import time

MARK = "@ "
_print_lock = threading.Lock()


def mark(event: str, phase: str) -> None:
    with _print_lock:
        print(f"{MARK}{time.monotonic():.3f} {event} {phase}", flush=True)


def _wrapped(fn, phase):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        name = phase(*args, **kwargs) if callable(phase) else phase
        mark("begin", name)
        try:
            return fn(*args, **kwargs)
        finally:
            mark("end", name)

    return wrapper


def instrument() -> None:
    """Wrap the writing steps of the run in this process with begin/end markers."""
    from pyspark_incr.run import locks
    from pyspark_incr.state.store import StateStore
    from pyspark_incr.writers import base, generations, tables

    locks.Locks.__enter__ = _wrapped(locks.Locks.__enter__, "lock")
    StateStore.append = _wrapped(StateStore.append, lambda self, table, rows: f"state-append:{table.name}")
    generations.stage = _wrapped(generations.stage, "stage")
    generations.extend = _wrapped(generations.extend, "stage")
    generations.publish = _wrapped(generations.publish, "publish")
    tables.insert = _wrapped(tables.insert, "insert")
    owners = {next(c for c in type(w).__mro__ if "write" in vars(c)) for w in base.WRITERS.values()}
    for owner in owners:
        owner.write = _wrapped(owner.write, lambda self, ctx, interval: f"write:{ctx.model.name}")


def phase_at(lines: list[tuple[float, str]], killed_at: float | None) -> str:
    """The phase open when the kill landed: the innermost begun and not ended step, else what came last.

    ``lines`` are the child's markers with the parent's receive time; only those before ``killed_at`` count.
    """
    open_steps: list[str] = []
    last = "planning"
    for received, line in lines:
        if killed_at is not None and received > killed_at:
            break
        _, event, phase = line[len(MARK):].split(" ", 2)
        if event == "begin":
            open_steps.append(phase)
        else:
            if phase in open_steps:
                del open_steps[len(open_steps) - 1 - open_steps[::-1].index(phase)]
            last = f"after {phase}"
    inner = [p for p in open_steps if not p.startswith("write:")] or open_steps
    return inner[-1] if inner else last
