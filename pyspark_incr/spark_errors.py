"""What an error raised by Spark or the JVM says: its error class and parameters, and whether the metastore was
out of reach.

PySpark raises Spark's errors as ``CapturedException`` (``getCondition()``, ``getMessageParameters()``, the
Java throwable as ``_origin``) and a failed py4j call as ``Py4JJavaError`` (``java_exception``). Hive's
client wraps a lost or refused thrift connection three or four levels deep, so the causes are walked.
"""

from __future__ import annotations

from typing import Any

#: Java classes that, anywhere among an error's causes, mean a thrift connection failed (Hive's client is
#: the only thrift client pyspark-incr's calls use).
_THRIFT = ("org.apache.thrift.transport.TTransportException",)
#: How Hive's client says it gave up connecting (a ``MetaException``, its cause dropped).
_GAVE_UP = "Could not connect to meta store"


def condition(error: BaseException) -> str | None:
    """Spark's error class of ``error`` (``LOCATION_ALREADY_EXISTS``, ...), or None."""
    get = getattr(error, "getCondition", None)
    try:
        return get() if get else None
    except Exception:  # noqa: BLE001 - a PySpark error raised without a class
        return None


def parameters(error: BaseException) -> dict[str, str]:
    """The parameters of Spark's message for ``error``, their values unquoted; empty when it has none."""
    get = getattr(error, "getMessageParameters", None)
    try:
        found = get() if get else None
    except Exception:  # noqa: BLE001
        found = None
    return {k: str(v).strip("'") for k, v in (found or {}).items()}


def unreachable_metastore(error: BaseException) -> str | None:
    """How the Hive metastore could not be reached, when that is why ``error`` was raised (else None): the
    first line of the innermost cause that says so, as Hive's client wrote it (it appends a stack trace)."""
    said, causes = None, _causes(error)
    for name, message in causes:
        if name in _THRIFT or message.startswith(_GAVE_UP):
            said = message
    if said is None and not causes and (_GAVE_UP in str(error) or _THRIFT[0] in str(error)):
        said = next(line for line in str(error).splitlines() if _GAVE_UP in line or _THRIFT[0] in line)
    return said.strip().splitlines()[0][:400] if said and said.strip() else None


def _causes(error: BaseException) -> list[tuple[str, str]]:
    """The Java throwable behind ``error`` and its causes, outermost first: (class name, message)."""
    throwable = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    found = []
    try:
        while throwable is not None and len(found) < 20:
            found.append((str(throwable.getClass().getName()), str(throwable.getMessage() or "")))
            throwable = throwable.getCause()
    except Exception:  # noqa: BLE001 - the JVM itself is gone: what was read so far
        pass
    return found
