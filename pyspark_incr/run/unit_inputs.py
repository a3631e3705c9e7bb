"""A unit test's inputs as temporary views, and the guard that a query reads nothing else.

Each input becomes a temporary view under a unique name (dropped afterwards); a query is mapped
onto those views, and one still reading any other table is refused: a test never reads (or writes)
a real table.
"""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Iterator, Mapping, Sequence

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.definition import Model
from pyspark_incr.model.macros import PREFIX as MACRO_PREFIX
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS
from pyspark_incr.project.unit_tests import Data, UnitTest
from pyspark_incr.sqltext import render

#: Start of the names of the temporary views holding a test's inputs.
VIEW_PREFIX = "__incr_test_"


def where(test: UnitTest) -> str:
    """How messages name a test: its file and name."""
    return f"{test.file}: test {test.name}"


@contextmanager
def fixtures(spark: Any, test: UnitTest, models: Mapping[str, Model]) -> Iterator[dict[str, exp.Table]]:
    """A temporary view per input, by input name; every one is dropped on the way out."""
    token = uuid.uuid4().hex[:12]
    views: dict[str, exp.Table] = {}
    try:
        for i, (name, data) in enumerate(test.inputs):
            view = f"{VIEW_PREFIX}{token}_{i}"
            views[name] = exp.to_table(view)
            upstream = models.get(name)
            declared = {**dict(upstream.columns if upstream is not None else ()), **dict(data.columns)}
            sql = _input_sql(spark, data, declared, views, test, f"inputs.{name}")
            spark.sql(sql).createOrReplaceTempView(view)
        yield views
    finally:
        for view in views.values():
            spark.catalog.dropTempView(view.name)


def _input_sql(spark: Any, data: Data, declared: dict[str, str], views: dict[str, exp.Table], test: UnitTest,
               label: str) -> str:
    """SQL for an input's rows: listed values cast to the declared types, or its query with those casts.

    The query may read the inputs given before it, and no other table: the session is the real one.
    """
    if data.rows is not None:
        columns = list(dict.fromkeys([*(k for row in data.rows for k in row), *declared]))
        return render(rows_query(data.rows, columns, declared, f"{where(test)}: {label}"))
    query = onto_fixtures(sqlglot.parse_one(data.query, read="spark"), views, test, f"the query of {label}")
    return render(typed(spark, query, declared, add_missing=True))


def rows_query(rows: Sequence[dict[str, Any]], columns: Sequence[str], types: Mapping[str, str],
               where: str) -> exp.Query:
    """``SELECT CAST(c0 AS type) AS col, ... FROM VALUES (...), ...``: the rows, a missing value NULL.

    >>> render(rows_query([{"id": 1}, {"id": 2, "d": "2024-01-01"}], ["id", "d"], {"d": "DATE"}, "t"))
    "SELECT c0 AS `id`, CAST(c1 AS DATE) AS `d` FROM VALUES (1, NULL), (2, '2024-01-01') AS t(c0, c1)"
    """
    if not columns:
        raise ModelDefinitionError(f"{where}: no columns; give rows with values or columns: (name: type)")
    positions = [f"c{i}" for i in range(len(columns))]
    selects = [_cast(exp.column(p), types.get(c)).as_(c, quoted=True) for p, c in zip(positions, columns)]
    if not rows:
        unknown = [c for c in columns if not types.get(c)]
        if unknown:
            raise ModelDefinitionError(f"{where}: no rows, and the type of {', '.join(unknown)} is unknown; "
                                       "declare it under columns: (name: type)")
        nulls = [_cast(exp.null(), types[c]).as_(c, quoted=True) for c in columns]
        return exp.select(*nulls).where(exp.false())
    values = exp.Values(
        expressions=[exp.Tuple(expressions=[literal(row.get(c), types.get(c)) for c in columns]) for row in rows],
        alias=exp.TableAlias(this=exp.to_identifier("t"), columns=[exp.to_identifier(p) for p in positions]))
    return exp.select(*selects).from_(values)


