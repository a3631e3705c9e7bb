"""Progress of a long apply or run: one event per finished step, as it happens.

Every event is logged (logger ``pyspark_incr.run``, INFO) and handed to the
listeners subscribed in this process: the CLI draws a progress bar from them.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable

log = logging.getLogger("pyspark_incr.run")
_listeners: list[Callable[["Event"], None]] = []
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


def subscribe(listener: Callable[[Event], None]) -> Callable[[], None]:
    """Call ``listener`` for every event from now on; returns the function that unsubscribes it."""
    with _lock:
        _listeners.append(listener)

    def unsubscribe() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return unsubscribe


def publish(event: Event) -> None:
    """Log ``event`` and tell every listener; a failing listener never fails the run."""
    log.info(event.line())
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener(event)
        except Exception:  # noqa: BLE001 - progress display must not break a build
            log.exception("progress listener failed")
