"""INCREMENTAL_BY_TIME_RANGE layouts and atomic batches: partitioned_by other than the time column, failures before publish."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from sqlglot import exp

from pyspark_incr.writers import generations, tables
from conftest import call as _call, physical


def _hourly_raw(spark, prefix: str) -> str:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.sql(f"DROP TABLE IF EXISTS {prefix}_raw.clicks")
    spark.sql(f"""CREATE TABLE {prefix}_raw.clicks USING parquet AS
        SELECT id, TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, CAST(id % 36 AS INT), CAST(id % 7 AS INT), 0) AS ts
        FROM range(360)""")
    return f"{prefix}_raw.clicks"


def _hourly_model(name: str, raw: str) -> str:
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ts), cron '@hourly', "
            f"start '2024-01-01', partitioned_by (event_date)); "
            f"SELECT date_trunc('HOUR', ts) AS ts, CAST(ts AS DATE) AS event_date, COUNT(*) AS clicks FROM {raw} "
            f"WHERE ts BETWEEN @start_ts AND @end_ts GROUP BY 1, 2")


def _expected(spark, raw: str, until: str):
    return spark.sql(f"""SELECT date_trunc('HOUR', ts) AS ts, COUNT(*) AS clicks, CAST(ts AS DATE) AS event_date
        FROM {raw} WHERE ts < TIMESTAMP'{until}' GROUP BY 1, 3""")


def test_an_hourly_model_partitioned_by_date_keeps_the_other_hours_of_a_partition_it_rewrites(spark, isolated):
    raw, name = _hourly_raw(spark, isolated), f"{isolated}.hourly"
    _call(spark, "create_model", definition=_hourly_model(name, raw))

    _call(spark, "apply", execution_time="2024-01-01 12:00:00")
    rows = _call(spark, "run", execution_time="2024-01-02 06:00:00")

    assert [(r.start.isoformat(), r.end.isoformat(), r.intervals) for r in rows] == [
        ("2024-01-01T12:00:00", "2024-01-02T06:00:00", 18)]
    partitions = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {physical(spark, name)}").collect())
    assert partitions == ["event_date=2024-01-01", "event_date=2024-01-02"]
    assert_df_equality(spark.table(name), _expected(spark, raw, "2024-01-02 06:00:00"),
                       ignore_row_order=True, ignore_nullable=True)


def test_a_batch_failing_before_its_publish_leaves_the_table_and_state_as_they_were(spark, isolated, monkeypatch):
    raw, name = _hourly_raw(spark, isolated), f"{isolated}.hourly"
    _call(spark, "create_model", definition=_hourly_model(name, raw))
    _call(spark, "apply", execution_time="2024-01-01 12:00:00")
    before = spark.table(name).collect()

    def crash(*args, **kwargs):
        raise RuntimeError("killed between stage and publish")

    with monkeypatch.context() as patch:
        patch.setattr(generations, "publish", crash)
        failed = _call(spark, "run", execution_time="2024-01-02 06:00:00")
    after_crash = spark.table(name).collect()
    status = _call(spark, "status", model=name, execution_time="2024-01-02 06:00:00")
    rerun = _call(spark, "run", execution_time="2024-01-02 06:00:00")

    assert [r.status for r in failed] == ["failed"] and "Killed between stage and publish" in failed[0].message
    assert sorted(after_crash) == sorted(before), "readers still see the previous complete version"
    assert [(r.state, r.end.isoformat()) for r in status][0] == ("covered", "2024-01-01T12:00:00")
    location = tables.location(spark, exp.to_table(physical(spark, name), dialect="spark"))
    path = spark._jvm.org.apache.hadoop.fs.Path(location)
    names = [s.getPath().getName() for s in path.getFileSystem(spark._jsc.hadoopConfiguration()).listStatus(path)]
    assert [r.status for r in rerun] == ["ok"]
    assert_df_equality(spark.table(name), _expected(spark, raw, "2024-01-02 06:00:00"),
                       ignore_row_order=True, ignore_nullable=True)
    assert len([n for n in names if n.startswith(generations.GEN_PREFIX)]) <= 1, "the failed batch's staging was discarded"


@pytest.mark.parametrize("partitioned_by, forced", [("ts", False), ("event_date", True)])
def test_batch_concurrency_is_forced_to_one_when_batches_share_partitions(partitioned_by, forced):
    from pyspark_incr.model.definition import parse_model
    from pyspark_incr.plan.support import batch_concurrency

    model = parse_model(f"MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ts, batch_concurrency 3), "
                        f"partitioned_by ({partitioned_by})); SELECT ts, CAST(ts AS DATE) AS event_date FROM raw.t")

    assert batch_concurrency(model)[0] == (1 if forced else 3)


def test_a_partitioned_full_model_rebuild_drops_partitions_its_new_output_lacks(spark, isolated):
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"CREATE TABLE {isolated}_raw.shops USING parquet AS SELECT * FROM VALUES ('a', 1), ('b', 2) AS t(shop, n)")
    name = f"{isolated}.by_shop"
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind FULL, partitioned_by (shop), cron '@daily', start '2024-01-01'); "
        f"SELECT n, shop FROM {isolated}_raw.shops"))
    _call(spark, "apply", execution_time="2024-01-02 00:00:00")
    spark.sql(f"INSERT OVERWRITE {isolated}_raw.shops VALUES ('b', 20), ('c', 30)")

    rows = _call(spark, "run", execution_time="2024-01-03 00:00:00")

    assert [(r.status, r.rows) for r in rows] == [("ok", 2)]
    assert sorted((r.shop, r.n) for r in spark.table(name).collect()) == [("b", 20), ("c", 30)]
    assert sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {physical(spark, name)}").collect()) == ["shop=b", "shop=c"]
