"""Pre- and post-statements of SQL models: parsed around the query, hashed as data, run around each batch
(stage ``evaluating``) and around the creation of a new version's table (stage ``creating``), as SQLMesh does."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals import Interval, to_ms
from pyspark_incr.model import statements as model_statements
from pyspark_incr.model.definition import parse_model, reparse
from pyspark_incr.model.fingerprint import data_hash, metadata_hash
from pyspark_incr.state.store import StateStore
from conftest import call as _call

DAY = Interval(to_ms("2024-01-01"), to_ms("2024-01-02"))
HEAD = ("MODEL (name s.m, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 1), start '2024-01-01', "
        "cron '@daily');\n")
BODY = ("@DEF(tag, 'x');\n"
        "SET spark.sql.shuffle.partitions = 3;\n"
        "CREATE OR REPLACE TEMPORARY VIEW src AS SELECT * FROM raw.events WHERE ds BETWEEN @start_ds AND @end_ds;\n"
        "SELECT ds, COUNT(*) AS n, @tag AS tag FROM src GROUP BY ds;\n"
        "INSERT INTO side.marks SELECT @start_ds, @tag;\n"
        "@IF(@runtime_stage = 'evaluating', ANALYZE TABLE @this_model COMPUTE STATISTICS);\n")


# --------------------------------------------------------------------------- parsing (no Spark)


def test_statements_before_the_query_are_pre_statements_and_after_it_post_statements():
    model = parse_model(HEAD + BODY)

    assert model.query == "SELECT ds, COUNT(*) AS n, 'x' AS tag FROM src GROUP BY ds"
    assert [(s.when, s.sql) for s in model.pre_statements] == [
        ("", "SET spark.sql.shuffle.partitions = 3"),
        ("", "CREATE OR REPLACE TEMPORARY VIEW src AS SELECT * FROM raw.events WHERE ds BETWEEN ${start_ds} AND "
             "${end_ds}")]
    assert [(s.when, s.sql) for s in model.post_statements] == [
        ("", "INSERT INTO side.marks SELECT ${start_ds}, 'x'"),
        ("${runtime_stage} = 'evaluating'", "ANALYZE TABLE __incr_macro__this_model COMPUTE STATISTICS")]


def test_a_temporary_view_a_pre_statement_makes_is_not_a_table_but_what_it_reads_is():
    assert parse_model(HEAD + BODY).depends_on == ("raw.events",)
    cached = parse_model(HEAD + "CACHE TABLE c AS SELECT * FROM raw.orders; SELECT ds FROM c JOIN raw.days USING (ds)")
    assert cached.depends_on == ("raw.days", "raw.orders")


def test_an_on_virtual_update_section_after_the_post_statements_stays_apart():
    model = parse_model(HEAD + BODY + "ON_VIRTUAL_UPDATE_BEGIN;\nGRANT SELECT ON @this_model TO r;\n"
                                      "ON_VIRTUAL_UPDATE_END;")

    assert len(model.post_statements) == 2
    assert [s for s, _ in model.on_virtual_update] == ["GRANT SELECT ON __incr_macro__this_model TO r"]


def test_a_guard_parse_time_knows_keeps_or_drops_its_statement():
    model = parse_model(HEAD + "SELECT @start_ds AS ds;\n@IF(@flag = 1, UNCACHE TABLE a);\n@IF(@flag = 2, UNCACHE TABLE b);",
                        variables={"flag": 1})

    assert [(s.when, s.sql) for s in model.post_statements] == [("", "UNCACHE TABLE a")]


def test_a_guarded_statement_may_hold_commas_of_its_own():
    model = parse_model(HEAD + "SELECT @start_ds AS ds;\n"
                               "@IF(@runtime_stage = 'evaluating', INSERT INTO side.marks SELECT @start_ds, 1, 'a');")

    assert [(s.when, s.sql) for s in model.post_statements] == [
        ("${runtime_stage} = 'evaluating'", "INSERT INTO side.marks SELECT ${start_ds}, 1, 'a'")]


def test_statements_sqlglot_cannot_read_keep_their_text_with_variables_put_in():
    model = parse_model(HEAD + "ADD JAR '/jars/@{jar}.jar';\nSELECT @start_ds AS ds;\nOPTIMIZE @this_model ZORDER BY (@{col});",
                        variables={"jar": "udfs", "col": "ds"})

    assert [(s.command, s.sql) for s in model.pre_statements + model.post_statements] == [
        (True, "ADD JAR '/jars/udfs.jar'"), (True, "OPTIMIZE @this_model ZORDER BY (ds)")]
    table = exp.to_table("p.s__m__1", dialect="spark")
    assert model_statements.render(model.post_statements[0], DAY, 0, "evaluating", where="m", this_table=table) == \
        "OPTIMIZE p.s__m__1 ZORDER BY (ds)"


@pytest.mark.parametrize("statement", [
    "INSERT INTO @this_model SELECT @start_ds AS ds",
    "DELETE FROM @this_model WHERE ds < '2024-01-01'",
    "@IF(@runtime_stage = 'evaluating', TRUNCATE TABLE @this_model)",
    "DROP TABLE IF EXISTS @this_model",
    "ALTER TABLE @this_model ALTER COLUMN ds TYPE STRING",
])
def test_a_statement_changing_the_models_own_table_is_refused_by_name(statement):
    with pytest.raises(ModelDefinitionError, match=r"model s\.m: statement .* changes the model's own table "
                                                   r"\(@this_model\); pyspark-incr records each batch's intervals"):
        parse_model(HEAD + "SELECT @start_ds AS ds;\n" + statement)


def test_setting_properties_of_the_models_own_table_is_allowed():
    model = parse_model(HEAD + "SELECT @start_ds AS ds;\nALTER TABLE @this_model SET TBLPROPERTIES ('k' = 'v')")

    assert model.post_statements[0].sql == "ALTER TABLE __incr_macro__this_model SET TBLPROPERTIES ('k'='v')"


def test_two_queries_are_still_refused():
    with pytest.raises(ModelDefinitionError, match=r"exactly one query \(SELECT \.\.\.\).*found 2 queries"):
        parse_model(HEAD + "SELECT 1 AS ds; UNCACHE TABLE a; SELECT 2 AS ds")


def test_models_without_statements_keep_their_fingerprints_and_context():
    # computed before pre/post-statements existed: a model without them must hash and store as it did
    daily = parse_model(HEAD.replace("s.m", "shop.daily").replace(", batch_size 1", "")
                        + "@DEF(n, 2);\nSELECT ds, COUNT(*) * @n AS n FROM raw.events "
                          "WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds", variables={"v": 1})
    full = parse_model("MODEL (name shop.full, kind FULL); SELECT 1 AS x", variables={"v": 1})

    assert (data_hash(daily), metadata_hash(daily)) == ("47dbd162acf1f9e6", "cbedda596f0b0201")
    assert (data_hash(full), metadata_hash(full)) == ("ce339ce39920544f", "fd27687de29b14b1")
    assert daily.context == full.context == '{"defaults": {}, "variables": {"v": 1}}'
    assert daily.pre_statements == daily.post_statements == ()


def test_statements_are_data_but_comments_and_layout_are_not():
    base = parse_model(HEAD + BODY)
    relaid = parse_model(HEAD + BODY.replace("INSERT INTO side", "-- a mark per batch\ninsert   into side"))
    changed = parse_model(HEAD + BODY.replace("shuffle.partitions = 3", "shuffle.partitions = 4"))
    bare = parse_model(HEAD + "SELECT ds, COUNT(*) AS n, 'x' AS tag FROM src GROUP BY ds")

    assert data_hash(relaid) == data_hash(base)
    assert len({data_hash(base), data_hash(changed), data_hash(bare)}) == 3
    assert metadata_hash(changed) == metadata_hash(base)


def test_a_model_parsed_again_from_its_stored_text_has_the_same_statements():
    model = parse_model(HEAD + BODY, variables={"v": 1})

    assert reparse(model.definition, model.source, model.context) == model


def test_rendering_follows_the_runtime_stage_and_maps_this_model():
    model = parse_model(HEAD + BODY)
    table = exp.to_table("p.s__m__1", dialect="spark")

    def rendered(stage: str) -> list[str | None]:
        return [model_statements.render(s, DAY, 0, stage, where="m", this_table=table) for s in model.post_statements]

    assert rendered("evaluating") == ["INSERT INTO side.marks SELECT '2024-01-01', 'x'",
                                      "ANALYZE TABLE p.s__m__1 COMPUTE STATISTICS"]
    assert rendered("creating") == ["INSERT INTO side.marks SELECT '2024-01-01', 'x'", None]


# --------------------------------------------------------------------------- end to end


def _model(isolated: str, post: str) -> str:
    return (f"MODEL (name {isolated}.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 1), "
            "start '2024-01-01', cron '@daily');\n"
            "SET spark.sql.session.timeZone = America/New_York;\n"
            f"CREATE OR REPLACE TEMPORARY VIEW todays AS SELECT * FROM {isolated}_raw.events "
            "WHERE ds BETWEEN @start_date AND @end_date;\n"
            "SELECT ds, SUM(v) AS total, current_timezone() AS tz FROM todays GROUP BY ds;\n" + post)


@pytest.fixture()
def raw(spark, isolated):
    zone = spark.conf.get("spark.sql.session.timeZone")  # a pre-statement's SET stays in the session, as in SQLMesh
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"CREATE TABLE {isolated}_raw.events (ds DATE, v INT) USING parquet")
    spark.sql(f"INSERT INTO {isolated}_raw.events VALUES (DATE'2024-01-01', 1), (DATE'2024-01-01', 2), "
              "(DATE'2024-01-02', 5), (DATE'2024-01-03', 7)")
    spark.sql(f"CREATE TABLE {isolated}_raw.marks (stage STRING, ds STRING, target STRING) USING parquet")
    yield isolated
    spark.conf.set("spark.sql.session.timeZone", zone)
    spark.catalog.dropTempView("todays")  # a pre-statement's temporary view stays in the session, as its SET does


def test_pre_statements_feed_the_query_and_post_statements_run_after_each_batch(spark, raw):
    post = (f"@IF(@runtime_stage = 'evaluating', INSERT INTO {raw}_raw.marks SELECT @runtime_stage, @start_ds, "
            "@this_model);\n"
            f"INSERT INTO {raw}_raw.marks SELECT @runtime_stage, @start_ds, 'any stage';\n")
    _call(spark, "create_model", definition=_model(raw, post))

    rows = _call(spark, "apply", execution_time="2024-01-03 00:00:00")

    assert [(r.action, r.status) for r in rows] == [("build", "ok"), ("build", "ok")], [r.message for r in rows]
    assert_df_equality(spark.table(f"{raw}.daily").select("ds", "total", "tz"), spark.createDataFrame(
        [("2024-01-01", 3, "America/New_York"), ("2024-01-02", 5, "America/New_York")],
        "ds STRING, total BIGINT, tz STRING").selectExpr("CAST(ds AS DATE) AS ds", "total", "tz"),
        ignore_nullable=True, ignore_row_order=True)
    assert spark.conf.get("spark.sql.session.timeZone") == "America/New_York"  # as SQLMesh: SET stays
    table = StateStore(spark).environment("prod")[f"{raw}.daily"].table_name
    assert_df_equality(spark.table(f"{raw}_raw.marks"), spark.createDataFrame(
        [("creating", "1970-01-01", "any stage"),
         ("evaluating", "2024-01-01", table), ("evaluating", "2024-01-01", "any stage"),
         ("evaluating", "2024-01-02", table), ("evaluating", "2024-01-02", "any stage")],
        "stage STRING, ds STRING, target STRING"), ignore_nullable=True, ignore_row_order=True)


def test_a_run_parses_the_stored_model_again_and_runs_its_statements(spark, raw):
    post = f"@IF(@runtime_stage = 'evaluating', INSERT INTO {raw}_raw.marks SELECT @runtime_stage, @start_ds, 'run');\n"
    _call(spark, "create_model", definition=_model(raw, post))
    _call(spark, "apply", execution_time="2024-01-02 00:00:00")
    reparse.cache_clear()  # as in another Spark application: only the stored text and context

    rows = _call(spark, "run", execution_time="2024-01-04 00:00:00")

    assert [(r.action, r.status) for r in rows] == [("build", "ok"), ("build", "ok")], [r.message for r in rows]
    assert sorted(r.ds for r in spark.table(f"{raw}_raw.marks").collect()) == ["2024-01-01", "2024-01-02",
                                                                               "2024-01-03"]
    assert sorted(r.total for r in spark.table(f"{raw}.daily").collect()) == [3, 5, 7]


def test_a_failing_statement_fails_its_batch_naming_model_and_statement(spark, raw):
    post = f"INSERT INTO {raw}_raw.no_such_table SELECT @start_ds;\n"
    _call(spark, "create_model", definition=_model(raw, post))

    rows = _call(spark, "apply", execution_time="2024-01-02 00:00:00")

    failed = [r for r in rows if r.status == "failed"]
    assert len(failed) == 1, [(r.action, r.status, r.message) for r in rows]
    message = failed[0].message.lower()
    # the statement as written (its first 80 characters), the step it failed in, Spark's reason
    assert message.startswith(f"model {raw}.daily: post-statement 'insert into {raw}_raw.no_such"), message
    assert "' failed (creating the table): " in message and "no_such_table` cannot be found" in message


def test_explain_shows_each_statement_rendered(spark, raw):
    post = f"INSERT INTO {raw}_raw.marks SELECT @runtime_stage, @start_ds, 'x';\n"

    rows = _call(spark, "explain", definition=_model(raw, post), execution_time="2024-01-02 00:00:00")

    shown = [(r.item, r.detail) for r in rows if r.item.endswith("_statement")]
    assert shown == [
        ("pre_statement", "SET spark.sql.session.timeZone = America/New_York"),
        ("pre_statement", f"CREATE OR REPLACE TEMPORARY VIEW todays AS SELECT * FROM {raw}_raw.events WHERE ds "
                          "BETWEEN CAST('2024-01-01' AS DATE) AND CAST('2024-01-01' AS DATE)"),
        ("post_statement", f"INSERT INTO {raw}_raw.marks SELECT 'evaluating', '2024-01-01', 'x'")]
