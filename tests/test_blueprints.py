"""Blueprints, as SQLMesh defines them: one SQL or Python model file standing for several models, one per entry
of its ``blueprints``, each rendered with the entry's variables and re-parsed from state on its own."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from chispa import assert_df_equality

from conftest import call as _call
from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals import to_ms
from pyspark_incr.model import python_model
from pyspark_incr.model.definition import parse_model, parse_models, parse_python_models, reparse
from pyspark_incr.model.fingerprint import data_hash
from pyspark_incr.project.loader import load_project

#: The example of the spec (sqlmesh-macros.md, "Blueprint variables").
SPEC_EXAMPLE = """MODEL (
  name @customer.some_table,
  kind FULL,
  blueprints (
    (customer := customer1, field_a := x, field_b := y, field_c := 'foo'),
    (customer := customer2, field_a := z, field_b := w, field_c := 'bar')
  )
);

SELECT
  @field_a,
  @{field_b} AS field_b,
  @field_c AS @{field_c}
FROM @customer.some_source
"""


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


# --- parsing (pure Python) ------------------------------------------------------------------------------------------

def test_the_spec_example_makes_one_model_per_blueprint_with_its_name_and_query_rendered():
    models = parse_models(SPEC_EXAMPLE, "models/some_table.sql")

    assert [(m.name, m.query, m.depends_on) for m in models] == [
        ("customer1.some_table", "SELECT x, y AS field_b, 'foo' AS foo FROM customer1.some_source",
         ("customer1.some_source",)),
        ("customer2.some_table", "SELECT z, w AS field_b, 'bar' AS bar FROM customer2.some_source",
         ("customer2.some_source",)),
    ]
    assert {m.located for m in models} == {"models/some_table.sql: line 2, column 3"}


def test_blueprint_variables_win_over_project_variables_and_blueprint_var_reads_them_with_a_default():
    text = ("MODEL (name @{customer}.t, kind FULL, blueprints ((customer := c1, n := 1), (customer := c2, n := 2)));\n"
            "SELECT @BLUEPRINT_VAR('n') AS n, @BLUEPRINT_VAR('missing', 'none') AS d, @region AS r, @n AS again")

    models = parse_models(text, "t.sql", {}, {"n": 99, "region": "eu"})

    assert [(m.name, m.query) for m in models] == [
        ("c1.t", "SELECT 1 AS n, 'none' AS d, 'eu' AS r, 1 AS again"),
        ("c2.t", "SELECT 2 AS n, 'none' AS d, 'eu' AS r, 2 AS again"),
    ]


def test_blueprints_given_by_each_over_a_project_list_variable():
    text = ("MODEL (name @customer.some_table, kind FULL,\n"
            "  blueprints @EACH(@values, x -> (customer := schema_@x)));\nSELECT 1 AS c")

    models = parse_models(text, "t.sql", {}, {"values": ["a", "b"]})

    assert [m.name for m in models] == ["schema_a.some_table", "schema_b.some_table"]


def test_blueprints_given_by_a_python_macro_of_the_project():
    from pyspark_incr.model.macro_python import from_sources

    macro = textwrap.dedent("""
        from sqlmesh import macro

        @macro()
        def gen_blueprints(evaluator):
            return "((customer := customer1, field_a := x), (customer := customer2, field_a := z))"
    """)
    text = "MODEL (name @customer.some_table, kind FULL, blueprints @gen_blueprints());\nSELECT @field_a AS a"

    models = parse_models(text, "t.sql", python_macros=from_sources((("macros/gen.py", macro),)))

    assert [(m.name, m.query) for m in models] == [("customer1.some_table", "SELECT x AS a"),
                                                   ("customer2.some_table", "SELECT z AS a")]


def test_each_blueprint_model_reparses_alone_from_its_stored_definition_and_context():
    models = parse_models(SPEC_EXAMPLE, "gone/some_table.sql", {"owner": "x"}, {"region": "eu"})
    reparse.cache_clear()

    again = [reparse(m.definition, m.source, m.context) for m in models]

    assert again == models
    assert [a.query for a in again] == [m.query for m in models]
    assert data_hash(again[0]) != data_hash(again[1])


def test_a_model_without_blueprints_keeps_the_context_it_had():
    assert parse_models("MODEL (name a.b, kind FULL); SELECT 1 AS x", "b.sql")[0].context == ""
    with_vars = parse_models("MODEL (name a.b, kind FULL); SELECT @v AS x", "b.sql", {}, {"v": 1})[0]
    assert with_vars.context == '{"defaults": {}, "variables": {"v": 1}}'


def test_a_changed_entry_changes_only_its_own_model():
    edited = SPEC_EXAMPLE.replace("field_a := z", "field_a := q")
    old, new = parse_models(SPEC_EXAMPLE, "m.sql"), parse_models(edited, "m.sql")

    assert data_hash(old[0]) == data_hash(new[0])
    assert data_hash(old[1]) != data_hash(new[1])


#: sqlmesh-macros.md's blueprint model, extended so its variables stand in every property SQLMesh renders.
PROPERTIES_EXAMPLE = """MODEL (
  name @customer.some_table,
  kind INCREMENTAL_BY_TIME_RANGE (time_column @tcol),
  cron @cr,
  owner @own,
  description 'desc @customer',
  start @st,
  tags [@tag],
  grain [@g],
  audits (not_null(columns := [@g]), forall(criteria := [@g > @floor])),
  physical_properties (p1 = @pp),
  virtual_properties (v1 = @pp),
  session_properties (s1 = @pp),
  blueprints (
    (customer := c1, tcol := ds, cr := '@hourly', own := 'alice', st := '2024-01-01', tag := t1, g := a, pp := 'x1',
     floor := 0, shared := bp1),
    (customer := c2, tcol := ds, cr := '@daily', own := 'bob', st := '2024-02-01', tag := t2, g := a, pp := 'x2',
     floor := 1, shared := bp2)
  )
);
CREATE TABLE IF NOT EXISTS @customer.pre_@g AS SELECT 1 AS x;
SELECT 1 AS a, CAST('2024-01-01' AS DATE) AS ds, @BLUEPRINT_VAR('shared') AS bv, @VAR('shared') AS pv, @shared AS sv,
  @BLUEPRINT_VAR('only_proj', 'dflt') AS bvp, @VAR('customer', 'nodef') AS vc, @VAR('only_proj') AS vop;
