"""pyspark-incr: SQLMesh-style incremental models for Apache Spark, driven from Spark SQL."""

from pyspark_incr.errors import IncrError

__version__ = "0.1.0"

__all__ = ["IncrError", "__version__"]
