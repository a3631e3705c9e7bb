"""For time-range and append models: N small batches build exactly what one batch over the whole range builds."""

from __future__ import annotations

import random

import pytest
from chispa import assert_df_equality

from conftest import call as _call


def _generated(spark, prefix: str, seed: int) -> str:
    """Events over 12 days with random gaps, duplicates and amounts; one table per seed."""
    rng = random.Random(seed)
    rows = [(i, f"2024-01-{rng.randint(1, 12):02d}", rng.choice(["a", "b", "c"]), rng.randint(-5, 50))
            for i in range(rng.randint(20, 120))]
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.createDataFrame(rows, "id INT, day STRING, shop STRING, amount INT") \
        .selectExpr("id", "CAST(day AS DATE) AS ds", "shop", "amount") \
        .write.mode("overwrite").saveAsTable(f"{prefix}_raw.events_{seed}")
    return f"{prefix}_raw.events_{seed}"


def _model(name: str, raw: str, kind: str) -> str:
    return (f"MODEL (name {name}, kind {kind}, start '2024-01-01', cron '@daily'); "
            f"SELECT ds, shop, SUM(amount) AS total, COUNT(*) AS n FROM {raw} "
            f"WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds, shop")


@pytest.mark.parametrize("seed", [7, 11, 23])
@pytest.mark.parametrize("kind", [
    "INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size {n})",
    "INCREMENTAL_UNMANAGED",
])
def test_many_batches_equal_one_batch_over_the_same_data(spark, isolated, seed, kind):
    raw = _generated(spark, isolated, seed)
    batched, whole = f"{isolated}.batched_{seed}", f"{isolated}.whole_{seed}"
    size = random.Random(seed).randint(1, 4)
    _call(spark, "create_model", definition=_model(batched, raw, kind.format(n=size)))
    _call(spark, "create_model", definition=_model(whole, raw, kind.format(n=100)))

    # the batched model is built in several runs of a few days each, the whole one in a single run
    for day in (4, 7, 13):
        _call(spark, "run" if day > 4 else "apply", execution_time=f"2024-01-{day:02d} 00:00:00", select=batched)
    _call(spark, "apply", execution_time="2024-01-13 00:00:00", select=whole)

    assert spark.table(whole).count() > 0
    assert_df_equality(spark.table(batched), spark.table(whole), ignore_row_order=True, ignore_nullable=True)