INSERT INTO @customer.post_tbl SELECT @g;
ON_VIRTUAL_UPDATE_BEGIN;
GRANT SELECT ON VIEW @this_model TO ROLE @own;
ON_VIRTUAL_UPDATE_END;
"""


def test_blueprint_variables_reach_every_property_and_statement_as_sqlmesh_renders_them():
    """SQLMesh 0.236.4 rendered this model (duckdb) to: cron @hourly/@daily, owner alice/bob, start 2024-01-01/
    2024-02-01, tags [t1]/[t2], grain a, time_column ds, audit arguments a, physical/virtual/session properties
    'x1'/'x2', the pre-statement into c1.pre_a, the post-statement SELECT a, the view's GRANT ... TO ROLE alice;
    a blueprint variable inside a string (description 'desc @customer') stays text."""
    models = parse_models(PROPERTIES_EXAMPLE, "models/bp.sql", {}, {"shared": "proj", "only_proj": "pv"})

    got = [(m.name, m.schedule.cron, m.owner, m.description, m.start_ms, m.tags, m.grains, m.kind.time_column,
            m.audits, m.physical_properties, m.virtual_properties, m.session_properties) for m in models]
    assert got == [
        ("c1.some_table", "@hourly", "alice", "desc @customer", to_ms("2024-01-01"), ("t1",), ("a",), "ds",
         (("not_null", (("columns", "ARRAY(a)"),)), ("forall", (("criteria", "ARRAY(a > 0)"),))),
         (("p1", "x1"),), (("v1", "x1"),), (("s1", "x1"),)),
        ("c2.some_table", "@daily", "bob", "desc @customer", to_ms("2024-02-01"), ("t2",), ("a",), "ds",
         (("not_null", (("columns", "ARRAY(a)"),)), ("forall", (("criteria", "ARRAY(a > 1)"),))),
         (("p1", "x2"),), (("v1", "x2"),), (("s1", "x2"),)),
    ]
    c1 = models[0]
    assert [s.sql for s in (*c1.pre_statements, *c1.post_statements)] == [
        "CREATE TABLE IF NOT EXISTS c1.pre_a AS SELECT 1 AS x", "INSERT INTO c1.post_tbl SELECT a"]
    assert [s for s, _ in c1.on_virtual_update] == ["GRANT SELECT ON VIEW __incr_macro__this_model TO ROLE alice"]
    reparse.cache_clear()
    assert [reparse(m.definition, m.source, m.context) for m in models] == models


def test_project_variables_are_rendered_in_properties_of_a_model_without_blueprints():
    model = parse_model("MODEL (name @schema.b, kind FULL, cron @every, owner @own); SELECT 1 AS x", "m.sql", {},
                        {"schema": "sales", "every": "@hourly", "own": "ann"})

    assert (model.name, model.schedule.cron, model.owner) == ("sales.b", "@hourly", "ann")


def test_blueprint_var_reads_only_the_entry_and_var_only_the_project_variables():
    """SQLMesh 0.236.4 rendered PROPERTIES_EXAMPLE's query for c1 as bp1 AS bv, 'proj' AS pv, bp1 AS sv,
    'dflt' AS bvp, 'nodef' AS vc, 'pv' AS vop: @name prefers the entry, @VAR never reads it, @BLUEPRINT_VAR never
    reads config.yaml's variables."""
    models = parse_models(PROPERTIES_EXAMPLE, "models/bp.sql", {}, {"shared": "proj", "only_proj": "pv"})

    assert models[0].query == ("SELECT 1 AS a, CAST('2024-01-01' AS DATE) AS ds, bp1 AS bv, 'proj' AS pv, bp1 AS sv, "
                               "'dflt' AS bvp, 'nodef' AS vc, 'pv' AS vop")
    with pytest.raises(ModelDefinitionError, match=r"blueprint variable 'only_proj' is not defined; give it in each "
                                                   r"entry of the model's blueprints, or give @BLUEPRINT_VAR a default"):
        parse_models(PROPERTIES_EXAMPLE.replace("'only_proj', 'dflt'", "'only_proj'"), "models/bp.sql", {},
                     {"shared": "proj", "only_proj": "pv"})


