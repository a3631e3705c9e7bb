"""Progress of a long apply or run: an event when a call or a batch starts, and one per finished step.

Every event is logged (logger ``pyspark_incr.run``; finished steps at INFO, starts
at DEBUG) and handed to the listeners subscribed in this process: the CLI draws a
progress bar from them.
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


def subscribe(listener: Callable[[Any], None]) -> Callable[[], None]:
    """Call ``listener`` for every event from now on; returns the function that unsubscribes it."""
    with _lock:
        _listeners.append(listener)

    def unsubscribe() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return unsubscribe


def publish(event: Event | Started) -> None:
    """Log ``event`` and tell every listener; a failing listener never fails the run."""
    log.log(logging.DEBUG if isinstance(event, Started) else logging.INFO, event.line())
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener(event)
        except Exception:  # noqa: BLE001 - progress display must not break a build
            log.exception("progress listener failed")
