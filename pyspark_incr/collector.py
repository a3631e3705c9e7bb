"""Python's cycle collector paused while a plan builds its records.

A plan of 10,000 models allocates a few hundred thousand short-lived objects (intervals, plan
records, decoded snapshots) beside the millions a process holding 10,000 parsed models keeps.
Each allocation burst sets off the cycle collector, whose full collections walk every object the
process holds: 13 of them in four plans of 10,000 models, 0.6-1.1 s of each plan's 1.2-3.4 s
(``bench/plan_scale.py``, 2026-12-06). Reference counting still frees what a plan drops; the
collector runs again, as configured, once no plan is being computed.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
#: Plans being computed now (on any thread), and whether the collector was on when the first began.
_active = 0
_resume = False


@contextmanager
def paused() -> Iterator[None]:
    """Keep the cycle collector off while the block runs (and any other thread's paused block); as it was after."""
    global _active, _resume
    with _lock:
        if _active == 0:
            _resume = gc.isenabled()
            gc.disable()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _resume:
                gc.enable()