def test_merge_clauses_take_blueprint_variables_and_keep_runtime_macros_for_the_run():
    text = """MODEL (
  name @c.t,
  kind INCREMENTAL_BY_UNIQUE_KEY (
    unique_key @k,
    when_matched (WHEN MATCHED THEN UPDATE SET target.v = @newv),
    merge_filter target.region = @region AND target.ds >= @start_ds
  ),
  blueprints ((c := s1, k := id, newv := source.v, region := 'eu'), (c := s2, k := id2, newv := 0, region := 'us'))
);
SELECT 1 AS id, 1 AS id2, 1 AS v, 'eu' AS region, '2024-01-01' AS ds"""

    kinds = [m.kind for m in parse_models(text, "m.sql")]

    assert [(k.unique_key, k.when_matched, k.merge_filter) for k in kinds] == [
        (("id",), "WHEN MATCHED THEN UPDATE SET target.v = source.v", "target.region = 'eu' AND target.ds >= ${start_ds}"),
        (("id2",), "WHEN MATCHED THEN UPDATE SET target.v = 0", "target.region = 'us' AND target.ds >= ${start_ds}"),
    ]
    with pytest.raises(ModelDefinitionError, match=r"^m\.sql: line 5, column 59: unknown macro @nope"):
        parse_models(text.replace("@newv", "@nope"), "m.sql")


