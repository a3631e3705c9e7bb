"""Unit tests of Python models: ``execute()`` called as SQLMesh calls it in a test, its reads sent to the inputs.

``context.spark`` is a stand-in for the session whose table reads (``spark.table``, ``spark.sql``,
``spark.read.table``, and through them ``context.fetchdf``, ``fetch_pyspark_df`` and
``engine_adapter``) are mapped onto the test's input views, and ``context.resolve_table(name)`` gives
an input's view: a read of any other table is an ``error`` naming it, never a read of real data (and
SQL writing a table names a table the inputs do not give, so it is refused too). The test's vars
reach ``execute()`` as project variables do in a run, its ``start``/``end``/``execution_time`` as its
arguments; with ``execution_time``, CURRENT_TIMESTAMP in the SQL it runs returns it. What
``execute()`` returns or yields (Spark or pandas) is cast to the declared columns, as a run writes
it, and compared with ``outputs.query`` in any order, as SQLMesh compares a Python model's rows.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import IncrError, ModelDefinitionError, ModelQueryError
from pyspark_incr.model import python_run
from pyspark_incr.model.definition import Model
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS
from pyspark_incr.project.unit_tests import UnitTest
from pyspark_incr.run.unit_inputs import onto_fixtures, where
from pyspark_incr.run.unit_outputs import check_output
from pyspark_incr.run.unit_sql import frozen, times, with_variables
from pyspark_incr.sqltext import render


def check(spark: Any, test: UnitTest, model: Model, views: dict[str, exp.Table]) -> list[str]:
    """The failures of a Python model's rows for the test (none when they match ``outputs.query``)."""
    if test.ctes:
        raise ModelDefinitionError(f"{where(test)}: outputs.ctes: model {model.name} is a Python model, which has "
                                   "no CTEs; check its rows under outputs.query")
    if test.query is None:  # SQLMesh runs a Python model's test only for its query output
        return []
    model = with_variables(model, test)
    interval, execution_ms = times(test)
    session = FixtureSession(spark, views, test, execution_ms if "execution_time" in test.times else None)
    try:
        rows = python_run.rows(model, session, dict(views), interval.start, interval.end, execution_ms)
    except ModelQueryError as e:
        if isinstance(e.__cause__, IncrError):  # the stand-in refused a read: its message names the test
            raise e.__cause__ from None
        raise ModelQueryError(f"{where(test)}: {e}") from None
    return check_output(spark, test, "query", rows, test.query, False, views)


class FixtureSession:
    """``context.spark`` in a test: the session, but every table read is mapped onto the test's input views."""

    def __init__(self, spark: Any, views: dict[str, exp.Table], test: UnitTest, frozen_ms: int | None = None):
        self._spark = spark
        self._views = views
        self._test = test
        self._frozen_ms = frozen_ms

    def sql(self, sqlQuery: str | exp.Expression, args: Any = None, **kwargs: Any) -> Any:  # noqa: N803 - Spark's
        """``sqlQuery`` run with its tables mapped onto the inputs; one the inputs do not give is refused."""
        reader = f"execute() of model {self._test.model}"
        if kwargs:  # Spark would format them in after any check could see the tables
            raise ModelDefinitionError(f"{where(self._test)}: {reader} calls spark.sql with format arguments "
                                       f"({', '.join(kwargs)}); in a unit test pass it the finished SQL text")
        try:
            statement = sqlQuery if isinstance(sqlQuery, exp.Expression) else sqlglot.parse_one(sqlQuery, read="spark")
        except SQLGLOT_ERRORS as e:
            raise ModelDefinitionError(f"{where(self._test)}: {reader} runs SQL that cannot be parsed, so the test "
                                       f"cannot tell which tables it reads: {str(e).splitlines()[0]}") from None
        statement = onto_fixtures(statement, self._views, self._test, reader)
        if self._frozen_ms is not None:
            statement = frozen(statement, self._frozen_ms)
        return self._spark.sql(render(statement)) if args is None else self._spark.sql(render(statement), args)

    def table(self, tableName: str) -> Any:  # noqa: N803 - Spark's name
        """The rows of the input ``tableName`` names, as ``spark.table`` reads a table."""
        return self.sql(exp.select("*").from_(exp.to_table(str(tableName), dialect="spark")))

    @property
    def read(self) -> Any:
        """Spark's reader, its ``table(name)`` reading an input."""
        return _Reader(self._spark.read, self)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spark, name)


class _Reader:
    """``spark.read`` in a test: ``table(name)`` reads an input; the rest (files by path) is Spark's reader."""

    def __init__(self, reader: Any, session: FixtureSession):
        self._reader = reader
        self._session = session

    def table(self, tableName: str) -> Any:  # noqa: N803 - Spark's name
        """The rows of the input ``tableName`` names."""
        return self._session.table(tableName)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._reader, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:  # format(...).option(...) stay this reader
            out = value(*args, **kwargs)
            return _Reader(out, self._session) if isinstance(out, type(self._reader)) else out

        return call
