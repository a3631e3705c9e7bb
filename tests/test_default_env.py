"""spark.incr.defaultEnv is a per-session choice: SET, spark.conf.set or attach(spark, env=...)."""

from __future__ import annotations

import pytest

from conftest import call
from pyspark_incr import attach
from pyspark_incr.config import DEFAULT_ENV, PHYSICAL_SCHEMA, STATE_SCHEMA
from pyspark_incr.errors import ArgumentError


@pytest.fixture()
def other(spark, isolated):
    """A second session of the same application, on the test's state schema, and a daily model."""
    session = spark.newSession()
    for key in (STATE_SCHEMA, PHYSICAL_SCHEMA):
        session.conf.set(key, spark.conf.get(key))
    raw = f"{isolated}_raw.events"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.range(0, 8).selectExpr("id", "date_add(DATE'2024-01-01', CAST(id DIV 4 AS INT)) AS ds") \
        .write.format("parquet").saveAsTable(raw)
    call(spark, "create_model", definition=(
        f"MODEL (name {isolated}.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
        f"cron '@daily'); SELECT id, ds FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds"))
    return session


def _envs(session) -> list[str]:
    return sorted(r.env for r in call(session, "environments"))


def test_set_in_sql_sends_plan_and_apply_without_env_to_dev_and_leaves_prod_alone(spark, isolated, other):
    other.sql(f"SET {DEFAULT_ENV}=dev")

    planned = call(other, "plan", execution_time="2024-01-03 00:00:00")
    applied = call(other, "apply", execution_time="2024-01-03 00:00:00")

    assert [(r.model, r.change) for r in planned] == [(f"{isolated}.daily", "added")]
    built = [r for r in applied if r.action == "build"]
    assert {(r.model, r.status) for r in built} == {(f"{isolated}.daily", "ok")} and sum(r.intervals for r in built) == 2
    assert _envs(other) == ["dev"], "prod is untouched"
    assert other.table(f"{isolated}__dev.daily").count() == 8
    assert not spark.catalog.tableExists(f"{isolated}.daily")
    assert spark.conf.get(DEFAULT_ENV, None) is None, "the first session still defaults to prod"
    assert [r.change for r in call(spark, "plan", execution_time="2024-01-03 00:00:00")] == ["added"]


def test_spark_conf_set_applies_to_its_session_only_and_new_sessions_do_not_inherit_it(spark, isolated, other):
    other.conf.set(DEFAULT_ENV, "dev")

    call(other, "apply", execution_time="2024-01-03 00:00:00")
    call(spark, "apply", execution_time="2024-01-02 00:00:00")

    assert _envs(spark) == ["dev", "prod"]
    assert spark.catalog.tableExists(f"{isolated}.daily") and spark.catalog.tableExists(f"{isolated}__dev.daily")
    assert other.newSession().conf.get(DEFAULT_ENV, None) is None


def test_attach_with_env_sets_the_sessions_default_only(spark, other):
    attach(other, env="Dev")

    assert other.conf.get(DEFAULT_ENV) == "dev"
    assert spark.conf.get(DEFAULT_ENV, None) is None
    assert spark.sparkContext.getConf().get(DEFAULT_ENV, None) is None


def test_attach_refuses_a_bad_environment_name(other):
    with pytest.raises(ArgumentError, match="env 'dev; DROP' is not a valid environment name"):
        attach(other, env="dev; DROP")

    assert other.conf.get(DEFAULT_ENV, None) is None


def test_a_bad_default_env_setting_names_the_setting(other):
    other.conf.set(DEFAULT_ENV, "no good")

    with pytest.raises(Exception, match="spark conf spark.incr.defaultEnv is 'no good'"):
        call(other, "plan", execution_time="2024-01-03 00:00:00")
