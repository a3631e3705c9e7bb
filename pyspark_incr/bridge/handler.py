"""The Python side of every ``CALL incr.*``: the py4j callback the JVM shim calls.

The same class serves both homes of the handler (in the PySpark driver and in
the worker a SQL-only JVM launches), so a procedure behaves identically from
PySpark, spark-sql, JDBC and Spark Connect.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections import OrderedDict
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

from pyspark_incr.config import ERROR_TRACES, setting, settings_of
from pyspark_incr.errors import INTERNAL_CONDITION, INTERNAL_SQLSTATE, IncrError, MetastoreUnavailable
from pyspark_incr.procedures import REGISTRY, dispatch, encode_value, load_all, registry_json
from pyspark_incr.spark_errors import unreachable_metastore

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MAX_SESSIONS = 64


def load_procedures() -> None:
    """Import every procedure module so :data:`REGISTRY` is complete before the shim reads it."""
    load_all()


class Handler:
    """Implements ``pysparkincr.Handler``. One instance per registration: the shim caches the
    registry per instance, so registering a new instance is how a changed registry is published."""

    def __init__(self) -> None:
        self._sessions: OrderedDict[str, SparkSession] = OrderedDict()

    def registry(self) -> str:
        try:
            load_procedures()
            return registry_json(REGISTRY)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            raise

    def call(self, procedure: str, args_json: str, context_json: str, jsession: Any) -> str:
        context: dict[str, Any] = {}
        try:
            context = json.loads(context_json)
            spark = self._session(jsession, context.get("session"))
            spec = REGISTRY.get(procedure)
            args = json.loads(args_json)
            if spec is not None:
                args = _decode_args(spec, args)
            with settings_of(spark, context.get("settings")):
                spec, rows = dispatch(spark, procedure, args)
            encoded = [[encode_value(c, v) for c, v in zip(spec.output, row)] for row in rows]
            return json.dumps({"rows": encoded}, default=str)
        except IncrError as e:
            return _error(e, str(e), procedure, traced=self._traces_asked(jsession, context.get("settings")))
        except Exception as e:  # a bug, not a user error: its trace goes to the log and to the user
            unreachable = _unreachable(e, procedure, jsession)
            if unreachable is not None:
                return _error(unreachable, str(unreachable), procedure,
                              traced=self._traces_asked(jsession, context.get("settings")))
            traceback.print_exc(file=sys.stderr)
            message = (f"incr.{procedure} failed on a bug in pyspark-incr ({type(e).__name__}: {e}); "
                       "please report it with the trace below.")
            return _error(e, message, procedure, traced=True)

    def _traces_asked(self, jsession: Any, settings: dict[str, str] | None) -> bool:
        """``spark.incr.errors.stackTrace``: a user error shows its traces too (off: the message says it all)."""
        try:
            if settings is not None:
                return settings.get(ERROR_TRACES, "false").strip().lower() == "true"
            return setting(self._session(jsession), ERROR_TRACES).strip().lower() == "true"
        except Exception:  # the session itself is what failed: say the message, not a second error
            return False

    def _session(self, jsession: Any, key: str | None = None) -> SparkSession:
        """A pyspark SparkSession over the caller's JVM session, reused per session UUID (``key``, when the
        call sent it: asking the session is a round trip)."""
        key = key or jsession.sessionUUID()
        spark = self._sessions.get(key)
        if spark is None:
            active = SparkSession._instantiatedSession
            if active is not None and active._jsparkSession.sessionUUID() == key:
                spark = active
            else:
                # The active context, not one remembered at registration: it may have been restarted.
                spark = SparkSession(SparkContext._active_spark_context, jsparkSession=jsession)
            self._sessions[key] = spark
            if len(self._sessions) > _MAX_SESSIONS:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(key)
        return spark

    class Java:
        implements = ["pysparkincr.Handler"]


def _unreachable(error: Exception, procedure: str, jsession: Any) -> MetastoreUnavailable | None:
    """``error`` as the metastore out of reach, when that is what it was (not a bug of pyspark-incr)."""
    said = unreachable_metastore(error)
    if said is None:
        return None
    try:
        uris = jsession.sparkContext().hadoopConfiguration().get("hive.metastore.uris")
    except Exception:  # noqa: BLE001 - the message is whole without the address
        uris = None
    at = f" at {uris}" if uris else ""
    unreachable = MetastoreUnavailable(
        f"incr.{procedure} cannot reach the Hive metastore{at}: {said}. Check that the metastore service is up "
        "and that this application reaches it (hive.metastore.uris), then call again: what calls committed "
        "stays committed, and a run builds what is still missing.")
    unreachable.__cause__ = error
    return unreachable


def _decode_args(spec: Any, args: dict[str, Any]) -> dict[str, Any]:
    """Timestamps cross the bridge as epoch microseconds; procedures get UTC datetimes."""
    for p in spec.params:
        if p.type == "timestamp" and isinstance(args.get(p.name), int):
            args[p.name] = _EPOCH + timedelta(microseconds=args[p.name])
    return args


def _error(error: Exception, message: str, procedure: str, *, traced: bool) -> str:
    """The error reply: the shim raises it as Spark's own errors are raised (``IncrException``)."""
    known = isinstance(error, IncrError)
    condition = error.condition if known else INTERNAL_CONDITION
    sqlstate = error.sqlstate if known else INTERNAL_SQLSTATE
    reply = {"type": type(error).__name__, "condition": condition, "sqlstate": sqlstate, "message": message}
    if traced:
        trace = "".join(traceback.format_exception(error)).rstrip()
        reply["trace"] = f"Python traceback of incr.{procedure}:\n{trace}"
    return json.dumps({"error": reply})

