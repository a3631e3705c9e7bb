"""Python's full cycle collections paused while a plan builds its records.

A plan of 10,000 models allocates a few hundred thousand short-lived objects (intervals, plan
records, decoded snapshots) beside the millions a process holding 10,000 parsed models keeps.
Each allocation burst sets off the cycle collector, whose full collections walk every object the
process holds: 13 of them in four plans of 10,000 models, 0.6-1.1 s of each plan's 1.2-3.4 s
(``bench/plan_scale.py``, 2026-12-06). The young generations are still collected (what a plan drops
in reference cycles is freed as before); full collections run again, as configured, once no plan is
being computed.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
#: Plans being computed now (on any thread), and the thresholds the first one found.
_active = 0
_saved: tuple[int, ...] = ()


@contextmanager
def paused() -> Iterator[None]:
    """No full collection while the block runs (or any other thread's paused block); the young generations are
    still collected, so the reference cycles a plan drops (sqlglot's trees hold them) do not pile up."""
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = gc.get_threshold()
            if len(_saved) == 3 and _saved[0]:  # a collector switched off by threshold stays off
                gc.set_threshold(_saved[0], _saved[1], _NEVER)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and gc.get_threshold()[2:] == (_NEVER,):
                gc.set_threshold(*_saved)


#: A full collection runs when the middle generation has been collected this many times: never, in a plan.
_NEVER = 2**31 - 1
