"""``session_properties``: Spark SQL settings in force while one model builds, and nowhere else.

The model builds in a clone of the session (same catalog, temporary views and functions) holding its
settings, so models building at the same time never see each other's settings and the call's own
session is never changed: nothing is left to restore, whether the build succeeds or fails.
"""

from __future__ import annotations

from typing import Any

from pyspark_incr.errors import ModelDefinitionError


def session_for(spark: Any, model: Any) -> Any:
    """``spark`` itself, or a clone with ``model.session_properties`` set; a setting Spark cannot change at
    runtime is refused naming the model and the property."""
    settings = getattr(model, "session_properties", ())
    if not settings:
        return spark
    refuse_static(spark, model)
    from pyspark.sql import SparkSession

    clone = SparkSession(spark.sparkContext, spark._jsparkSession.cloneSession())
    for key, value in settings:
        try:
            clone.conf.set(key, value)
        except Exception as e:  # noqa: BLE001 - Spark's refusal (a core or static setting) says why
            raise _refusal(model, key, _first_line(e)) from e
    return clone


def refuse_static(spark: Any, model: Any) -> None:
    """Raise for a setting Spark fixes when it starts: not ``spark.conf.isModifiable`` and a static SQL setting
    (other keys Spark does not know, e.g. a connector's own, may be set freely; core settings Spark refuses
    when set)."""
    sql_conf = spark._jvm.org.apache.spark.sql.internal.SQLConf
    for key, _ in getattr(model, "session_properties", ()):
        if not spark.conf.isModifiable(key) and sql_conf.isStaticConfigKey(key):
            raise _refusal(model, key, "a static setting, fixed when Spark starts")


def _refusal(model: Any, key: str, why: str) -> ModelDefinitionError:
    where = f"model {model.name}" + (f" ({model.located})" if getattr(model, "located", "") else "")
    return ModelDefinitionError(
        f"{where}: session_properties {key} cannot be changed while Spark runs ({why}); set it when Spark "
        "starts (--conf or spark-defaults.conf) and remove it from session_properties")


def _first_line(e: Exception) -> str:
    text = str(getattr(e, "desc", None) or e).strip()
    return text.splitlines()[0] if text else type(e).__name__
