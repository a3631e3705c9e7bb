"""Test hook of the race trials: stall this process at a named point of the claim protocol.

A trial sets ``PYSPARK_INCR_STALL="point=ms,..."`` in an application's environment (or fills
:data:`STALLS` in a running one). While stalled, the process writes no claim marker at all, its
lease renewals included, as in a GC pause. Points: ``listed``, ``fenced``, ``created`` (inside a
claim attempt, :mod:`pyspark_incr.state.claims`), ``before-claim``, ``after-claim``,
``before-commit`` (:mod:`pyspark_incr.run.locks`), ``before-publish`` (:mod:`pyspark_incr.commits`,
mid-batch). Empty in production: a dictionary lookup per point.
"""

from __future__ import annotations

import os
import threading
import time

#: Seconds to stall at each point.
STALLS: dict[str, float] = {
    point: int(ms) / 1000 for point, _, ms in
    (item.partition("=") for item in os.environ.get("PYSPARK_INCR_STALL", "").split(",") if item)
}
#: Set while a stall lasts: lease renewals wait for it to clear.
frozen = threading.Event()


def stall(point: str) -> None:
    """Stall at ``point`` when a trial asked for it: once, the first time the process passes there."""
    seconds = STALLS.pop(point, None)
    if seconds:
        frozen.set()
        try:
            time.sleep(seconds)
        finally:
            frozen.clear()