@pytest.mark.parametrize("prop, said", [
    ("cron @nope", r"^t\.sql: line 2, column 8: unknown macro @nope"),
    ("cron @IF(@start_ds > '2024-01-01', '@daily', '@hourly')",
     r"^t\.sql: line 2, column 3: cron must be known when the model is parsed, but @IF\(\.\.\.\) needs a value known "
     r"only when a batch runs"),
])
def test_a_property_whose_macros_cannot_be_rendered_when_parsing_is_refused_where_it_stands(prop, said):
    text = f"MODEL (name @a.t,\n  {prop},\n  blueprints ((a := x), (a := y)));\nSELECT 1 AS x"

    with pytest.raises(ModelDefinitionError, match=said):
        parse_models(text, "t.sql")


# --- refusals -------------------------------------------------------------------------------------------------------

def test_a_name_without_a_blueprint_variable_is_refused_naming_the_file():
    text = "MODEL (\n  name s.t,\n  blueprints ((a := 1), (a := 2))\n);\nSELECT @a AS x"

    with pytest.raises(ModelDefinitionError, match=r"^models/t\.sql: line 2, column 3: blueprints 1 and 2 both "
                                                   r"make model s\.t; the name must use a blueprint variable"):
        parse_models(text, "models/t.sql")


def test_a_variable_one_blueprint_lacks_is_refused_where_it_is_used():
    text = "MODEL (name @a.t, blueprints ((a := x, b := 1), (a := y)));\nSELECT\n  @b AS x"

    with pytest.raises(ModelDefinitionError, match=r"^model y\.t \(t\.sql\): line 3, column 3: unknown macro @b"):
        parse_models(text, "t.sql")


def test_a_name_variable_one_blueprint_lacks_is_refused_where_the_name_stands():
    text = "MODEL (\n  name @a.t,\n  blueprints ((a := x), (b := y))\n);\nSELECT 1 AS x"

    with pytest.raises(ModelDefinitionError, match=r"^t\.sql: line 2, column 8: unknown macro @a"):
        parse_models(text, "t.sql")


@pytest.mark.parametrize("given, said", [
    ("((a := x), (a))", r"line 3, column 3: blueprint 2 \('\(a\)'\) must be name := value pairs"),
    ("((a := x), 'y')", r"line 3, column 3: blueprint 2 \(\"'y'\"\) must be name := value pairs"),
    ("'x'", r"line 3, column 3: blueprints must be a list of entries"),
    ("((a := x, a := y))", r"line 3, column 3: blueprint 1 gives a twice"),
    ("()", r"line 3, column 3: blueprints is empty"),
])
def test_a_blueprint_entry_that_is_not_name_value_pairs_is_refused(given, said):
    text = f"MODEL (\n  name @a.t,\n  blueprints {given}\n);\nSELECT 1 AS x"

    with pytest.raises(ModelDefinitionError, match=r"^t\.sql: " + said):
        parse_models(text, "t.sql")


def test_a_registered_definition_with_blueprints_is_refused_saying_where_it_can_live():
    with pytest.raises(ModelDefinitionError, match=r"line 1, column 19: a definition with blueprints stands for "
                                                   r"several models.*models/ directory"):
        parse_model("MODEL (name @a.t, blueprints ((a := x), (a := y))); SELECT 1 AS x")


# --- Python models --------------------------------------------------------------------------------------------------

PYTHON_MODEL = '''
    import pandas as pd
    from sqlmesh import ExecutionContext, model


    @model(
        "@{customer}.some_table",
        kind="FULL",
        blueprints=[
            {"customer": "CUSTOMER1", "field_a": "x", "field_b": "y"},
            {"customer": "CUSTOMER2", "field_a": "z", "field_b": "w"},
        ],
        columns={"field_a": "text", "field_b": "text", "customer": "text"},
    )
    def entrypoint(context: ExecutionContext, start, end, execution_time, **kwargs) -> pd.DataFrame:
        return pd.DataFrame({
            "field_a": [context.blueprint_var("field_a")],
            "field_b": [context.blueprint_var("field_b")],
            "customer": [context.blueprint_var("customer")],
        })
'''