def typed(spark: Any, query: exp.Query, types: Mapping[str, str], add_missing: bool) -> exp.Query:
    """``query`` with its columns cast to ``types`` (and, with ``add_missing``, NULLs for typed columns it lacks)."""
    if not types:
        return query
    have = [c for c in spark.sql(render(query)).columns]
    selects = [_cast(exp.column(c, quoted=True), types.get(c.lower())).as_(c, quoted=True) for c in have]
    if add_missing:
        lowered = {c.lower() for c in have}
        selects += [_cast(exp.null(), t).as_(c, quoted=True) for c, t in types.items() if c not in lowered]
    return exp.select(*selects).from_(exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier("q"))))


def literal(value: Any, spark_type: str | None = None) -> exp.Expression:
    """A YAML/CSV value as a SQL literal (a mapping a STRUCT, or a MAP where the type says so).

    >>> literal({"a": 1}).sql("spark"), literal({"a": 1}, "MAP<STRING, INT>").sql("spark"), literal(date(2024, 1, 2)).sql("spark")
    ('STRUCT(1 AS a)', "MAP('a', 1)", "CAST('2024-01-02' AS DATE)")
    """
    if value is None:
        return exp.null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float, Decimal)):
        return exp.Literal.number(value)
    if isinstance(value, datetime):
        text = exp.Literal.string(value.isoformat(sep=" "))
        return text if spark_type else exp.cast(text, "TIMESTAMP")
    if isinstance(value, date):
        return exp.Literal.string(value.isoformat()) if spark_type else exp.cast(
            exp.Literal.string(value.isoformat()), "DATE")
    if isinstance(value, (list, tuple)):
        return exp.Array(expressions=[literal(v) for v in value])
    if isinstance(value, dict):
        if spark_type and spark_type.upper().startswith("MAP"):
            return exp.VarMap(keys=exp.Array(expressions=[literal(k) for k in value]),
                              values=exp.Array(expressions=[literal(v) for v in value.values()]))
        return exp.Struct(expressions=[exp.PropertyEQ(this=exp.to_identifier(str(k)), expression=literal(v))
                                       for k, v in value.items()])
    return exp.Literal.string(str(value))


def _cast(expression: exp.Expression, spark_type: str | None) -> exp.Expression:
    if not spark_type:
        return expression
    try:
        return exp.cast(expression, exp.DataType.build(spark_type, dialect="spark"))
    except SQLGLOT_ERRORS:  # a type sqlglot does not know (void): the value as it is
        return expression


def onto_fixtures(query: exp.Expression, views: dict[str, exp.Table], test: UnitTest, reader: str = "") -> Any:
    """``query`` with catalog-qualified inputs mapped too; any other table it still reads is a missing input."""
    ctes = {c.alias_or_name.lower() for c in query.find_all(exp.CTE)}
    missing: list[str] = []

    def onto(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.Table) or not node.name:
            return node
        full = ".".join(p.name for p in node.parts).lower()
        if full not in views and node.catalog:  # spark_catalog.raw.t is the input raw.t
            full = f"{node.db}.{node.name}".lower()
        if full in views:
            table = views[full].copy()
            table.set("alias", node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name)))
            return table
        if not node.db and (node.name.startswith(VIEW_PREFIX) or node.name.lower() in ctes):
            return node
        missing.append("itself (@this_model)" if node.name.lower().startswith(MACRO_PREFIX) else full)
        return node

    query = query.transform(onto)
    if missing:
        names = ", ".join(dict.fromkeys(missing))
        raise ModelDefinitionError(
            f"{where(test)}: {reader or 'model ' + test.model} reads {names}, which inputs: does not give; add its "
            f"rows (inputs: {names.split(', ')[0]}: rows: [...], or rows: [] with columns:), so that no real table "
            "is read")
    return query
