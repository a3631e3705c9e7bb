"""The last word before a writer commits: whoever holds the claim on what is written may still say no.

A claim is checked when a batch starts writing, but a batch's write is a whole Spark job: a driver
stopped mid-job for longer than its lease (a long GC pause) is taken over meanwhile, and must not
publish what it computed from the table as it was. So the caller holding the claim sets a guard
(:func:`guarded`), and the writers call :func:`check` at the moment their rows become visible: just
before a generation is published, or an INSERT starts. Writers need not know about claims; outside
a guarded call (a writer used on its own) the check does nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pyspark_incr.stalls import stall

_guard: ContextVar[Callable[[str], None] | None] = ContextVar("pyspark_incr_commit_guard", default=None)


@contextmanager
def guarded(guard: Callable[[str], None]) -> Iterator[None]:
    """Within the block (this thread), :func:`check` calls ``guard(what)``, which raises to refuse the commit."""
    token = _guard.set(guard)
    try:
        yield
    finally:
        _guard.reset(token)


def check(what: str) -> None:
    """Raise if the claim this commit is made under was lost; ``what`` says what is about to be committed."""
    stall("before-publish")
    guard = _guard.get()
    if guard is not None:
        guard(what)
