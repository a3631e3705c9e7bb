"""SQLMesh's macro functions, one fixture per example of the spec (sqlmesh-macros.md) with a rendered output.

``fixtures/macro_functions/<case>.sql``: optional ``-- schemas: {json}`` (the columns ``@STAR`` and
``@UNION`` read) and ``-- variables: {json}`` (project variables) lines, the query as the spec writes
it (DuckDB, SQLMesh's default dialect; ``table`` renamed ``tbl``, a reserved word in Spark), then
``-- expected:`` and the Spark SQL it must become. No Spark needed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import sqlglot

from pyspark_incr.errors import ModelDefinitionError, UnknownMacroError
from pyspark_incr.intervals import Interval, to_ms
from pyspark_incr.model.definition import parse_model
from pyspark_incr.model.macro_eval import MacroEvaluator
from pyspark_incr.model.macro_parse import parse
from pyspark_incr.model.macros import hide_macros
from pyspark_incr.model.render import render_query

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "macro_functions").glob("*.sql"))


def _case(path: Path) -> tuple[dict, dict, str, str]:
    text = path.read_text(encoding="utf-8")
    schemas = variables = {}
    while text.startswith("-- schemas:") or text.startswith("-- variables:"):
        first, text = text.split("\n", 1)
        key, value = first[3:].split(":", 1)
        if key == "schemas":
            schemas = json.loads(value)
        else:
            variables = json.loads(value)
    query, expected = text.split("-- expected:\n")
    return schemas, variables, query.strip(), expected.strip()


def _compile(query: str, schemas: dict, variables: dict, dialect: str = "duckdb") -> str:
    evaluator = MacroEvaluator(dialect=dialect, variables=variables, where="model t.m", schemas=schemas.get)
    statements = [s for s in parse(hide_macros(query), dialect) if s is not None]
    return evaluator.evaluate_statements(statements).sql("spark")


def _same(got: str, expected: str) -> bool:
    if re.sub(r"\s+", " ", got) == re.sub(r"\s+", " ", expected):
        return True
    return sqlglot.parse_one(got, read="spark") == sqlglot.parse_one(expected, read="spark")


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_spec_example_renders_as_sqlmesh_documents(path: Path):
    schemas, variables, query, expected = _case(path)
    got = _compile(query, schemas, variables)
    assert _same(got, expected), f"\n got: {got}\nwant: {expected}"


def test_every_fixture_is_a_distinct_case():
    assert len(FIXTURES) >= 45
    assert len({_case(p)[2] for p in FIXTURES}) == len(FIXTURES)


def _model(query: str, **kw):
    return parse_model(f"MODEL (name s.m, kind FULL, dialect duckdb);\n{query}", **kw)


def _render(query: str, day: str) -> str:
    start = to_ms(day)
    return render_query(query, Interval(start, start + 86_400_000), start, where="model s.m").sql("spark")


def test_if_on_a_runtime_variable_is_kept_for_the_run_and_renders_per_interval():
    model = _model("SELECT @IF(@start_ds > '2024-06-01', 'late', 'early') AS half, "
                   "@EACH([a, b], c -> @IF(@start_ds > '2024-06-01', c, 0) AS @{c}_late) FROM t")
    assert "${start_ds}" in model.query
    again = parse_model(f"MODEL (name s.m, kind FULL); {model.query}")
    assert again.query == model.query, "the stored query parses again unchanged"
    assert _render(model.query, "2024-01-01") == "SELECT 'early' AS half, 0 AS a_late, 0 AS b_late FROM t"
    assert _render(model.query, "2024-07-01") == "SELECT 'late' AS half, a AS a_late, b AS b_late FROM t"


def test_date_spine_over_runtime_variables_passes_them_through():
    model = _model("SELECT * FROM (@DATE_SPINE('day', @start_ds, @end_ds)) AS d")
    assert "${start_ds}" in model.query and "__incr_macro__" not in model.query.lower()
    assert "SEQUENCE(CAST('2024-01-01' AS DATE), CAST('2024-01-01' AS DATE)" in _render(model.query, "2024-01-01")


def test_runtime_stage_is_evaluating_when_the_query_runs():
    model = _model("SELECT @IF(@runtime_stage = 'evaluating', 1, 0) AS running")
    assert _render(model.query, "2024-01-01") == "SELECT 1 AS running"


def test_star_of_a_relation_whose_columns_parsing_cannot_know_waits_for_the_run():
    model = _model("SELECT @STAR(raw.orders) FROM raw.orders")
    assert model.query.lower().startswith("select __incr_macro__star(")
    assert model.depends_on == ("raw.orders",)


def test_union_of_relations_parsing_cannot_know_waits_for_the_run_and_names_them_as_parents():
    model = _model("WITH u AS (@UNION('distinct', raw.a, raw.b)) SELECT * FROM u")
    assert model.query.lower() == "with u as (__incr_macro__union('distinct', raw.a, raw.b)) select * from u"
    assert model.depends_on == ("raw.a", "raw.b")


def test_union_as_the_whole_query_is_held_in_a_cte_until_the_run():
    model = _model("@UNION('distinct', raw.a, raw.b)")
    assert model.query.lower() == ("with __incr_whole_query as (__incr_macro__union('distinct', raw.a, raw.b)) "
                                   "select * from __incr_whole_query")
    assert model.depends_on == ("raw.a", "raw.b")


def test_an_unknown_macro_function_is_refused_by_name_and_place_listing_the_known_ones():
    with pytest.raises(UnknownMacroError) as info:
        parse_model("MODEL (name s.m, kind FULL);\nSELECT a,\n  @NOPE(a) AS b FROM t", source="models/m.sql")
    message = str(info.value)
    assert "line 3, column 3: unknown macro @NOPE" in message
    assert "@EACH" in message and "@STAR" in message and "@start_ds" in message


def test_an_unknown_interpolated_variable_is_refused_where_it_stands():
    with pytest.raises(UnknownMacroError, match=r"line 2, column 15: unknown macro @\{suffix\}"):
        parse_model("MODEL (name s.m, kind FULL);\nSELECT a AS b_@{suffix} FROM t", source="models/m.sql")


def test_a_clause_condition_that_needs_a_runtime_value_is_refused():
    with pytest.raises(ModelDefinitionError, match="condition of a clause macro"):
        _model("SELECT a FROM t @WHERE(@start_ds > '2024-01-01') a > 1")


def test_the_safety_check_judges_what_a_macro_function_writes_not_the_text_as_written():
    from pyspark_incr.plan import safety

    model = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01');\n"
                        "SELECT ds, @EACH([v], c -> SUM(c) OVER (ORDER BY ds) AS c) FROM raw.t "
                        "WHERE ds BETWEEN @start_ds AND @end_ds")

    refusal = safety.judge(model, ()).refusal
    assert "SUM(v) OVER (ORDER BY ds)" in refusal and "window function" in refusal
