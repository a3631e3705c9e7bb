"""Leases on what a call writes: one writer per physical table (and per environment's views), across applications.

The arbiter is :mod:`pyspark_incr.state.claims` (exclusive file creates, no wall-clock order).
A call claims every key it writes, in sorted order so two calls never wait on each other in a
cycle, renews each claim every quarter of its lease while it works, and checks the claim's token
before each commit of data or state (:meth:`Locks.commit`): once another application has fenced
the claim, the holder stops and commits nothing more. A renewal that finds the claim fenced, or
that cannot be written for a whole lease, marks the claim lost the same way.

Within one Spark application -- threads, sessions of one Thrift or Connect server, which share one
Python worker -- a process-wide mutex per key first lines calls up, so they wait on each other
without polling the file system.

A call that finds a key held waits up to ``wait`` seconds (default ``spark.incr.lockTimeout``),
polling; then :class:`Claimed` names the holder: its run, application, host and since when.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterable
from typing import Any

from pyspark_incr.runtime import runtime
from pyspark_incr.config import LOCK_LEASE, LOCK_TIMEOUT, setting
from pyspark_incr.errors import Claimed, ClaimLost, LockTimeout
from pyspark_incr.stalls import frozen, stall
from pyspark_incr.state import claims
from pyspark_incr.state import tables as t
from pyspark_incr.state.store import table_location

_POLL_SECONDS = 0.25


def table_key(table_name: str) -> str:
    """The lock key of a physical table, whoever names it (the catalog lists names lowercased).

    >>> table_key("`Incr_Physical`.`shop__daily__0123456789`")
    'table `incr_physical`.`shop__daily__0123456789`'
    """
    return f"table {table_name.lower()}"


def env_key(env: str) -> str:
    """The lock key of an environment's views and entries."""
    return f"environment {env}"


class NoFence:
    """The fence of a call that holds no claim (it writes nothing another call could)."""

    def commit(self, key: str, what: str = "") -> None:
        """Nothing to check."""

    def check(self, key: str | None = None) -> None:
        """Nothing to check."""

    def claim_ref(self, key: str) -> str | None:
        """No claim for a job commit to check."""
        return None


def owner_id(run_id: str) -> str:
    """Who a claim belongs to: the run, on which host and process (what an operator needs to find it)."""
    return f"{run_id}@{socket.gethostname()}:{os.getpid()}"


