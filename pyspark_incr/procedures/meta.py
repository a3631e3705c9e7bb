"""``CALL incr.version()``: which plugin, Spark and Python a session is really talking to.

Worth having because a SQL-only client (spark-sql, JDBC) runs the engine in a
worker Python the user never sees; this is how they check which one it is.
"""

from __future__ import annotations

import sys

from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column


@procedure(
    "version",
    "Versions of pyspark-incr, Spark and the Python running the procedures.",
    params=(),
    output=(
        Column("version", "string", "pyspark-incr version."),
        Column("spark_version", "string", "Spark version of the calling session."),
        Column("python", "string", "Python executable and version running the procedures."),
    ),
)
def version(spark):
    from pyspark_incr.version import __version__

    python = f"{sys.executable} ({sys.version.split()[0]})"
    return [(__version__, spark.version, python)]
