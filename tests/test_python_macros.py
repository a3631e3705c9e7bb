"""A project's Python macros (``macros/*.py`` with ``@macro()``), written for SQLMesh and loaded unedited."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from chispa import assert_df_equality

from conftest import call as _call
from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals import Interval, to_ms
from pyspark_incr.model import macro_python
from pyspark_incr.model.definition import parse_model, reparse
from pyspark_incr.model.render import render_query
from pyspark_incr.project.loader import load

#: Written as SQLMesh's docs write macros: every import is SQLMesh's.
MACROS = '''\
from sqlglot import exp
from sqlmesh import macro, SQL
from sqlmesh.core.macros import MacroEvaluator


@macro()
def between_where(evaluator, column_name: SQL, low_val: SQL, high_val: SQL):
    return f"{column_name} BETWEEN {low_val} AND {high_val}"


@macro()
def make_indicators(evaluator, string_column, values):
    return [f"CASE WHEN {string_column} = '{v}' THEN '{v}' ELSE NULL END AS {string_column}_{v}"
            for v in values.expressions]


@macro()
def add_args(evaluator, *args: int):
    return sum(args)


@macro()
def arg_in_123(evaluator, my_arg: int):
    return my_arg in [1, 2, 3]


@macro()
def get_macro_var(evaluator, macro_var: str):
    return evaluator.locals[macro_var]


@macro()
def region(evaluator):
    return exp.Literal.string(evaluator.var("region", "eu"))


@macro()
def day_label(evaluator):
    return exp.Literal.string("day " + evaluator.locals["start_ds"])


@macro()
def broken(evaluator):
    return 1 / 0


def _shown(value):
    return f"{type(value).__name__}:{value.name}"


@macro()
def show_vars(evaluator):
    return exp.Literal.string(f"{_shown(evaluator.blueprint_var('field_a'))}|{evaluator.blueprint_var('region', 'dflt')}"
                              f"|{evaluator.var('region', 'none')}|{evaluator.var('field_a', 'none')}")


@macro()
def show_vars_per_day(evaluator):
    return exp.Literal.string(f"{evaluator.locals['start_ds']}|{_shown(evaluator.blueprint_var('field_a'))}|"
                              f"{evaluator.var('region', 'none')}")
'''


def _project(root: Path, models: dict[str, str], variables: str = "") -> Path:
    (root / "macros" / ".hidden").mkdir(parents=True)
    (root / "macros" / "__init__.py").write_text("")
    (root / "macros" / "util.py").write_text(MACROS)
    (root / "macros" / ".hidden" / "skipped.py").write_text("this is not python")
    (root / "models").mkdir()
    for name, text in models.items():
        (root / "models" / f"{name}.sql").write_text(text)
    if variables:
        (root / "config.yaml").write_text(variables)
    return root


def _one(tmp_path: Path, query: str, variables: str = ""):
    root = _project(tmp_path, {"m": f"MODEL (name s.m, kind FULL);\n{query}"}, variables)
    return load(root).models[0]


@pytest.mark.parametrize("query, expected", [
    ("SELECT a FROM t WHERE @between_where(a, 1, 3)", "SELECT a FROM t WHERE a BETWEEN 1 AND 3"),
    ("SELECT @make_indicators(vehicle, [truck, bus]) FROM t",
     "SELECT CASE WHEN vehicle = 'truck' THEN 'truck' ELSE NULL END AS vehicle_truck, "
     "CASE WHEN vehicle = 'bus' THEN 'bus' ELSE NULL END AS vehicle_bus FROM t"),
    ("SELECT @add_args(1, 2, 3) AS total", "SELECT 6 AS total"),
    ("SELECT @arg_in_123(1) AS hit", "SELECT TRUE AS hit"),
    ("@DEF(my_macro_var, 1);\nSELECT @get_macro_var('my_macro_var') AS macro_var_value",
     "SELECT 1 AS macro_var_value"),
    ("SELECT @region() AS r", "SELECT 'apac' AS r"),
])
def test_a_sqlmesh_python_macro_loads_unedited_and_renders_as_documented(tmp_path, query, expected):
    model = _one(tmp_path, query, "variables:\n  region: apac\n")
    assert model.query == expected


def test_only_models_calling_a_python_macro_carry_its_file(tmp_path):
    root = _project(tmp_path, {"a": "MODEL (name s.a, kind FULL); SELECT @add_args(1) AS x",
                               "b": "MODEL (name s.b, kind FULL); SELECT 1 AS x"})
    by_name = {m.name: m for m in load(root).models}
    assert "def add_args" in by_name["s.a"].context
    assert by_name["s.b"].context == "", "a model without Python macros keeps the context it always had"


def test_a_macro_reading_a_runtime_variable_runs_per_interval_and_reparses_without_the_project(tmp_path):
    model = _one(tmp_path, "SELECT @day_label() AS label")
    assert model.query.lower() == "select __incr_macro__day_label() as label"
    shutil.rmtree(tmp_path / "macros")
    macro_python._run.cache_clear()
    reparse.cache_clear()
    again = reparse(model.definition, model.source, model.context)
    assert again.query == model.query and again.context == model.context
    day = Interval(to_ms("2024-03-01"), to_ms("2024-03-02"))
    # As a run renders it: from the record alone (its state snapshot), the macro file from its context.
    macro_python._run.cache_clear()
    rendered = render_query(again.query, day, 0, where="m", context=again.context)
    assert rendered.sql("spark") == "SELECT 'day 2024-03-01' AS label"


def test_a_macro_that_raises_names_the_model_the_macro_and_the_error(tmp_path):
    with pytest.raises(ModelDefinitionError, match=r"model s\.m .*macro @broken failed: ZeroDivisionError"):
        _one(tmp_path, "SELECT @broken() AS x")


def test_an_unknown_macro_lists_the_projects_python_macros(tmp_path):
    with pytest.raises(ModelDefinitionError, match=r"unknown macro @NOPE; .*@add_args"):
        _one(tmp_path, "SELECT @NOPE() AS x")


def test_a_python_macro_reads_blueprint_and_project_variables_apart_when_parsed_and_when_run(tmp_path):
    """SQLMesh 0.236.4 gave such a macro, for the entry (field_a := x): evaluator.blueprint_var('field_a') the
    SQL value (Column x), blueprint_var of a project variable its default, var of a blueprint variable its default."""
    text = ("MODEL (name @c.m, kind FULL, blueprints ((c := s1, field_a := x), (c := s2, field_a := 'z')));\n"
            "SELECT @show_vars() AS now, @show_vars_per_day() AS later")
    root = _project(tmp_path, {"m": text}, "variables:\n  region: apac\n")
    models = sorted(load(root).models, key=lambda m: m.name)
    day = Interval(to_ms("2024-03-01"), to_ms("2024-03-02"))

    rendered = [render_query(m.query, day, 0, where="m", context=m.context).sql("spark") for m in models]

    assert rendered == [
        "SELECT 'Column:x|dflt|apac|none' AS now, '2024-03-01|Column:x|apac' AS later",
        "SELECT 'Literal:z|dflt|apac|none' AS now, '2024-03-01|Literal:z|apac' AS later",
    ]


def test_from_sqlmesh_import_macro_runs_without_sqlmesh_installed():
    found = macro_python.from_sources((("m.py", "from sqlmesh.core.macros import macro\n@macro()\ndef one(e):\n"
                                                "    return 1\n"),))
    assert list(found.functions) == ["one"]


# =========================================================================== end to end in Spark


def test_a_project_with_python_macros_applies_and_runs_after_its_directory_is_gone(spark, isolated, tmp_path):
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}")
    spark.sql(f"CREATE TABLE {isolated}.events USING parquet AS SELECT DATE_ADD(DATE'2024-01-01', CAST(id % 3 AS INT))"
              " AS ds, CAST(id AS DOUBLE) AS amount, IF(id % 2 = 0, 'truck', 'bus') AS vehicle FROM range(9)")
    model = (f"MODEL (name {isolated}.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 1), "
             "start '2024-01-01', "
             "cron '@daily');\n"
             "SELECT ds, @make_indicators(vehicle, [truck]), @add_args(1, 2) AS three, @day_label() AS label,\n"
             f"  @STAR({isolated}.events, exclude := [ds, vehicle], prefix := 'src_')\n"
             f"FROM {isolated}.events WHERE ds BETWEEN @start_ds AND @end_ds AND @between_where(amount, 0, 6)")
    root = _project(tmp_path / "p", {"daily": model})

    applied = _call(spark, "apply", project=str(root), execution_time="2024-01-03 00:00:00")
    assert [(r.status, r.message or "") for r in applied] == [("ok", ""), ("ok", "")]
    shutil.rmtree(root)
    macro_python._run.cache_clear()
    reparse.cache_clear()
    rows = _call(spark, "run", execution_time="2024-01-04 00:00:00")

    assert [(r.model, r.status, r.message or "") for r in rows] == [(f"{isolated}.daily", "ok", "")]

    got = spark.table(f"{isolated}.daily").select("ds", "vehicle_truck", "three", "label", "src_amount")
    expected = spark.sql(
        f"SELECT ds, IF(CAST(amount AS INT) % 2 = 0, 'truck', NULL) AS vehicle_truck, 3 AS three, "
        f"CONCAT('day ', CAST(ds AS STRING)) AS label, amount AS src_amount FROM {isolated}.events WHERE amount <= 6")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
