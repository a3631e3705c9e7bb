"""Table formats: which one a model's table uses, and whether this Spark can write it.

``parquet`` (the default) runs everywhere; ``delta`` needs Delta Lake on the
classpath (the ``io.delta`` classes and its SQL extension). Asking for Delta
where it is absent is an error at plan time, naming the model and the fix, never
a Java stack trace in the middle of a run. An existing table keeps the format
the catalog says it has, whatever the model's default, until it is rebuilt.

>>> from pyspark_incr.model.definition import parse_model
>>> requested(parse_model("MODEL (name a.b, kind FULL); SELECT 1 AS x"))
'parquet'
>>> requested(parse_model("MODEL (name a.b, kind FULL, table_format delta); SELECT 1 AS x"))
'delta'
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from pyspark_incr.runtime import runtime, shim_class
from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.definition import Model

PARQUET, DELTA = "parquet", "delta"
#: Formats some writer can build; others (iceberg) are refused at plan time.
BUILDABLE = (PARQUET, DELTA)
_DELTA_CLASS = "io.delta.tables.DeltaTable"


def requested(model: Model) -> str:
    """The format the model asks for (``table_format``, else the project's default, else parquet)."""
    return (model.table_format or PARQUET).lower()


def storage(model: Model) -> str:
    """The file format of a Parquet-family table's data files (``storage_format``, default parquet)."""
    return (model.storage_format or PARQUET).lower()


def create_using(model: Model) -> str:
    """What ``CREATE TABLE ... USING`` names for a new table of ``model``."""
    return DELTA if requested(model) == DELTA else storage(model)


def delta_available(spark: Any) -> bool:
    """True when Delta Lake's classes are on this Spark driver's classpath."""
    rt = runtime(spark)
    if rt.delta is None:
        try:
            spark._jvm.java.lang.Class.forName(_DELTA_CLASS)
            rt.delta = True
        except Exception:  # noqa: BLE001 - py4j raises a Py4JJavaError wrapping ClassNotFoundException
            rt.delta = False
    return rt.delta


def existing(spark: Any, table: exp.Table) -> str | None:
    """The format of ``table`` as the catalog records it (its provider), or None when it does not exist."""
    found = shim_class(spark, "CatalogReads").provider(spark._jsparkSession, table.db, table.name)
    return None if found is None else str(found)


def chosen(model: Model, provider: str | None) -> str:
    """The format a write uses: the existing table's (its ``provider``), or the model's when there is no table or it
    is being (re)created (None)."""
    return DELTA if provider == DELTA else (PARQUET if provider else requested(model))


def check(spark: Any, model: Model) -> None:
    """Refuse, at plan time, a format this Spark cannot write."""
    fmt = requested(model)
    where = f"model {model.name}" + (f" ({model.located})" if model.located else "")
    if fmt not in BUILDABLE:
        raise ModelDefinitionError(
            f"{where}: table_format {fmt} is not supported by this version; use table_format parquet or delta"
        )
    if fmt == DELTA and not delta_available(spark):
        raise ModelDefinitionError(
            f"{where}: table_format delta needs Delta Lake, whose classes ({_DELTA_CLASS}) are not on this "
            "Spark's classpath; start Spark with delta-spark (e.g. configure_spark_with_delta_pip, with "
            "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension), or use table_format parquet"
        )
