"""Creating a managed table where files already lie: found before the statement, or named after it fails.

Spark refuses to create a managed table whose directory (``<schema location>/<table>``) exists and is
not empty (``LOCATION_ALREADY_EXISTS``): files left by a table dropped from another catalog, or a
metastore reset while the warehouse was kept. The catalog has no such table, so pyspark-incr would create
it on any call; the user's fix is to move the files away, which only they can judge is safe. Neither
check deletes or reads them.
"""

from __future__ import annotations

from typing import Any, Iterable

from pyspark_incr.errors import LocationTaken
from pyspark_incr.spark_errors import condition, parameters

#: Spark's error class for a managed table's directory holding files.
SPARK_CONDITION = "LOCATION_ALREADY_EXISTS"
#: Why files can lie where the catalog has no table, and what to do: the end of every message.
WHY_AND_FIX = ("though the catalog has no such table (files of a table dropped from another catalog, or of a "
               "metastore reset while the warehouse was kept). Move the directory away if nothing needs its "
               "files, then call again")


def occupied(spark: Any, schema: str, names: Iterable[str]) -> list[str]:
    """The directories among ``names``' default locations in ``schema`` that exist and hold files, as Spark's
    check for a new managed table sees them. Empty when the schema does not exist (no JVM: nothing found).

    The schema's directory is listed once (a new one is empty): a few round trips, not a few per name.
    """
    try:
        jcatalog = spark._jsparkSession.sessionState().catalog()
        root = spark._jvm.org.apache.hadoop.fs.Path(str(jcatalog.getDatabaseMetadata(schema).locationUri()))
        fs = root.getFileSystem(spark._jsparkSession.sessionState().newHadoopConf())
        children = fs.listStatus(root) if fs.exists(root) else []
    except Exception:  # noqa: BLE001 - no such schema, or Spark Connect: the statement's own check decides
        return []
    wanted = {name.lower() for name in names}
    paths = [status.getPath() for status in children]
    return [str(path) for path in paths if path.getName() in wanted and len(fs.listStatus(path)) > 0]


def create(spark: Any, statement: str, what: str) -> None:
    """Run ``statement`` (a ``CREATE TABLE``); Spark's refusal of a directory holding files becomes
    :class:`LocationTaken`, naming ``what`` (e.g. "model m.t's table `s`.`t`") and the directory."""
    try:
        spark.sql(statement)
    except Exception as e:
        if condition(e) != SPARK_CONDITION:
            raise
        where = parameters(e).get("location", "its directory")
        raise LocationTaken(f"Cannot create {what}: its directory {where} already holds files {WHY_AND_FIX}.") from e
