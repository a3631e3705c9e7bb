"""pyspark-incr: SQLMesh-style incremental models for Apache Spark, driven from Spark SQL.

``configure_spark_with_incr(builder)`` before a session exists, ``attach(spark)``
once it does; then ``CALL incr.*`` works from SQL. ``jar_path()`` is the jar to
give a cluster (``--jars``). All three are imported lazily so ``import
pyspark_incr`` stays cheap.
"""

from typing import Any

from pyspark_incr.errors import IncrError
from pyspark_incr.version import __version__

__all__ = ["IncrError", "__version__", "attach", "configure_spark_with_incr", "jar_path"]


def __getattr__(name: str) -> Any:
    if name in ("attach", "configure_spark_with_incr"):
        from pyspark_incr.bridge import session

        return getattr(session, name)
    if name == "jar_path":
        from pyspark_incr.bridge.jar import jar_path

        return jar_path
    raise AttributeError(f"module 'pyspark_incr' has no attribute {name!r}")