class Locks:
    """The claims one call holds; ``with Locks(...).held(keys):`` around everything it writes."""

    def __init__(self, spark: Any, schema: str, owner: str, procedure: str, wait_s: float | None = None,
                 work: dict[str, tuple[tuple[str, int | None, int | None], ...]] | None = None,
                 env: str | None = None) -> None:
        self.spark, self.schema, self.owner, self.procedure = spark, schema, owner, procedure
        self.runtime = runtime(spark)
        self.lease_s = float(setting(spark, LOCK_LEASE))
        self.timeout_s = float(setting(spark, LOCK_TIMEOUT)) if wait_s is None else wait_s
        self.work, self.env = work or {}, env
        #: With ``partial``, a table key still claimed when the wait runs out is skipped, not an error.
        self.partial = False
        #: The keys skipped so, with their holders.
        self.claimed: dict[str, claims.Holder] = {}
        #: Dead holders fenced to win a key: their runs are reported abandoned.
        self.fenced: list[claims.Holder] = []
        #: Who held each key this call waited for, last before it: what the call reports as built meanwhile.
        self.waited: dict[str, claims.Holder] = {}
        self._keys: list[str] = []
        self._contended: set[str] = set()
        self._held: dict[str, claims.Claim] = {}
        self._next: dict[str, int] = {}
        self._lost: dict[str, str] = {}
        self._marking = threading.Lock()
        self._mutexes: list[threading.Lock] = []
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._root = ""

    def held(self, keys: Iterable[str], partial: bool = False) -> "Locks":
        """Acquire ``keys`` (in sorted order, so two calls never wait on each other in a cycle); with
        ``partial``, tables another call keeps past the wait are left out (see :attr:`claimed`)."""
        self._keys, self.partial = sorted(set(keys)), partial
        return self

    def __enter__(self) -> "Locks":
        deadline = time.monotonic() + self.timeout_s
        try:
            if self._keys:
                self._root = claims.root(table_location(self.spark, self.schema, t.LOCKS.name).toString())
            for key in self._keys:
                try:
                    mutex = self._lock_mutex(key, deadline)
                    self._claim(key, deadline, mutex)
                except Claimed as e:
                    if not (self.partial and key.startswith("table ")):
                        raise
                    self.claimed[key] = e.holder
        except BaseException:
            self.release()
            raise
        if self._held:
            self._renewer = threading.Thread(target=self._renew, name="incr-lease-renewer", daemon=True)
            self._renewer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def check(self, key: str | None = None) -> None:
        """Raise :class:`ClaimLost` when a claim this call holds (``key``'s, or any) is no longer its own."""
        lost = [k for k in ([key] if key else list(self._lost)) if k in self._lost]
        if lost:
            raise ClaimLost(f"incr.{self.procedure}: {self._lost[lost[0]]}; this call stopped before writing more. "
                            "What it committed before stays; run it again to see what is left")

    def commit(self, key: str, what: str = "") -> None:
        """Check the claim's token where it counts, just before a commit of data or state under ``key``."""
        stall("before-commit")
        if key not in self._held:
            return
        if not self._mark(key, claims.COMMIT, what):
            self._lost.setdefault(key, f"{key} was taken over by another application (this call's lease ran out)")
        self.check(key)

    def release(self) -> None:
        """Give back every key held (claims first, then the process mutexes)."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        try:
            for key in list(self._held):
                if key not in self._lost:
                    self._mark(key, claims.RELEASE)
        finally:
            for mutex in reversed(self._mutexes):
                mutex.release()
            self._held, self._mutexes = {}, []

    def _lock_mutex(self, key: str, deadline: float) -> threading.Lock:
        """This process's mutex of ``key``: other calls of this Spark application wait here."""
        mutex = self.runtime.mutex(self.schema, key)
        if mutex.acquire(blocking=False):
            self._mutexes.append(mutex)
            return mutex
        self._contended.add(key)
        if not mutex.acquire(timeout=max(0.0, deadline - time.monotonic())):
            holder = self._holder_of(key)
            if holder is not None:
                raise self._claimed(holder)
            raise LockTimeout(f"incr.{self.procedure}: {key} is locked by another call of this Spark application; "
                              f"waited {self.timeout_s:g} s. Nothing was changed: run again when it is done, or "
                              "pass a longer wait")
        self._mutexes.append(mutex)
        return mutex

    def _claim(self, key: str, deadline: float, mutex: threading.Lock) -> None:
        """Win ``key``'s claim, polling while another application holds it, until ``deadline`` (then the
        key's mutex is given back)."""
        kdir = claims.key_dir(self._root, key)
        rec = claims.record(key, self.owner, self.procedure, self.runtime.app_id, int(self.lease_s * 1000),
                            self.work.get(key, ()), self.env)
        while True:
            stall("before-claim")
            won = claims.attempt(self.spark, kdir, rec)
            if won.claim is not None:
                self._held[key], self._next[key] = won.claim, 1
                if won.fenced is not None:
                    self.fenced.append(won.fenced)
                if key in self._contended and won.previous is not None:
                    self.waited[key] = won.previous
                stall("after-claim")
                return
            if won.holder is not None:
                self._contended.add(key)
                if time.monotonic() >= deadline:
                    self._mutexes.remove(mutex)
                    mutex.release()
                    raise self._claimed(won.holder)
            time.sleep(_POLL_SECONDS)

    def _holder_of(self, key: str) -> claims.Holder | None:
        return next((h for h in claims.holders(self.spark, self._root) if h.key == key), None)

    def _claimed(self, holder: claims.Holder) -> Claimed:
        work = f" building {holder.building()}" if holder.work else ""
        return Claimed(
            f"incr.{self.procedure}: {holder.key} is claimed by {holder.describe()}{work}; waited "
            f"{self.timeout_s:g} s. Nothing was changed: run again when it is done, or pass wait => '10 minutes'; "
            f"a claim of a run that was killed ends {self.lease_s:g} s after it was last heard "
            "(spark.incr.lockLease)", holder)

    def _mark(self, key: str, op: str, detail: str = "") -> bool:
        with self._marking:
            claim, n = self._held[key], self._next[key]
            while not claims.mark(self.spark, claim, n, op, detail):
                if claims.taken_by_another(self.spark, claim, n):
                    self._next[key] = n + 1
                    return False
                n += 1  # an INSERT's job commit wrote that marker (FencedCommitProtocol): the next is ours
            self._next[key] = n + 1
            return True

    def claim_ref(self, key: str) -> str | None:
        """The claim on ``key`` as a job commit checks it from the JVM: its generation directory and owner."""
        claim = self._held.get(key)
        return None if claim is None else f"{claim.path}\n{self.owner}"

    def _renew(self) -> None:
        """Every quarter of the lease, a renewal marker per claim; a claim fenced, or unrenewed for a lease, is lost."""
        last_ok = {key: time.monotonic() for key in self._held}
        while not self._stop.wait(self.lease_s / 4):
            while frozen.is_set() and not self._stop.is_set():
                time.sleep(0.05)
            for key in [k for k in self._held if k not in self._lost]:
                try:
                    if not self._mark(key, claims.RENEW):
                        self._lost[key] = f"{key} was taken over by another application (this call's lease ran out)"
                        continue
                    last_ok[key] = time.monotonic()
                except Exception as e:  # noqa: BLE001 - a renewal may fail once; a lease's worth of failures loses it
                    if time.monotonic() - last_ok[key] >= self.lease_s:
                        self._lost[key] = f"the lease of {key} could not be renewed for {self.lease_s:g} s ({e})"


def in_flight(spark: Any, schema: str) -> list[claims.Holder]:
    """Every claim held now in ``schema``'s state, live or past its lease (a killed holder's, until taken over)."""
    location = table_location(spark, schema, t.LOCKS.name)
    return claims.holders(spark, claims.root(location.toString())) if location is not None else []

