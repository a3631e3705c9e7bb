"""The round trips into the JVM a block of code makes: what the hot path's tests bound and bench/breakdown.py times.

Every Python-side call into Spark (a method of a JVM object, a field, a class lookup) is one py4j command
sent over the driver's socket and answered before Python goes on; on a warm path they, not Spark's work,
are most of what a call with nothing to build costs. :func:`recorded` notes each command any thread sends
while the block runs, with its method, thread and time. It replaces py4j's ``send_command`` for the whole
process while it runs: for tests and benchmarks, not for a production call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: How py4j's command to release a garbage-collected proxy starts: sent whenever Python's gc runs, so not the
#: measured code's doing.
_RELEASE = "m\nd\n"


@dataclass(frozen=True)
class Trip:
    """One py4j command and its answer."""

    #: The JVM method called (``c`` commands), else the command's letter in parentheses (``(r)``: a lookup).
    method: str
    ms: float
    #: ``threading.get_ident()`` of the thread that sent it.
    thread: int


def _method(command: str) -> str:
    parts = command.split("\n", 3)
    return parts[2] if parts[0] == "c" and len(parts) > 2 else f"({parts[0]})"


@contextmanager
def recorded() -> Iterator[list[Trip]]:
    """Yield a list that collects a :class:`Trip` per py4j command sent, on any thread, inside the block
    (proxies' releases left out). Blocks of this kind must not overlap."""
    from py4j.clientserver import ClientServerConnection

    sent: list[Trip] = []
    send = ClientServerConnection.send_command

    def timed(connection, command, *args, **kwargs):
        started = time.perf_counter()
        try:
            return send(connection, command, *args, **kwargs)
        finally:
            if not command.startswith(_RELEASE):
                sent.append(Trip(_method(command), (time.perf_counter() - started) * 1000, threading.get_ident()))

    ClientServerConnection.send_command = timed
    try:
        yield sent
    finally:
        ClientServerConnection.send_command = send
