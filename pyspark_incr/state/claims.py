"""Claims: who may write a key (a physical table, an environment's views) now, decided by exclusive file creates.

Several Spark applications share one catalog and one warehouse, so the arbiter must be something
all of them see and that lets at most one writer win whatever the timing. That is an exclusive
create of a file (:meth:`StateFiles.createExclusive`): atomic on a local disk (``O_EXCL``), on HDFS
(the NameNode) and on object stores with conditional puts. No order of wall-clock numbers decides
anything.

Each key has a directory under ``<locks table>/_claims/``; each holder of the key one *generation*
directory in it, ``g<gen>/``, holding:

- ``claim``: who holds it (the application, host, process, procedure, run, what it will build),
  created exclusively. Winning ``g<gen+1>/claim`` is how a key is taken: only after ``g<gen>``
  ended.
- ``m<n>``, n = 1, 2, ...: markers, each created exclusively, in order. The holder writes one to
  renew its lease (``renew``), one before each commit of data or state (``commit``: the claim's token
  checked where it counts), and ``release`` at the end. Another application that finds the
  generation silent for longer than its lease writes the next marker itself as ``fence``: from then
  on every marker the old holder tries fails, so a holder that stalled past its lease and wakes up
  commits nothing.

A generation has ended when its last marker is ``release`` or ``fence``. Its liveness is the
modification time of its newest file against the holder's declared lease. A generation created
from a stale listing (one below the newest) is given up at once: the newest generation directory
is never deleted, so the check after the create always sees it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from pyspark_incr.runtime import shim_class
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.stalls import stall
from pyspark_incr.state import files

#: Directory of the claims under the ``locks`` state table's directory (hidden from Spark by the "_").
CLAIMS_DIR = "_claims"
RENEW, COMMIT, RELEASE, FENCE = "renew", "commit", "release", "fence"
_ENDED = (RELEASE, FENCE)
_GEN = re.compile(r"^g(\d{10})/(claim|m(\d{8}))$")


@dataclass(frozen=True)
class Holder:
    """What a claim file says of its holder, and when the generation last showed a sign of life."""

    key: str
    gen: int
    owner: str
    procedure: str
    app_id: str
    host: str
    since_ms: int
    lease_ms: int
    last_ms: int
    #: What it builds: (model, interval start, interval end), the bounds None for a rebuild of the whole table.
    work: tuple[tuple[str, int | None, int | None], ...] = ()
    env: str | None = None

    def describe(self) -> str:
        """The holder as an operator needs it to find it: run, application, host, since when."""
        return (f"{self.owner} (incr.{self.procedure}, application {self.app_id} on {self.host}, "
                f"since {_utc(self.since_ms)}, last heard {_utc(self.last_ms)})")

    def building(self) -> str:
        """Its work in words: each model with its intervals.

        >>> Holder("k", 1, "o", "run", "app", "h", 0, 1, 0, (("db.m", 0, 86400000), ("db.n", None, None))).building()
        'db.m [1970-01-01, 1970-01-02); db.n (whole table)'
        """
        return "; ".join(f"{m} {Interval(s, e)}" if s is not None else f"{m} (whole table)" for m, s, e in self.work)

    def expired(self, now_ms: int) -> bool:
        return now_ms - self.last_ms >= self.lease_ms


@dataclass(frozen=True)
class Claim:
    """A key this process won: its generation directory is the token every later marker is checked against."""

    key: str
    gen: int
    path: str
    record: dict = field(compare=False, repr=False)

    @property
    def token(self) -> str:
        return f"{self.key}#{self.gen}"


@dataclass(frozen=True)
class Attempt:
    """One try at a key: the claim won, or the live holder in the way (neither: lost a race, try again)."""

    claim: Claim | None = None
    holder: Holder | None = None
    #: The dead holder this attempt fenced to win (its run is reported abandoned).
    fenced: Holder | None = None
    #: Whoever held the key last before the claim won (released or fenced).
    previous: Holder | None = None


def root(table_dir: str) -> str:
    """The claims directory of a state schema, given its ``locks`` table directory."""
    return table_dir.rstrip("/") + "/" + CLAIMS_DIR


def key_dir(claims_root: str, key: str) -> str:
    """A key's directory: readable, and unique whatever characters the key holds.

    >>> key_dir("/s/_claims", "table `db`.`t`")
    '/s/_claims/table_db_t-cded473062'
    """
    slug = re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")[:60]
    return f"{claims_root}/{slug}-{hashlib.sha1(key.encode()).hexdigest()[:10]}"


def record(key: str, owner: str, procedure: str, app_id: str, lease_ms: int,
           work: tuple[tuple[str, int | None, int | None], ...], env: str | None) -> dict:
    """The content of a claim file."""
    return {"key": key, "owner": owner, "procedure": procedure, "app_id": app_id, "host": socket.gethostname(),
            "pid": os.getpid(), "since_ms": _now_ms(), "lease_ms": lease_ms, "work": [list(w) for w in work],
            "env": env}


def attempt(spark: Any, kdir: str, rec: dict) -> Attempt:
    """Try once to win the key of ``kdir``: the next generation when the newest has ended, or has gone
    silent past its lease (then fenced first)."""
    gens = _generations(_tree(spark, kdir, 1))
    stall("listed")
    newest = max(gens, default=0)
    fenced = holder = None
    if newest:
        holder = _holder(spark, kdir, newest, gens[newest])
        last_n = max((n for n in gens[newest] if n), default=0)
        op = _marker_op(spark, kdir, newest, last_n) if last_n else None
        if op not in _ENDED:
            if holder is not None and not holder.expired(_now_ms()):
                return Attempt(holder=holder)
            if holder is None and _now_ms() - max(gens[newest].values()) < rec["lease_ms"]:
                return Attempt()  # a claim being written this instant: look again
            if not _create(spark, _gen_dir(kdir, newest), _marker(last_n + 1), _marker_body(FENCE, rec["owner"]), False):
                return Attempt()  # the holder renewed just now, or another application fenced first
            fenced = holder
            stall("fenced")
    return _take(spark, kdir, newest + 1, rec, fenced, holder)


def _take(spark: Any, kdir: str, gen: int, rec: dict, fenced: Holder | None, previous: Holder | None) -> Attempt:
    path = _gen_dir(kdir, gen)
    if not _create(spark, path, "claim", json.dumps(rec).encode(), True):
        return Attempt()
    stall("created")
    if max(_generations(_tree(spark, kdir, 1)), default=0) > gen:  # our listing was stale: give it up
        _create(spark, path, _marker(1), _marker_body(RELEASE, rec["owner"]), False)
        return Attempt()
    _forget_before(spark, kdir, gen - 1)
    return Attempt(claim=Claim(rec["key"], gen, path, rec), fenced=fenced, previous=previous)


def mark(spark: Any, claim: Claim, n: int, op: str, detail: str = "") -> bool:
    """Write marker ``n`` of the claim: False when it exists (another application fenced the claim)."""
    return _create(spark, claim.path, _marker(n), _marker_body(op, claim.record["owner"], detail), False)


def taken_by_another(spark: Any, claim: Claim, n: int) -> bool:
    """Whether marker ``n``, which this holder failed to create, ends its claim (a fence, or a release)
    rather than being one of its own (an INSERT's job commit marks the claim from the JVM).

    A marker is created before its content lands: unreadable for a while, it is taken for a fence.
    """
    for _ in range(50):
        text = _read(spark, claim.path, _marker(n))
        if text:
            try:
                return json.loads(text)["op"] in _ENDED
            except (ValueError, KeyError):
                return True
        time.sleep(0.01)
    return True


def holders(spark: Any, claims_root: str) -> list[Holder]:
    """Every claim in flight under ``claims_root``: newest generations not ended, whatever their lease says."""
    by_key: dict[str, dict[str, int]] = {}
    for rel, mtime in _tree(spark, claims_root, 2).items():
        kname, _, rest = rel.partition("/")
        by_key.setdefault(kname, {})[rest] = mtime
    found = []
    for kname, tree in sorted(by_key.items()):
        gens = _generations(tree)
        if not gens:
            continue
        newest = max(gens)
        last_n = max((n for n in gens[newest] if n), default=0)
        kdir = f"{claims_root}/{kname}"
        if last_n and _marker_op(spark, kdir, newest, last_n) in _ENDED:
            continue
        holder = _holder(spark, kdir, newest, gens[newest])
        if holder is not None:
            found.append(holder)
    return found


def _holder(spark: Any, kdir: str, gen: int, files: dict[int, int]) -> Holder | None:
    """The holder of generation ``gen`` as its claim file says; None while the file is still being written."""
    text = _read(spark, _gen_dir(kdir, gen), "claim")
    try:
        rec = json.loads(text)
    except ValueError:
        return None
    return Holder(rec["key"], gen, rec["owner"], rec["procedure"], rec["app_id"], rec["host"], rec["since_ms"],
                  rec["lease_ms"], max(files.values()), tuple(tuple(w) for w in rec.get("work", ())), rec.get("env"))


def _marker_op(spark: Any, kdir: str, gen: int, n: int) -> str | None:
    """What marker ``n`` says (None while it is still being written)."""
    try:
        return json.loads(_read(spark, _gen_dir(kdir, gen), _marker(n)))["op"]
    except ValueError:
        return None


def _forget_before(spark: Any, kdir: str, gen: int) -> None:
    """Delete generations older than ``gen`` (kept: the one just ended, for who held the key last)."""
    old = sorted({rel.partition("/")[0] for rel in _tree(spark, kdir, 1)
                  if _GEN.match(rel) and int(_GEN.match(rel).group(1)) < gen})
    if old:
        shim_class(spark, "StateFiles").deleteAll(spark._jsparkSession, kdir, "\n".join(old))


def _generations(tree: dict[str, int]) -> dict[int, dict[int, int]]:
    """``{gen: {marker number (0: the claim file): mtime}}`` of a key directory's listing."""
    gens: dict[int, dict[int, int]] = {}
    for rel, mtime in tree.items():
        m = _GEN.match(rel)
        if m:
            gens.setdefault(int(m.group(1)), {})[int(m.group(3) or 0)] = mtime
    return gens


def _tree(spark: Any, directory: str, depth: int) -> dict[str, int]:
    """``{relative path: modification ms}`` of every file under ``directory``."""
    text = shim_class(spark, "StateFiles").listTree(spark._jsparkSession, directory, depth)
    return {rel: int(mtime) for rel, _, mtime in (line.split("\t") for line in text.splitlines())}


def _read(spark: Any, directory: str, name: str) -> str:
    try:
        return files.read_all(spark, directory, [name])[0].decode()
    except Exception:  # noqa: BLE001 - gone since the listing (an old generation deleted): nothing to say
        return ""


def _create(spark: Any, directory: str, name: str, data: bytes, parents: bool) -> bool:
    return bool(shim_class(spark, "StateFiles").createExclusive(spark._jsparkSession, directory, name,
                                                                bytearray(data), parents))


def _gen_dir(kdir: str, gen: int) -> str:
    return f"{kdir}/g{gen:010d}"


def _marker(n: int) -> str:
    return f"m{n:08d}"


def _marker_body(op: str, owner: str, detail: str = "") -> bytes:
    return json.dumps({"op": op, "by": owner, "at_ms": _now_ms(), "detail": detail}).encode()


def _now_ms() -> int:
    return int(time.time() * 1000)


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
