"""Locks on what a call writes: one writer per physical table (and per environment's views) at a time.

Within one Spark application -- threads, sessions of one Thrift or Connect server, which share one
Python worker -- a process-wide mutex per key gives mutual exclusion. The state table ``locks``
shows the holder to every process and carries a lease: the holder renews it while it works
(every third of the lease), so the lock of a run killed outright expires after the lease and is
taken over. Across Spark applications the catalog rows are the only arbiter: a claim is kept only
when no earlier live claim of another owner is seen after appending it (append, then read back).

A waiting call gives up after ``spark.incr.lockTimeout`` seconds with an error naming the holder.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pyspark_incr.config import LOCK_LEASE, LOCK_TIMEOUT, setting
from pyspark_incr.errors import LockTimeout
from pyspark_incr.state import tables as t
from pyspark_incr.state.store import StateStore

_POLL_SECONDS = 0.5
_mutexes: dict[tuple[str, str], threading.Lock] = {}
_mutexes_lock = threading.Lock()


@dataclass(frozen=True)
class Claim:
    """A live lock row: who holds ``key`` and until when its lease runs."""

    key: str
    owner: str
    procedure: str
    seq: int
    lease_until_ms: int

    def describe(self) -> str:
        until = datetime.fromtimestamp(self.lease_until_ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"{self.owner} (incr.{self.procedure}; lease until {until})"


def table_key(table_name: str) -> str:
    """The lock key of a physical table, whoever names it (the catalog lists names lowercased).

    >>> table_key("`Incr_Physical`.`shop__daily__0123456789`")
    'table `incr_physical`.`shop__daily__0123456789`'
    """
    return f"table {table_name.lower()}"


def owner_id(run_id: str) -> str:
    """Who a lock row belongs to: the run, on which host and process (what an operator needs to find it)."""
    return f"{run_id}@{socket.gethostname()}:{os.getpid()}"


class Locks:
    """The locks one call holds; ``with Locks(...).held(keys):`` around everything it writes."""

    def __init__(self, spark: Any, schema: str, owner: str, procedure: str) -> None:
        self.spark, self.schema, self.owner, self.procedure = spark, schema, owner, procedure
        self.lease_s = float(setting(spark, LOCK_LEASE))
        self.timeout_s = float(setting(spark, LOCK_TIMEOUT))
        self._held: list[str] = []
        self._mutexes: list[threading.Lock] = []
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def held(self, keys: Iterable[str]) -> "Locks":
        """Acquire ``keys`` (in sorted order, so two calls never wait on each other in a cycle)."""
        self._keys = sorted(set(keys))
        return self

    def __enter__(self) -> "Locks":
        deadline = time.monotonic() + self.timeout_s
        try:
            for key in self._keys:
                self._lock_mutex(key, deadline)
            if self._keys:
                self._claim(deadline)
        except BaseException:
            self.release()
            raise
        if self._held:
            self._renewer = threading.Thread(target=self._renew, name="incr-lock-renewer", daemon=True)
            self._renewer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def release(self) -> None:
        """Give back every key held (catalog rows first, then the process mutexes)."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        try:
            if self._held:
                self._append("release", self._held)
        finally:
            for mutex in reversed(self._mutexes):
                mutex.release()
            self._held, self._mutexes = [], []

    def _lock_mutex(self, key: str, deadline: float) -> None:
        """This process's mutex of ``key``: other calls of this Spark application wait here."""
        mutex = _mutex(self.schema, key)
        if not mutex.acquire(timeout=max(0.0, deadline - time.monotonic())):
            holder = live_claims(self.spark, self.schema).get(key)
            raise self._timeout(key, holder.describe() if holder else "another call of this Spark application")
        self._mutexes.append(mutex)

    def _claim(self, deadline: float) -> None:
        """Claim every key in the catalog at once: one append and one read back per attempt, whatever their number."""
        while True:
            holder = self._other_holder()
            if holder is None:
                self._append("acquire", self._keys)
                holder = self._other_holder(mine_since=True)
                if holder is None:
                    self._held = list(self._keys)
                    return
                self._append("release", self._keys)  # another process claimed first: back off
            if time.monotonic() >= deadline:
                raise self._timeout(holder.key, holder.describe())
            time.sleep(_POLL_SECONDS)

    def _other_holder(self, mine_since: bool = False) -> Claim | None:
        """The oldest live claim of another owner on one of the keys; with ``mine_since``, only one older than
        this owner's own claim of that key."""
        wanted = set(self._keys)
        claims = [c for c in _live(self.spark, self.schema) if c.key in wanted]
        mine = {c.key: c.seq for c in claims if c.owner == self.owner}
        others = sorted((c for c in claims if c.owner != self.owner), key=lambda c: c.seq)
        if mine_since:
            others = [c for c in others if c.key not in mine or c.seq < mine[c.key]]
        return others[0] if others else None

    def _renew(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            try:
                self._append("renew", self._held)
            except Exception:  # noqa: BLE001 - a missed renewal only shortens the lease; the next one may land
                continue

    def _append(self, op: str, keys: list[str]) -> None:
        lease_until = int((time.time() + self.lease_s) * 1000) if op != "release" else 0
        StateStore(self.spark, self.schema).append(t.LOCKS, [
            {"lock_key": key, "owner": self.owner, "procedure": self.procedure, "op": op, "lease_until_ms": lease_until}
            for key in keys
        ])

    def _timeout(self, key: str, holder: str) -> LockTimeout:
        return LockTimeout(
            f"incr.{self.procedure}: {key} is locked by {holder}; waited {self.timeout_s:g} s "
            f"(spark.incr.lockTimeout). Nothing was changed: run again when it is done; a lock of a run that "
            f"was killed expires when its lease (spark.incr.lockLease) runs out"
        )


def live_claims(spark: Any, schema: str) -> dict[str, Claim]:
    """The oldest live claim of each key: who holds it."""
    oldest: dict[str, Claim] = {}
    for claim in sorted(_live(spark, schema), key=lambda c: c.seq, reverse=True):
        oldest[claim.key] = claim
    return oldest


def _live(spark: Any, schema: str) -> list[Claim]:
    """Every live claim: per key and owner, the current claim (begun by an acquire) whose lease has not run out."""
    rows = StateStore(spark, schema).read(t.LOCKS)
    latest: dict[tuple[str, str], dict] = {}
    since: dict[tuple[str, str], int] = {}  # the acquire that began each owner's current claim
    for row in rows.sort_by("seq").to_pylist():
        pair = (row["lock_key"], row["owner"])
        latest[pair] = row
        if row["op"] == "acquire" or pair not in since:
            since[pair] = row["seq"]
        if row["op"] == "release":
            since.pop(pair)
    now_ms = int(time.time() * 1000)
    return [Claim(k, o, r["procedure"], since[(k, o)], r["lease_until_ms"]) for (k, o), r in latest.items()
            if r["op"] != "release" and r["lease_until_ms"] > now_ms]


def _mutex(schema: str, key: str) -> threading.Lock:
    with _mutexes_lock:
        return _mutexes.setdefault((schema, key), threading.Lock())
