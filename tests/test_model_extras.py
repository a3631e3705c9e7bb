"""session_properties, virtual_properties and ON_VIRTUAL_UPDATE statements: metadata that decides
how a model builds and how its environment view looks, never what it holds."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError, ModelSyntaxError, UnknownMacroError
from pyspark_incr.model import extras
from pyspark_incr.model.definition import parse_model
from pyspark_incr.model.fingerprint import data_hash, metadata_hash
from pyspark_incr.writers import promote
from conftest import call as _call

T = "2024-01-02 00:00:00"
BASE = "MODEL (name a.b, kind FULL{}); SELECT 1 AS x"


def _full(name: str, props: str, query: str = "SELECT 1 AS x", after: str = "") -> str:
    return f"MODEL (name {name}, kind FULL, start '2024-01-01', cron '@daily'{props});\n{query};\n{after}"


# --------------------------------------------------------------------------- parsing (no Spark)


def test_session_properties_take_dotted_keys_bare_or_quoted_with_literal_values():
    model = parse_model(BASE.format(", session_properties (spark.sql.shuffle.partitions = 4, "
                                    "'spark.sql.session.timeZone' = 'UTC', spark.sql.adaptive.enabled = false, "
                                    "spark.sql.sources.partitionOverwriteMode = dynamic)"))

    assert model.session_properties == (
        ("spark.sql.shuffle.partitions", "4"), ("spark.sql.session.timeZone", "UTC"),
        ("spark.sql.adaptive.enabled", "false"), ("spark.sql.sources.partitionOverwriteMode", "dynamic"))


@pytest.mark.parametrize("value, message", [
    ("(spark.sql.shuffle.partitions = [1])", "session_properties must be \\(key = value, ...\\) with literal values"),
    ("(a.b = 1, a.b = 2)", "session_properties sets a.b twice"),
    ("spark.sql.shuffle.partitions", "session_properties must be"),
])
def test_malformed_session_properties_are_refused_with_model_line_and_column(value, message):
    with pytest.raises(ModelDefinitionError, match=rf"model a\.b: line 2, column 3: {message}"):
        parse_model(f"MODEL (name a.b, kind FULL,\n  session_properties {value}); SELECT 1 AS x")


def test_virtual_properties_refuse_what_a_spark_view_cannot_have():
    with pytest.raises(ModelDefinitionError, match=r"model a\.b: line 1, column 29: virtual_properties "
                                                   r"creatable_type: Spark views have no creatable type"):
        parse_model(BASE.format(", virtual_properties (creatable_type = SECURE)"))
    with pytest.raises(ModelDefinitionError, match=r"virtual_properties owner is reserved by Spark"):
        parse_model(BASE.format(", virtual_properties (owner = 'me')"))


def test_the_three_are_metadata_a_change_keeps_the_data_fingerprint():
    base = parse_model(BASE.format(""))
    for props in (", session_properties (spark.sql.shuffle.partitions = 4)", ", virtual_properties (team = 'core')"):
        changed = parse_model(BASE.format(props))
        assert (data_hash(changed) == data_hash(base), metadata_hash(changed) == metadata_hash(base)) == (True, False)
    hooked = parse_model(BASE.format("") + ";\nON_VIRTUAL_UPDATE_BEGIN;\nSELECT 1;\nON_VIRTUAL_UPDATE_END;")
    assert (data_hash(hooked) == data_hash(base), metadata_hash(hooked) == metadata_hash(base)) == (True, False)


def test_on_virtual_update_statements_are_split_from_the_query_with_their_places():
    model = parse_model("MODEL (name a.b, kind FULL);\nSELECT 1 AS x;\n\nON_VIRTUAL_UPDATE_BEGIN;\n"
                        "ALTER VIEW @this_model SET TBLPROPERTIES ('k' = @flag);\n"
                        "  GRANT SELECT ON @this_model TO `analysts`;\nON_VIRTUAL_UPDATE_END;", variables={"flag": "on"})

    assert model.query == "SELECT 1 AS x"
    assert [at for _, at in model.on_virtual_update] == ["line 5, column 1", "line 6, column 3"]
    view = exp.table_("b", db="a__dev", quoted=True)
    assert [extras.render_statement(s, view) for s, _ in model.on_virtual_update] == [
        "ALTER VIEW `a__dev`.`b` SET TBLPROPERTIES ('k'='on')", "GRANT SELECT ON `a__dev`.`b` TO `analysts`"]


@pytest.mark.parametrize("section, error, message", [
    ("SELECT @start_ds", ModelDefinitionError, r"line 4, column 1: on_virtual_update statements may use project "
                                               r"variables and @this_model only, not @start_ds"),
    ("SELECT @nope", UnknownMacroError, r"line 4, column 8: unknown macro @nope"),
    ("SELECT (1", ModelSyntaxError, r"line 4, column 1: on_virtual_update statement 'SELECT \(1' does not parse"),
])
def test_on_virtual_update_errors_name_the_model_and_the_statements_place(section, error, message):
    with pytest.raises(error, match=rf"model a\.b: {message}"):
        parse_model(f"MODEL (name a.b, kind FULL);\nSELECT 1 AS x;\nON_VIRTUAL_UPDATE_BEGIN;\n{section};\n"
                    "ON_VIRTUAL_UPDATE_END;")


def test_the_markers_inside_a_string_are_text_not_a_section():
    model = parse_model("MODEL (name a.b, kind FULL); SELECT 'ON_VIRTUAL_UPDATE_BEGIN' AS x")

    assert (model.query, model.on_virtual_update) == ("SELECT 'ON_VIRTUAL_UPDATE_BEGIN' AS x", ())


def test_an_unclosed_or_misplaced_on_virtual_update_section_is_refused():
    with pytest.raises(ModelDefinitionError, match=r"model a\.b: line 3, column 1: write the statements run on "
                                                   r"virtual update as ON_VIRTUAL_UPDATE_BEGIN"):
        parse_model("MODEL (name a.b, kind FULL);\nSELECT 1 AS x;\nON_VIRTUAL_UPDATE_BEGIN;\nSELECT 1;")
    with pytest.raises(ModelDefinitionError, match=r"line 5, column 1: nothing may follow ON_VIRTUAL_UPDATE_END"):
        parse_model("MODEL (name a.b, kind FULL);\nSELECT 1 AS x;\nON_VIRTUAL_UPDATE_BEGIN;\nSELECT 1;\n"
                    "ON_VIRTUAL_UPDATE_END; SELECT 2;")


def test_the_environment_view_carries_virtual_properties_and_their_comment():
    model = parse_model("MODEL (name s.t, kind FULL, description 'Daily', physical_properties (p = '1'), "
                        "virtual_properties (comment = 'For analysts', team = 'core')); SELECT 1 AS a")

    sql = promote.view_sql(exp.to_table("s.t"), exp.to_table("p.s__t__01"), ["a"], model)

    assert sql == ("CREATE OR REPLACE VIEW s.t (`a`) COMMENT 'For analysts' TBLPROPERTIES ('p' = '1', "
                   "'team' = 'core') AS SELECT `a` FROM p.s__t__01")


# --------------------------------------------------------------------------- end to end


def test_session_properties_are_in_force_while_the_model_builds_and_the_session_keeps_its_own(spark, isolated):
    name = f"{isolated}.zone"
    before = spark.conf.get("spark.sql.session.timeZone")
    _call(spark, "create_model", definition=_full(
        name, ", session_properties ('spark.sql.session.timeZone' = 'America/New_York')",
        "SELECT current_timezone() AS tz"))

    rows = _call(spark, "apply", execution_time=T)

    assert [(r.action, r.status) for r in rows] == [("build", "ok")]
    assert_df_equality(spark.table(name), spark.createDataFrame([("America/New_York",)], "tz STRING"),
                       ignore_nullable=True)
    assert spark.conf.get("spark.sql.session.timeZone") == before


def test_a_failed_build_leaves_the_sessions_settings_as_they_were(spark, isolated):
    name = f"{isolated}.broken"
    before = spark.conf.get("spark.sql.shuffle.partitions")
    _call(spark, "create_model", definition=_full(
        name, ", session_properties (spark.sql.shuffle.partitions = 3)", "SELECT CAST(raise_error('boom') AS INT) AS x"))

    rows = _call(spark, "apply", execution_time=T)

    assert [r.status for r in rows if r.model == name] == ["failed"]
    assert spark.conf.get("spark.sql.shuffle.partitions") == before


@pytest.mark.parametrize("setting", ["spark.sql.warehouse.dir = '/tmp/elsewhere'", "spark.executor.memory = '2g'"])
def test_a_setting_spark_fixes_at_start_fails_the_build_naming_model_and_property(spark, isolated, setting):
    name = f"{isolated}.fixed"
    key = setting.split(" ")[0]
    _call(spark, "create_model", definition=_full(name, f", session_properties ({setting})"))

    rows = _call(spark, "apply", execution_time=T)

    failed = [r for r in rows if r.model == name and r.status == "failed"]
    assert len(failed) == 1
    assert f"model {name}" in failed[0].message.lower()
    assert f"session_properties {key} cannot be changed while spark runs" in failed[0].message.lower()


def test_virtual_properties_land_on_the_environment_view(spark, isolated):
    name = f"{isolated}.documented"
    _call(spark, "create_model", definition=_full(
        name, ", virtual_properties (comment = 'For analysts', team = 'core', 'quality.tier' = 2)"))

    _call(spark, "apply", execution_time=T)

    props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
    assert (props.get("team"), props.get("quality.tier")) == ("core", "2")
    described = {r.col_name: r.data_type for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()}
    assert described.get("Comment") == "For analysts"


def test_on_virtual_update_runs_when_the_view_is_created_or_updated_and_not_on_a_plain_run(spark, isolated):
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"CREATE TABLE {isolated}_raw.log (view STRING) USING parquet")
    name = f"{isolated}.hooked"
    after = ("ON_VIRTUAL_UPDATE_BEGIN;\n"
             "ALTER VIEW @this_model SET TBLPROPERTIES ('reviewed' = 'yes');\n"
             f"INSERT INTO {isolated}_raw.log SELECT @this_model;\n"
             "ON_VIRTUAL_UPDATE_END;")
    _call(spark, "create_model", definition=_full(name, "", after=after))

    applied = _call(spark, "apply", env="dev", execution_time=T)
    ran = _call(spark, "run", env="dev", execution_time="2024-01-03 00:00:00")

    assert all(r.status == "ok" for r in applied + ran), [(r.action, r.message) for r in applied + ran]
    dev_view = f"`{isolated}__dev`.`hooked`"
    assert [r.view for r in spark.table(f"{isolated}_raw.log").collect()] == [dev_view]
    props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {dev_view}").collect()}
    assert props.get("reviewed") == "yes"


def test_a_failing_on_virtual_update_statement_is_reported_with_model_and_place(spark, isolated):
    name = f"{isolated}.hooked"
    after = f"ON_VIRTUAL_UPDATE_BEGIN;\nINSERT INTO {isolated}_raw.no_such_log SELECT @this_model;\nON_VIRTUAL_UPDATE_END;"
    _call(spark, "create_model", definition=_full(name, "", after=after))

    rows = _call(spark, "apply", execution_time=T)

    failed = [(r.action, r.message) for r in rows if r.status == "failed"]
    assert len(failed) == 1 and failed[0][0] == "on virtual update"
    assert f"model {name}: on_virtual_update statement at line 4, column 1" in failed[0][1].lower()
    assert spark.table(name).count() == 1  # the view was promoted all the same
