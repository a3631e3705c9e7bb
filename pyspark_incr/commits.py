"""The last word before a writer commits: whoever holds the claim on what is written may still say no.

A claim is checked when a batch starts writing, but a batch's write is a whole Spark job: a driver
stopped mid-job for longer than its lease (a long GC pause) is taken over meanwhile, and must not
publish what it computed from the table as it was. So the caller holding the claim sets a guard
(:func:`guarded`), and the writers call :func:`check` at the moment their rows become visible: just
before a generation is published, or an INSERT starts. An INSERT computes and commits in one Spark
job, so its job commit checks the claim once more, from the JVM (``FencedCommitProtocol`` in the
shim, told which claim by :func:`claim`). Writers need not know about claims; outside a guarded
call (a writer used on its own) the checks do nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pyspark_incr.stalls import stall

_guard: ContextVar[tuple[Callable[[str], None], str | None] | None] = ContextVar(
    "pyspark_incr_commit_guard", default=None)


@contextmanager
def guarded(guard: Callable[[str], None], claim_ref: str | None = None) -> Iterator[None]:
    """Within the block (this thread), :func:`check` calls ``guard(what)``, which raises to refuse the
    commit; ``claim_ref`` names the claim for a job commit to check (its generation directory, a
    newline, its owner)."""
    token = _guard.set((guard, claim_ref))
    try:
        yield
    finally:
        _guard.reset(token)


def check(what: str) -> None:
    """Raise if the claim this commit is made under was lost; ``what`` says what is about to be committed."""
    stall("before-publish")
    current = _guard.get()
    if current is not None:
        current[0](what)


def claim() -> str | None:
    """The claim a job commit in this block must check (None outside a guarded call)."""
    current = _guard.get()
    return None if current is None else current[1]
