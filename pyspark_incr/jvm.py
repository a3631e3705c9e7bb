"""The shim's classes as seen from Python, looked up once per JVM: each lookup is a round trip."""

from __future__ import annotations

from typing import Any

_classes: dict[tuple[int, str], Any] = {}


def shim_class(spark: Any, name: str) -> Any:
    """``pysparkincr.<name>`` in ``spark``'s JVM (a py4j class: call its static methods)."""
    key = (id(spark._jvm), name)
    found = _classes.get(key)
    if found is None:
        found = _classes[key] = getattr(spark._jvm.pysparkincr, name)
    return found


def app_id(spark: Any) -> str:
    """The Spark application's id, asked of the JVM once per SparkContext (each ask costs two round trips).

    >>> sc = type("SparkContext", (), {"applicationId": "local-1"})()
    >>> app_id(type("Spark", (), {"sparkContext": sc})())
    'local-1'
    """
    sc = spark.sparkContext
    found = getattr(sc, "_incr_app_id", None)
    if found is None:
        found = sc._incr_app_id = str(sc.applicationId)
    return found
