"""State tables' Parquet files, encoded and decoded here and moved through the JVM in one call each.

A state table only ever changes by whole files appearing (appends, compaction's
folded file) and disappearing (compaction), and a file never changes once in
place. So a table's content is its file listing, and a process that has read a
file once never needs to read it again: :class:`FileCache` keeps each file's rows
and reads only the files a listing shows for the first time. Reading or writing
through Spark would cost a job (0.1-0.3 s) per table per call; this costs a
listing, plus one read of the files new to this process (however many: a new
process may meet hundreds), plus nothing for the files this process wrote itself.
"""

from __future__ import annotations

import base64
import io
import threading
import uuid
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from pyspark_incr.runtime import shim_class

T = TypeVar("T")

#: Directories appends are staged in, under a state table's directory (hidden from readers by the "_").
APPEND_PREFIX = "_incr_append_"


def listing(spark: Any, root: str) -> frozenset[str] | None:
    """The names of the table's data files; None when its directory is missing.

    Names only: a state file never changes once in place (it is written whole under a new name, then
    renamed in), so its name says which rows it holds.
    """
    text = shim_class(spark, "StateFiles").list(spark._jsparkSession, root)
    return None if text is None else frozenset(text.splitlines())


def listings(spark: Any, roots: list[str]) -> list[frozenset[str] | None]:
    """:func:`listing` of each of ``roots``, in that order, in one call into the JVM.

    >>> class StateFiles:
    ...     def listEach(self, session, dirs): return "/\\na\\nb\\n/?\\n/\\n"
    >>> import pyspark_incr.state.files as f; real, f.shim_class = f.shim_class, lambda s, n: StateFiles()
    >>> try: [sorted(x) if x is not None else x for x in listings(type("S", (), {"_jsparkSession": None})(), ["/x", "/y", "/z"])]
    ... finally: f.shim_class = real
    [['a', 'b'], None, []]
    """
    if not roots:
        return []
    text = shim_class(spark, "StateFiles").listEach(spark._jsparkSession, "\n".join(roots))
    found: list[list[str] | None] = []
    for line in text.splitlines():
        if line.startswith("/"):  # a directory's header (no file name holds a slash): / listed below, /? missing
            found.append(None if line == "/?" else [])
        else:
            found[-1].append(line)
    return [None if names is None else frozenset(names) for names in found]


def encode(rows: pa.Table) -> bytes:
    """``rows`` as one Parquet file, in the types Spark reads back as the table's own."""
    sink = io.BytesIO()
    pq.write_table(rows, sink, compression="snappy")
    return sink.getvalue()


