"""Progress of a long apply or run: an event when a call or a batch starts, and one per finished step.

Every step the call's total counts ends in an event: a reported step (:class:`Event`), or,
for steps that will never run, a :class:`Settled` (the batches after a failed one, a model
with nothing to do), so the last event of a call that returns has ``done == total``.
Every event is logged (logger ``pyspark_incr.run``; finished and skipped steps at INFO,
starts and models with nothing to do at DEBUG) and handed to the listeners subscribed in
this process: the CLI draws a progress bar from them.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable

log = logging.getLogger("pyspark_incr.run")
_listeners: list[Callable[[Any], None]] = []
_lock = threading.Lock()


@dataclass(frozen=True)
class Event:
    """Step ``done`` of ``total`` finished with ``result`` (an executor BatchResult)."""

    done: int
    total: int
    result: Any

    def line(self) -> str:
        r = self.result
        span = f" {r.interval}" if r.interval else ""
        rows = f", {r.rows} rows" if r.rows is not None else ""
        message = f": {r.message}" if r.message else ""
        return f"[{self.done}/{self.total}] {r.model} {r.action}{span} {r.status}{rows} in {r.seconds:.2f}s{message}"


@dataclass(frozen=True)
class Started:
    """A call with ``total`` steps began (``model`` None), or a batch of ``model`` over ``interval`` began,
    with ``done`` steps finished so far. Lets a display show the work in progress, not only the last done."""

    done: int
    total: int
    model: str | None = None
    interval: Any = None

    def line(self) -> str:
        what = f"{self.model} {self.interval}" if self.model else "call"
        return f"[{self.done}/{self.total}] {what} started"


@dataclass(frozen=True)
class Settled:
    """``steps`` steps of ``model`` that will never run are counted done, bringing the call to ``done`` of
    ``total``: ``status`` is ``skipped`` (after a failure) or ``up to date`` (nothing to do)."""

    done: int
    total: int
    model: str
    steps: int
    status: str

    def line(self) -> str:
        return f"[{self.done}/{self.total}] {self.model} {self.status} ({self.steps} step{'s' * (self.steps != 1)})"


class Steps:
    """How many of a call's steps are done: each model's count, and their sum kept as it changes (summed over every
    model after each model, a run of 1,000 was quadratic). Not locked: its owner holds a lock around each use."""

    def __init__(self, per_model: dict[str, int]) -> None:
        self._of = per_model
        self.total = sum(per_model.values())
        self.done = 0
        self._counted: dict[str, int] = {}

    def settle(self, model: str) -> int:
        """Count every step of ``model`` done; how many that added (steps it will never report)."""
        left = self._of[model] - self._counted.get(model, 0)
        self._count(model, self._of[model])
        return left

    def step(self, model: str) -> None:
        """Count one more step of ``model`` done (never more than it has; a model the call does not know: none)."""
        if model in self._of:
            self._count(model, min(self._of[model], self._counted.get(model, 0) + 1))

    def _count(self, model: str, steps: int) -> None:
        self.done += steps - self._counted.get(model, 0)
        self._counted[model] = steps


def subscribe(listener: Callable[[Any], None]) -> Callable[[], None]:
    """Call ``listener`` for every event from now on; returns the function that unsubscribes it."""
    with _lock:
        _listeners.append(listener)

    def unsubscribe() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return unsubscribe


def publish(event: Event | Started | Settled) -> None:
    """Log ``event`` and tell every listener; a failing listener never fails the run."""
    quiet = isinstance(event, Started) or (isinstance(event, Settled) and event.status != "skipped")
    level = logging.DEBUG if quiet else logging.INFO
    if log.isEnabledFor(level):  # a line a model, most of them never logged: written only when they are
        log.log(level, event.line())
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener(event)
        except Exception:  # noqa: BLE001 - progress display must not break a build
            log.exception("progress listener failed")
