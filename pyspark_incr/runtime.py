"""What pyspark-incr keeps between calls, held by one object per SparkContext.

Everything a call may reuse from an earlier one (the shim's classes, where state tables live,
the rows of their files already read, which state schemas exist, which thread holds which
claim) belongs to one Spark application: a second SparkContext in the same process (a test
restarting Spark, a notebook's ``spark.stop()``) is another application with other tables
and other claims. So none of it sits in module globals: it hangs off the SparkContext, and
goes with it.
"""

from __future__ import annotations

import threading
from typing import Any

#: The attribute of a (Python) SparkContext that holds its runtime.
_ATTRIBUTE = "_incr_runtime"


class Runtime:
    """The JVM handles and caches of one Spark application, as seen from its driver's Python.

    The caches are plain containers owned here and filled by the room that knows what goes in
    them (state, writers, run); each names its key in its comment.
    """

    def __init__(self, app_id: str, jvm: Any) -> None:
        self.app_id = app_id
        self.jvm = jvm
        #: Guards the containers below when calls run on several threads (Spark Connect, JDBC).
        self.lock = threading.Lock()
        self._classes: dict[str, Any] = {}
        #: Whether Delta Lake's classes are on the driver's classpath (None: not asked yet).
        self.delta: bool | None = None
        #: State schemas whose tables were created or checked by this application.
        self.ensured: set[str] = set()
        #: (state schema, table) -> the rows of the table's files read so far (state.files.FileCache).
        self.state_files: dict[tuple[str, str], Any] = {}
        #: (state schema, table) -> the Hadoop path of the table's directory.
        self.locations: dict[tuple[str, str], Any] = {}
        #: (state schema, table) -> that path as text (each ``toString`` of the JVM path is a round trip).
        self.roots: dict[tuple[str, str], str] = {}
        #: (state schema, table) -> how many files this application's last compaction left.
        self.compacted: dict[tuple[str, str], int] = {}
        self._mutexes: dict[tuple[str, str], threading.Lock] = {}

    def shim(self, name: str) -> Any:
        """``pysparkincr.<name>`` in this application's JVM (a py4j class: call its static methods).

        Looked up once: each lookup is a round trip.
        """
        found = self._classes.get(name)
        if found is None:
            found = self._classes[name] = _Statics(getattr(self.jvm.pysparkincr, name))
        return found

    def mutex(self, schema: str, key: str) -> threading.Lock:
        """The lock this application's threads take before claiming ``key`` in state schema ``schema``."""
        with self.lock:
            return self._mutexes.setdefault((schema, key), threading.Lock())

    def forget(self, schema: str) -> None:
        """Drop what this application remembers of state schema ``schema`` (it was dropped under us)."""
        with self.lock:
            self.ensured.discard(schema)
            for cache in (self.state_files, self.locations, self.roots, self.compacted):
                for key in [k for k in cache if k[0] == schema]:
                    del cache[key]


class _Statics:
    """A shim class whose static methods are each looked up once.

    py4j asks the JVM what a name is on every attribute access of a class (a round trip as long as
    the call itself); the method handle it returns can be called any number of times, from any thread.
    """

    def __init__(self, jclass: Any) -> None:
        self._jclass = jclass
        self._members: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        member = self._members.get(name)
        if member is None:
            member = self._members[name] = getattr(self._jclass, name)
        return member


def runtime(spark: Any) -> Runtime:
    """The runtime of ``spark``'s SparkContext, made on first use (asking the JVM its application id once).

    >>> sc = type("SparkContext", (), {"applicationId": "local-1"})()
    >>> spark = type("Spark", (), {"sparkContext": sc, "_jvm": None})()
    >>> runtime(spark).app_id, runtime(spark) is runtime(spark)
    ('local-1', True)
    """
    sc = spark.sparkContext
    found = getattr(sc, _ATTRIBUTE, None)
    if found is None:
        made = Runtime(str(sc.applicationId), spark._jvm)
        # two threads may both get here: the first to set it wins, and both use that one
        found = vars(sc).setdefault(_ATTRIBUTE, made)
    return found


def shim_class(spark: Any, name: str) -> Any:
    """``pysparkincr.<name>`` in ``spark``'s JVM (see :meth:`Runtime.shim`)."""
    return runtime(spark).shim(name)


def discard(spark: Any) -> None:
    """Forget ``spark``'s runtime: the next call starts as a new application's first call does (benchmarks)."""
    vars(spark.sparkContext).pop(_ATTRIBUTE, None)