def decode(data: bytes, schema: pa.Schema) -> pa.Table:
    """A file's rows in ``schema``: columns it lacks (written before they were added) are NULL, and
    Spark's INT96 timestamps become ``schema``'s."""
    found = pq.read_table(pa.BufferReader(data))
    columns = []
    for field in schema:
        if field.name in found.column_names:
            columns.append(found[field.name].cast(field.type))
        else:
            columns.append(pa.nulls(found.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def read_all(spark: Any, root: str, names: list[str]) -> list[bytes]:
    """The bytes of each file ``names`` of the table, in one JVM call however many they are."""
    if len(names) <= 1:  # base64: py4j would hand bytes over one by one in Python
        return [base64.b64decode(shim_class(spark, "StateFiles").read(spark._jsparkSession, root, n)) for n in names]
    framed = memoryview(base64.b64decode(
        shim_class(spark, "StateFiles").readAll(spark._jsparkSession, root, "\n".join(names))))
    out, at = [], 0
    for _ in names:
        size = int.from_bytes(framed[at:at + 4], "big")
        out.append(bytes(framed[at + 4:at + 4 + size]))
        at += 4 + size
    return out


def append(spark: Any, root: str, rows: pa.Table) -> str:
    """Write ``rows`` into the table as one new file, atomically; its name."""
    data = encode(rows)
    token = uuid.uuid4().hex
    name = f"part-{token}-0.snappy.parquet"
    shim_class(spark, "StateFiles").append(spark._jsparkSession, root, f"{APPEND_PREFIX}{token}", name, bytearray(data))
    return name


def delete(spark: Any, root: str, name: str) -> bool:
    """Delete one file of the table."""
    return bool(shim_class(spark, "StateFiles").delete(spark._jsparkSession, root, name))


def invalidate(spark: Any, schema: str, table: str) -> None:
    """Make Spark's own readers of the table (``SELECT ... FROM <state>.<table>``) see its files as they are now."""
    shim_class(spark, "StateFiles").invalidate(spark._jsparkSession, schema, table)


class FileCache:
    """Rows of each file of one table, as far as this process has seen them."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self._files: dict[str, pa.Table] = {}
        self._joined: tuple[tuple, pa.Table] | None = None
        #: What was computed from the joined rows (:meth:`derived`); replaced with them.
        self._derived: dict[Hashable, Any] = {}
        #: When the listing last changed by files appearing only: what was derived before, and the new files' names.
        self._grown_from: tuple[dict[Hashable, Any], list[str]] | None = None
        self._lock = threading.Lock()

    def rows(self, spark: Any, root: str, files: frozenset[str]) -> pa.Table:
        """The table's rows given the names of its files (:func:`listing`): files not seen before are read."""
        with self._lock:
            unseen = [name for name in files if name not in self._files]
            for name, data in zip(unseen, read_all(spark, root, unseen)):
                self._files[name] = decode(data, self.schema)
            for name in [n for n in self._files if n not in files]:
                del self._files[name]
            key = tuple(sorted(files))
            if self._joined is None or self._joined[0] != key:
                self._grown_from = _growth(self._joined, key, self._derived)
                parts = [self._files[n] for n in key]
                self._joined = (key, pa.concat_tables(parts) if parts else self.schema.empty_table())
                self._derived = {}
            return self._joined[1]

    def derived(self, rows: pa.Table, what: Hashable, compute: Callable[[pa.Table], T],
                grow: Callable[[T, pa.Table], T | None] | None = None) -> T:
        """``compute(rows)``, kept for as long as ``rows`` are the table's rows as last listed.

        A table read again unchanged (one listing) is then not folded again either; the value is
        shared by every later call, so ``compute`` must return something its callers never change.
        When files only appeared since the value was last derived, ``grow(that value, the new files'
        rows)`` is asked first: what it returns (unless None, "compute it all") is the value.
        """
        with self._lock:
            memo = self._derived if self._joined is not None and self._joined[1] is rows else None
            if memo is not None and what in memo:
                return memo[what]
            since = self._grown_from if memo is not None and grow is not None else None
            if since is not None and what in since[0]:
                base, added = since[0][what], pa.concat_tables([self._files[n] for n in since[1]])
            else:
                base = added = None
        value = grow(base, added) if added is not None else None
        if value is None:
            value = compute(rows)
        if memo is not None:
            with self._lock:
                memo[what] = value
        return value

    def file_rows(self, name: str) -> pa.Table:
        """The rows of one file, as the last :meth:`rows` call saw it."""
        return self._files[name]

    def wrote(self, name: str, rows: pa.Table) -> None:
        """Remember a file this process has just written, so it is never read back."""
        with self._lock:
            self._files[name] = rows.cast(self.schema)


def _growth(joined: tuple[tuple, pa.Table] | None, key: tuple, derived: dict[Hashable, Any]
            ) -> tuple[dict[Hashable, Any], list[str]] | None:
    """(``derived``, the names of the files ``key`` adds) when the listing ``key`` only adds files to ``joined``'s."""
    if joined is None or not derived:
        return None
    before, now = set(joined[0]), set(key)
    if not before <= now:
        return None  # a file went (compaction): nothing to grow from
    return derived, [name for name in key if name not in before]