def _python_source(schema1: str = "customer1", schema2: str = "customer2") -> str:
    return textwrap.dedent(PYTHON_MODEL).replace("CUSTOMER1", schema1).replace("CUSTOMER2", schema2)


def test_a_python_model_with_blueprints_makes_one_model_each_that_reparses_alone():
    models = parse_python_models(_python_source(), "models/p.py")
    reparse.cache_clear()

    assert [m.name for m in models] == ["customer1.some_table", "customer2.some_table"]
    assert [reparse(m.definition, m.source, m.context) for m in models] == models
    assert models[0].content_hash != models[1].content_hash


def test_python_blueprints_given_as_a_macro_call():
    source = _python_source().replace(
        '''[
        {"customer": "customer1", "field_a": "x", "field_b": "y"},
        {"customer": "customer2", "field_a": "z", "field_b": "w"},
    ]''', '"@EACH(@values, x -> (customer := schema_@x, field_a := x))"')

    models = parse_python_models(source, "p.py", {}, {"values": ["a", "b"]})

    assert [m.name for m in models] == ["schema_a.some_table", "schema_b.some_table"]


def test_a_python_blueprint_name_without_a_variable_is_refused_naming_the_file_and_line():
    source = _python_source().replace('"@{customer}.some_table"', '"s.some_table"')

    with pytest.raises(ModelDefinitionError, match=r"^p\.py: line 6: two @model\(\.\.\.\) are named s\.some_table"):
        parse_python_models(source, "p.py")


@pytest.mark.parametrize("name, given, said", [
    ("@{missing}.t", '[{"a": 1}]', r"^model @\{missing\}\.t \(p\.py: line 2\): column 1 of the name: unknown macro "
                                   r"@\{missing\}"),
    ("@{a}.t", '["x"]', r"^model @\{a\}\.t \(p\.py\): @model\(blueprints=\.\.\.\) must be a list of dicts"),
])
def test_a_python_blueprint_without_the_name_variable_or_not_a_dict_is_refused(name, given, said):
    source = f"""from sqlmesh import model
@model("{name}", blueprints={given}, columns={{"x": "int"}})
def execute(context, **kwargs):
    return None
"""
    with pytest.raises(ModelDefinitionError, match=said):
        parse_python_models(source, "p.py")


GEN_BLUEPRINTS = """
from sqlmesh import macro

@macro()
def gen_blueprints(evaluator):
    return "((customer := c1, field_a := x), (customer := c2, field_a := 'z'))"
"""

PYTHON_FROM_MACRO = """
import pandas as pd
from sqlmesh import model

@model("@{customer}.pym", kind="FULL", blueprints="@gen_blueprints()", columns={"a": "text", "b": "text"},
       owner="@customer", description="@field_a", cron="@hourly")
def execute(context, start, end, execution_time, **kwargs):
    return pd.DataFrame({"a": [context.blueprint_var("field_a")], "b": [context.var("shared")]})
"""


@pytest.fixture(scope="module")
def macro_made_python_models():
    from pyspark_incr.model.macro_python import from_sources

    macros = from_sources((("macros/gen.py", GEN_BLUEPRINTS),))
    return parse_python_models(PYTHON_FROM_MACRO, "models/pym.py", {}, {"shared": "proj"}, python_macros=macros)


def test_python_blueprints_from_a_project_python_macro_render_the_model_arguments(macro_made_python_models):
    """SQLMesh 0.236.4 loaded this file into c1.pym (owner c1, description x) and c2.pym (owner c2, description z)."""
    models = macro_made_python_models
    reparse.cache_clear()

    assert [(m.name, m.owner, m.description, m.schedule.cron) for m in models] == [
        ("c1.pym", "c1", "x", "@hourly"), ("c2.pym", "c2", "z", "@hourly")]
    assert [reparse(m.definition, m.source, m.context) for m in models] == models


