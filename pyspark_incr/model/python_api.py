"""What a SQLMesh Python model imports from ``sqlmesh``: the kind names and classes, and ``ExecutionContext``.

Offered under SQLMesh's names (:func:`pyspark_incr.model.pyfiles.stand_in`), so a project's Python files load
unedited; :mod:`pyspark_incr.model.python_model` reads the files.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from sqlglot import exp

from pyspark_incr.model import pyfiles


class ModelKindName(str, Enum):
    """The kind names ``@model(kind=dict(name=ModelKindName.FULL))`` takes (``from sqlmesh.core.model.kind``)."""

    VIEW = "VIEW"
    FULL = "FULL"
    SEED = "SEED"
    INCREMENTAL_BY_TIME_RANGE = "INCREMENTAL_BY_TIME_RANGE"
    INCREMENTAL_BY_UNIQUE_KEY = "INCREMENTAL_BY_UNIQUE_KEY"
    INCREMENTAL_BY_PARTITION = "INCREMENTAL_BY_PARTITION"
    INCREMENTAL_UNMANAGED = "INCREMENTAL_UNMANAGED"
    INCREMENTAL_BY_CURSOR = "INCREMENTAL_BY_CURSOR"
    SCD_TYPE_2 = "SCD_TYPE_2"
    SCD_TYPE_2_BY_TIME = "SCD_TYPE_2_BY_TIME"
    SCD_TYPE_2_BY_COLUMN = "SCD_TYPE_2_BY_COLUMN"
    EMBEDDED = "EMBEDDED"
    CUSTOM = "CUSTOM"
    MANAGED = "MANAGED"
    EXTERNAL = "EXTERNAL"

    def __str__(self) -> str:
        return self.value


#: Kinds whose rows a Python model can give: not those without stored rows, nor a cursor its code cannot read.
PYTHON_KINDS = ("FULL", "INCREMENTAL_BY_TIME_RANGE", "INCREMENTAL_BY_UNIQUE_KEY", "INCREMENTAL_BY_PARTITION",
                "INCREMENTAL_UNMANAGED", "SCD_TYPE_2", "SCD_TYPE_2_BY_TIME", "SCD_TYPE_2_BY_COLUMN")


class KindClass:
    """SQLMesh's kind classes (``IncrementalByTimeRangeKind(time_column="ds")``): a name and its properties."""

    name = ""

    def __init__(self, **properties: Any):
        self.properties = properties


def _kind_class(class_name: str, kind: str) -> type:
    return type(class_name, (KindClass,), {"name": kind, "__doc__": f"``kind={class_name}(...)``: kind {kind}."})


KIND_CLASSES = {n: _kind_class(n, k) for n, k in (
    ("FullKind", "FULL"), ("ViewKind", "VIEW"), ("SeedKind", "SEED"), ("EmbeddedKind", "EMBEDDED"),
    ("ExternalKind", "EXTERNAL"), ("IncrementalByTimeRangeKind", "INCREMENTAL_BY_TIME_RANGE"),
    ("IncrementalByUniqueKeyKind", "INCREMENTAL_BY_UNIQUE_KEY"), ("IncrementalByPartitionKind", "INCREMENTAL_BY_PARTITION"),
    ("IncrementalUnmanagedKind", "INCREMENTAL_UNMANAGED"), ("SCDType2Kind", "SCD_TYPE_2"),
    ("SCDType2ByTimeKind", "SCD_TYPE_2_BY_TIME"), ("SCDType2ByColumnKind", "SCD_TYPE_2_BY_COLUMN"),
)}


class ExecutionContext:
    """What ``execute(context, ...)`` gets: the session, the tables this environment reads models from, variables.

    As SQLMesh's: ``context.spark``, ``resolve_table(name)``, ``fetchdf(sql)`` (pandas),
    ``fetch_pyspark_df(sql)``, ``var(name, default)``, ``blueprint_var(name, default)``.
    """

    def __init__(self, spark: Any, tables: dict[str, Any] | None = None, variables: dict[str, Any] | None = None,
                 blueprint: dict[str, Any] | None = None):
        self.spark = spark
        self._tables = tables or {}
        self._variables = {k.lower(): v for k, v in (variables or {}).items()}
        self._blueprint = {k.lower(): v for k, v in (blueprint or {}).items()}
        self.engine_adapter = _Adapter(self)
        self.snowpark = self.bigframe = self.default_catalog = self.gateway = None

    def resolve_table(self, model_name: str) -> str:
        """The table this environment reads ``model_name`` from (a table that is no model: its own name)."""
        name = str(model_name).lower()
        table = self._tables.get(name)
        return table.sql("spark", identify=True) if table is not None else exp.to_table(name).sql("spark", identify=True)

    def table(self, model_name: str) -> str:
        """SQLMesh's older name of :meth:`resolve_table`."""
        return self.resolve_table(model_name)

    def fetch_pyspark_df(self, query: str | exp.Expression) -> Any:
        """A Spark DataFrame of ``query`` (SQL text or a sqlglot expression)."""
        return self.spark.sql(query.sql("spark") if isinstance(query, exp.Expression) else query)

    def fetchdf(self, query: str | exp.Expression) -> Any:
        """A pandas DataFrame of ``query``: collected to the driver, as SQLMesh does on Spark."""
        return self.fetch_pyspark_df(query).toPandas()

    def var(self, name: str, default: Any = None) -> Any:
        """The project variable ``name`` (config.yaml ``variables:``), ``default`` when it is not set."""
        return self._variables.get(name.lower(), default)

    def blueprint_var(self, name: str, default: Any = None) -> Any:
        """The variable ``name`` of the model's blueprint (``@model(blueprints=[...])``), else ``default``."""
        return self._blueprint.get(name.lower(), default)


class _Adapter:
    """``context.engine_adapter``: what SQLMesh's pre/post-statements in Python code call."""

    def __init__(self, context: ExecutionContext):
        self.spark = context.spark
        self.fetchdf = context.fetchdf

    def execute(self, sql: str | exp.Expression) -> None:
        """Run one statement for its effect."""
        self.spark.sql(sql.sql("spark") if isinstance(sql, exp.Expression) else sql).collect()


def _offer() -> None:
    """The names a SQLMesh Python model imports from ``sqlmesh`` (its project files load unedited)."""
    for name, value in {"ExecutionContext": ExecutionContext, "ModelKindName": ModelKindName, **KIND_CLASSES}.items():
        pyfiles.stand_in(name, value)


if __name__ == "pyspark_incr.model.python_api":  # not a second copy (pytest's doctests import this file alone)
    _offer()
