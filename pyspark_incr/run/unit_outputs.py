"""A unit test's outputs checked: the rows a model gave against the expected ones (listed or a query's),
expected values cast to the types of the actual columns, and the diff of :mod:`.unit_diff` when they differ."""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.definition import Model
from pyspark_incr.project.unit_tests import Data, UnitTest
from pyspark_incr.run.unit_diff import compare
from pyspark_incr.run.unit_inputs import onto_fixtures, rows_query, typed, where
from pyspark_incr.sqltext import render


def check_query(spark: Any, test: UnitTest, model: Model, query: exp.Query, views: dict[str, exp.Table]) -> list[str]:
    """The failures of a SQL model's CTE outputs, then of its query output."""
    failures = []
    with_ = query.args.get("with_") or query.args.get("with")
    ctes = {c.alias_or_name.lower(): c for c in query.ctes}
    for name, data in test.ctes:
        if name not in ctes:
            raise ModelDefinitionError(f"{where(test)}: outputs.ctes.{name}: the query of model {model.name} has "
                                       f"no CTE {name} (its CTEs: {', '.join(ctes) or 'none'})")
        cte = ctes[name].this
        names = [s.alias_or_name for s in cte.selects]
        alone = exp.select(*(exp.Star() if n == "*" else exp.column(n, quoted=True) for n in names)).from_(
            exp.to_table(ctes[name].alias_or_name))
        alone.set("with_" if "with_" in query.args else "with", with_.copy())
        failures += check_output(spark, test, f"CTE {name}", spark.sql(render(alone)), data,
                                 cte.args.get("order") is not None, views)
    if test.query is not None:
        failures += check_output(spark, test, "query", spark.sql(render(query)), test.query,
                                 query.args.get("order") is not None, views)
    return failures


def check_output(spark: Any, test: UnitTest, label: str, actual_df: Any, data: Data, ordered: bool,
                 views: dict[str, exp.Table]) -> list[str]:
    """The failure of one output (``label``: ``query`` or ``CTE <name>``), if ``actual_df``'s rows differ from
    ``data``'s."""
    field = "outputs.query" if label == "query" else f"outputs.ctes.{label[4:]}"
    at = f"{where(test)}: {field}"
    names = [c.lower() for c in actual_df.columns]
    types = {n: f.dataType.simpleString() for n, f in zip(names, actual_df.schema.fields)}
    if data.rows is not None:
        given = list(dict.fromkeys(k for row in data.rows for k in row))
    else:
        expected_query = onto_fixtures(sqlglot.parse_one(data.query, read="spark"), views, test,
                                       f"the query of {field}")
        given = [c.lower() for c in spark.sql(render(expected_query)).columns]
    unknown = [c for c in given if c not in types]
    if unknown:
        raise ModelDefinitionError(f"{at}: column(s) {', '.join(unknown)} are not in the output "
                                   f"(its columns: {', '.join(names)}); fix their names")
    columns = [c for c in names if c in given] if data.partial else names
    if data.rows is not None:
        expected = [tuple(r) for r in _collect(spark, rows_query(data.rows, columns, types, at), at)] \
            if data.rows else []
    else:
        subquery = exp.Subquery(this=typed(spark, expected_query, types, True),
                                alias=exp.TableAlias(this=exp.to_identifier("e")))
        expected = [tuple(r) for r in _collect(
            spark, exp.select(*(exp.column(c, quoted=True) for c in columns)).from_(subquery), at)]
    positions = [names.index(c) for c in columns]
    actual = [tuple(row[i] for i in positions) for row in actual_df.collect()]
    diff = compare([actual_df.columns[i] for i in positions], expected, actual, ordered)
    return [f"{label}: {diff}"] if diff else []


def _collect(spark: Any, query: exp.Query, at: str) -> list:
    from pyspark.errors import PySparkException

    try:
        return spark.sql(render(query)).collect()
    except PySparkException as e:
        first = str(e).split("\n", 1)[0]
        raise ModelDefinitionError(f"{at}: the expected rows cannot be read as the output's column types: "
                                   f"{first}") from None
