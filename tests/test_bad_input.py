"""Bad input gets a clear error naming the fault, and changes no table and no state."""

from __future__ import annotations

import pytest

from conftest import state_rows, tables_in
from pyspark_incr.sqltext import call_sql

GOOD_QUERY = "SELECT CAST(id AS INT) AS id, DATE'2024-01-01' AS ds FROM range(3)"


@pytest.fixture(scope="module")
def baseline(spark, module_isolated):
    """A registered, applied model, so every bad call has real state it could damage."""
    spark.sql(call_sql("create_model", definition=f"MODEL (name {module_isolated}.ok, kind FULL); {GOOD_QUERY}"))
    spark.sql(call_sql("apply", execution_time="2024-01-02")).collect()
    return module_isolated


def _assert_refused(spark, prefix: str, statement: str, *fragments: str) -> None:
    before = (state_rows(spark, prefix), tables_in(spark, prefix))
    with pytest.raises(Exception) as info:
        spark.sql(statement).collect()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in error: {message}"
    assert (state_rows(spark, prefix), tables_in(spark, prefix)) == before


def _create(name_prefix: str, body: str) -> str:
    return call_sql("create_model", definition=body.replace("{p}", name_prefix))


def test_unknown_procedure_is_named(spark, baseline):
    _assert_refused(spark, baseline, "CALL incr.explode()", "explode")


def test_unknown_argument_is_named(spark, baseline):
    _assert_refused(spark, baseline, "CALL incr.run(colour => 'red')", "colour")


def test_missing_required_argument_is_named(spark, baseline):
    _assert_refused(spark, baseline, "CALL incr.create_model()", "definition")


def test_malformed_model_block_points_at_it(spark, baseline):
    _assert_refused(spark, baseline, _create(baseline, "MODEL (name {p}.x, kind FULL; SELECT 1 AS a"), "never closed")


def test_definition_without_model_block_says_how_to_write_one(spark, baseline):
    _assert_refused(spark, baseline, _create(baseline, "SELECT 1 AS a"), "must start with a MODEL (...) block")


def test_unknown_kind_lists_supported_kinds(spark, baseline):
    _assert_refused(
        spark, baseline, _create(baseline, "MODEL (name {p}.x, kind INCREMENTAL_BY_TIME); SELECT 1 AS a"),
        "unknown model kind 'INCREMENTAL_BY_TIME'", "Did you mean INCREMENTAL_BY_TIME_RANGE", "FULL",
    )


def test_time_range_kind_without_time_column_is_refused(spark, baseline):
    _assert_refused(
        spark, baseline, _create(baseline, "MODEL (name {p}.x, kind INCREMENTAL_BY_TIME_RANGE); SELECT 1 AS a"),
        f"model {baseline}.x", "needs time_column",
    )


def test_invalid_cron_is_refused(spark, baseline):
    _assert_refused(
        spark, baseline, _create(baseline, "MODEL (name {p}.x, kind FULL, cron '61 * * * *'); SELECT 1 AS a"),
        f"model {baseline}.x", "cron '61 * * * *' is not a valid cron expression",
    )


def test_unknown_property_suggests_the_right_one(spark, baseline):
    _assert_refused(
        spark, baseline, _create(baseline, "MODEL (name {p}.x, kind FULL, crn '@daily'); SELECT 1 AS a"),
        "unknown MODEL property 'crn'", "did you mean 'cron'?",
    )


def test_query_reading_a_missing_table_names_it(spark, baseline):
    _assert_refused(
        spark, baseline, _create(baseline, "MODEL (name {p}.x, kind FULL); SELECT * FROM nowhere.missing_table"),
        f"model {baseline}.x reads nowhere.missing_table", "neither a table in the catalog nor a model",
    )


def test_query_with_a_bad_column_names_the_model(spark, baseline):
    _assert_refused(
        spark, baseline, _create(baseline, "MODEL (name {p}.x, kind FULL); SELECT no_such_column FROM {p}.ok"),
        f"model {baseline}.x", "no_such_column",
    )


def test_dropping_an_unknown_model_lists_registered_ones(spark, baseline):
    _assert_refused(
        spark, baseline, call_sql("drop_model", name=f"{baseline}.ghost"),
        f"model '{baseline}.ghost' is not registered", f"{baseline}.ok",
    )


def test_invalid_execution_time_is_named(spark, baseline):
    _assert_refused(spark, baseline, call_sql("run", execution_time="tomorrow-ish"), "execution_time", "tomorrow-ish")


def test_invalid_environment_name_is_refused(spark, baseline):
    _assert_refused(spark, baseline, call_sql("plan", env="dev; DROP TABLE x"), "not a valid environment name")
