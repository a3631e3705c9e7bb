"""Macros resolved at parse time and at run time, and a project's config.yaml (no Spark needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals import Interval, to_ms
from pyspark_incr.model.definition import parse_model, reparse
from pyspark_incr.model.render import render_query
from pyspark_incr.plan.environment import table_for
from pyspark_incr.project.config import load_config
from pyspark_incr.project.loader import load

DAY = Interval(to_ms("2024-01-01"), to_ms("2024-01-02"))


def _render(query: str, **kw) -> str:
    return render_query(query, DAY, to_ms("2024-01-03"), where="model m", **kw).sql("spark")


def test_def_statements_and_var_calls_are_substituted_when_the_model_is_parsed():
    model = parse_model(
        "MODEL (name a.b, kind FULL);\n@DEF(threshold, 10);\n@DEF(label, 'big');\n"
        "SELECT @label AS label, @VAR('region', 'eu') AS region FROM t WHERE x > @threshold"
    )
    assert model.query == "SELECT 'big' AS label, 'eu' AS region FROM t WHERE x > 10"


def test_project_variables_fill_at_names_and_var_calls_and_enter_the_data_fingerprint():
    from pyspark_incr.model.fingerprint import data_hash

    text = "MODEL (name a.b, kind FULL); SELECT @min_amount AS m, @VAR('min_amount') AS n"
    one, two = parse_model(text, variables={"min_amount": 1}), parse_model(text, variables={"min_amount": 2})
    assert one.query == "SELECT 1 AS m, 1 AS n"
    assert data_hash(one) != data_hash(two)


def test_a_var_call_without_a_value_or_default_is_an_error_saying_how_to_define_it():
    with pytest.raises(ModelDefinitionError, match="variable 'nope' is not defined; define it under variables:"):
        parse_model("MODEL (name a.b, kind FULL); SELECT @VAR('nope') AS x")


def test_a_stored_model_parses_again_with_the_context_it_was_applied_with():
    model = parse_model("MODEL (name a.b, kind FULL); SELECT @x AS x", "/p/models/b.sql", {"owner": "me"}, {"x": 5})
    again = reparse(model.definition, model.source, model.context)
    assert again == model and again.owner == "me"


def test_this_model_renders_as_the_models_own_table_in_from_and_as_its_name_elsewhere():
    model = parse_model("MODEL (name s.m, kind FULL); SELECT @this_model AS me, * FROM @this_model")
    sql = _render(model.query, this_table=table_for("s.m", "dev"))
    assert sql == "SELECT '`s__dev`.`m`' AS me, * FROM `s__dev`.`m`"
    assert model.depends_on == (), "a model reading itself through @this_model has no parent"


def test_embedded_models_are_inlined_as_subqueries_rendered_for_the_same_interval():
    embedded = {"s.e": "SELECT id FROM raw.t WHERE ds = ${start_ds}"}
    sql = _render("SELECT * FROM s.e AS x JOIN s.p ON TRUE", table_map={"s.p": table_for("s.p", "dev")}, embedded=embedded)
    assert sql == "SELECT * FROM (SELECT id FROM raw.t WHERE ds = '2024-01-01') AS x JOIN `s__dev`.`p` AS p ON TRUE"


def test_end_hour_of_an_hourly_interval_is_its_last_hour():
    hour = Interval(to_ms("2024-01-01 05:00:00"), to_ms("2024-01-01 06:00:00"))
    sql = render_query("SELECT @start_hour AS a, @end_hour AS b", hour, 0, where="m").sql("spark")
    assert sql == "SELECT 5 AS a, 5 AS b"


def _write(root: Path, name: str, text: str) -> None:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text)


def test_config_defaults_apply_where_a_model_says_nothing(tmp_path: Path):
    _write(tmp_path, "config.yaml", "model_defaults:\n  dialect: duckdb\n  start: '2024-02-01'\n  cron: '@hourly'\n  owner: team\n")
    _write(tmp_path, "models/a.sql", "MODEL (name s.a, kind FULL); SELECT 1::INT AS x")
    _write(tmp_path, "models/b.sql", "MODEL (name s.b, kind FULL, owner 'other', cron '@daily'); SELECT 1 AS x")
    models = {m.name: m for m in load(tmp_path).models}
    assert (models["s.a"].dialect, models["s.a"].owner, models["s.a"].schedule.unit.value) == ("duckdb", "team", "hour")
    assert models["s.a"].start_ms == to_ms("2024-02-01") and models["s.a"].query == "SELECT CAST(1 AS INT) AS x"
    assert (models["s.b"].owner, models["s.b"].schedule.cron) == ("other", "@daily")


def test_sqlmesh_only_config_sections_are_ignored_and_unknown_keys_get_a_suggestion(tmp_path: Path):
    _write(tmp_path, "config.yaml", "gateways:\n  local: {}\nmodel_defaults:\n  dialect: spark\n")
    assert load_config(tmp_path).model_defaults == {"dialect": "spark"}
    _write(tmp_path, "config.yaml", "model_defaults:\n  dialekt: duckdb\n")
    with pytest.raises(ModelDefinitionError, match="unknown model_defaults key 'dialekt'; did you mean 'dialect'"):
        load_config(tmp_path)


def test_before_all_statements_are_refused_not_skipped(tmp_path: Path):
    _write(tmp_path, "config.yaml", "before_all:\n  - CREATE TABLE IF NOT EXISTS a.b (x INT)\n")
    with pytest.raises(ModelDefinitionError, match="before_all is not supported yet; run those statements in the job"):
        load_config(tmp_path)


def test_a_disabled_model_is_not_loaded(tmp_path: Path):
    _write(tmp_path, "models/a.sql", "MODEL (name s.a, kind FULL, enabled false); SELECT 1 AS x")
    assert load(tmp_path).models == ()


def test_external_models_yaml_declares_leaf_models_with_spark_types(tmp_path: Path):
    _write(tmp_path, "models/.keep", "")
    _write(tmp_path, "external_models.yaml", "- name: raw.orders\n  description: \"it's raw\"\n  columns:\n    id: int\n    note: text\n")
    (model,) = load(tmp_path).models
    assert (model.name, model.kind.name, model.columns, model.description) == (
        "raw.orders", "EXTERNAL", (("id", "INT"), ("note", "STRING")), "it's raw")


def test_a_seed_without_its_csv_is_an_error_naming_the_file(tmp_path: Path):
    _write(tmp_path, "models/s.sql", "MODEL (name s.seed, kind SEED (path '../seeds/missing.csv'))")
    with pytest.raises(ModelDefinitionError, match=r"model s.seed: seed file .*seeds/missing.csv cannot be read"):
        load(tmp_path)