def test_a_python_models_execute_reads_its_own_blueprint_entry_when_it_runs(macro_made_python_models):
    """SQLMesh 0.236.4 gave context.blueprint_var the entry's SQL values (x, 'z'); here they are Python values.
    (The end-to-end test below runs such a model in Spark.)"""
    from pyspark_incr.model import python_run

    got = []
    for m in macro_made_python_models:
        stored = python_model.stored(m.context)
        context = python_model.ExecutionContext(None, {}, stored["variables"], stored["blueprint"])
        got.append(python_run.function(m)(context, None, None, None).to_dict("records"))

    assert got == [[{"a": "x", "b": "proj"}], [{"a": "z", "b": "proj"}]]


# --- end to end -----------------------------------------------------------------------------------------------------

@pytest.fixture()
def project(isolated, tmp_path):
    root = tmp_path / "project"
    a, b, c, d = (f"{isolated}_{n}" for n in ("a", "b", "c", "d"))
    write(root, "models/some_table.sql", f"""
        MODEL (
          name @customer.some_table,
          kind FULL,
          blueprints (
            (customer := {a}, field_a := x, field_c := 'foo'),
            (customer := {b}, field_a := y, field_c := 'bar')
          )
        );
        SELECT @field_a AS v, @field_c AS @{{field_c}}, @BLUEPRINT_VAR('field_c') AS tag FROM @customer.source
    """)
    write(root, "models/py_table.py", _python_source(c, d))
    return root, (a, b, c, d)


def test_a_project_with_sql_and_python_blueprints_is_applied_run_and_rerun_from_state(spark, project, tmp_path):
    from pyspark_incr.state import snapshot

    root, (a, b, c, d) = project
    for schema, rows in ((a, "(1, 2)"), (b, "(10, 20)")):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
        spark.sql(f"CREATE TABLE {schema}.source USING parquet AS SELECT * FROM VALUES {rows} AS t(x, y)")
    assert sorted(m.name for m in load_project(root)) == sorted(
        [f"{a}.some_table", f"{b}.some_table", f"{c}.some_table", f"{d}.some_table"])

    applied = _call(spark, "apply", project=str(root))

    assert applied and all(r.status == "ok" for r in applied), [(r.model, r.message) for r in applied]
    expected = {a: [(1, "foo", "foo")], b: [(20, "bar", "bar")]}
    for schema, cols in ((a, "v int, foo string, tag string"), (b, "v int, bar string, tag string")):
        assert_df_equality(spark.table(f"{schema}.some_table"), spark.createDataFrame(expected[schema], cols))
    for schema, fields in ((c, ("x", "y")), (d, ("z", "w"))):
        built = spark.createDataFrame([(*fields, schema)], "field_a string, field_b string, customer string")
        assert_df_equality(spark.table(f"{schema}.some_table"), built)

    # another application, the project directory gone: each model is rebuilt from its stored entry
    moved = tmp_path / "moved"
    shutil.move(str(root), moved)
    for cache in (reparse, snapshot.model_of, snapshot._read, snapshot.judgement_of, python_model.registrations):
        cache.cache_clear()
    spark.sql(f"INSERT INTO {b}.source VALUES (30, 40)")
    try:
        restated = [r for name in (b, d) for r in _call(spark, "restate", model=f"{name}.some_table")]
        ran = _call(spark, "run")
    finally:
        shutil.move(str(moved), root)

    assert all(r.status == "ok" for r in [*restated, *ran]), [(r.model, r.message) for r in [*restated, *ran]]
    assert {r.model for r in restated} >= {f"{b}.some_table", f"{d}.some_table"}
    assert_df_equality(spark.table(f"{d}.some_table"),
                       spark.createDataFrame([("z", "w", d)], "field_a string, field_b string, customer string"))
    assert_df_equality(spark.table(f"{b}.some_table"),
                       spark.createDataFrame([(20, "bar", "bar"), (40, "bar", "bar")], "v int, bar string, tag string"),
                       ignore_row_order=True)
