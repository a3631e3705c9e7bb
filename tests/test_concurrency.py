"""Concurrent batches of one model, concurrent independent models, and per-partition mode.

Overlap is shown with Spark's own job timestamps (its status store), found by the
description every batch gives its jobs (``incr <model> [start, end)``).
"""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from pyspark_incr.errors import ArgumentError
from conftest import state_rows, call as _call

#: Each source row sleeps this long when read, so every batch is a Spark job lasting a known while.
SLEEP_MS = 150


def _raw(spark, prefix: str, days: int = 8) -> str:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.sql(f"DROP TABLE IF EXISTS {prefix}_raw.events")
    spark.sql(f"""CREATE TABLE {prefix}_raw.events USING parquet AS
        SELECT id, DATE_ADD(DATE'2024-01-01', CAST(id % {days} AS INT)) AS ds FROM range({2 * days})""")
    return f"{prefix}_raw.events"


def _model(name: str, raw: str, kind_extra: str = "", total: str = "id") -> str:
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds{kind_extra}), start '2024-01-01'); "
            f"SELECT ds, COUNT(*) AS n, SUM({total}) AS total FROM {raw} "
            f"WHERE ds BETWEEN @start_ds AND @end_ds "
            f"AND java_method('java.lang.Thread', 'sleep', CAST({SLEEP_MS} AS BIGINT)) IS NOT NULL "
            f"GROUP BY ds")


def _job_spans(spark, model: str) -> dict[str, tuple[int, int]]:
    """Per batch label of ``model``: (first job submitted, last job completed), epoch ms, from Spark's status store."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    spans: dict[str, tuple[int, int]] = {}
    for i in range(jobs.size()):
        job = jobs.apply(i)
        label = job.description().getOrElse(None) if job.description().isDefined() else None
        if not label or not label.startswith(f"incr {model} [") or not job.completionTime().isDefined():
            continue
        start, end = job.submissionTime().get().getTime(), job.completionTime().get().getTime()
        lo, hi = spans.get(label, (start, end))
        spans[label] = (min(lo, start), max(hi, end))
    return spans


def _most_at_once(spans: list[tuple[int, int]]) -> int:
    """The largest number of spans open at one instant."""
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda x: (x[0], x[1]))
    best = current = 0
    for _, step in edges:
        current += step
        best = max(best, current)
    return best


def test_batch_concurrency_overlaps_spark_jobs_and_equals_the_sequential_result(spark, isolated):
    raw = _raw(spark, isolated)
    parallel, sequential = f"{isolated}.parallel", f"{isolated}.sequential"
    _call(spark, "create_model", definition=_model(parallel, raw, ", batch_size 1, batch_concurrency 4"))
    _call(spark, "create_model", definition=_model(sequential, raw, ", batch_size 1, batch_concurrency 1"))

    rows = _call(spark, "apply", execution_time="2024-01-09 00:00:00", concurrency=5)

    parallel_spans = _job_spans(spark, parallel)
    sequential_spans = _job_spans(spark, sequential)
    assert [r.status for r in rows] == ["ok"] * 16
    assert len(parallel_spans) == len(sequential_spans) == 8, "every batch ran Spark jobs labelled with its interval"
    assert _most_at_once(list(parallel_spans.values())) >= 3, "batch_concurrency 4 overlaps the batches' Spark jobs"
    assert _most_at_once(list(sequential_spans.values())) == 1, "batch_concurrency 1: one batch at a time"
    assert spark.table(parallel).count() == 8
    assert_df_equality(spark.table(parallel), spark.table(sequential), ignore_row_order=True)
    status = _call(spark, "status", model=parallel, execution_time="2024-01-09 00:00:00")
    assert [(r.state, r.intervals) for r in status] == [("covered", 8)], "every concurrent batch recorded its interval"


@pytest.mark.parametrize("concurrency", [1, 3])
def test_without_batch_concurrency_a_models_batches_share_the_calls_concurrency_with_other_models(
        spark, isolated, concurrency):
    raw = _raw(spark, isolated, days=6)
    first, second = f"{isolated}.first", f"{isolated}.second"
    _call(spark, "create_model", definition=_model(first, raw, ", batch_size 1"))
    _call(spark, "create_model", definition=_model(second, raw, ", batch_size 1"))

    rows = _call(spark, "apply", execution_time="2024-01-07 00:00:00", concurrency=concurrency)

    spans = {**_job_spans(spark, first), **_job_spans(spark, second)}
    assert [r.status for r in rows] == ["ok"] * 12 and len(spans) == 12
    at_once = _most_at_once(list(spans.values()))
    assert at_once <= concurrency, "as SQLMesh's concurrent_tasks: models and their batches share the limit"
    assert at_once >= min(2, concurrency), "unset, batch_concurrency lets batches overlap up to the limit"
    assert_df_equality(spark.table(first), spark.table(second), ignore_row_order=True)


def test_independent_models_run_at_once_and_a_child_waits_for_its_parent(spark, isolated):
    raw = _raw(spark, isolated, days=4)
    a, b, child = f"{isolated}.a", f"{isolated}.b", f"{isolated}.child"
    _call(spark, "create_model", definition=_model(a, raw, ", batch_size 1"))
    _call(spark, "create_model", definition=_model(b, raw, ", batch_size 1"))
    _call(spark, "create_model", definition=(
        f"MODEL (name {child}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01'); "
        f"SELECT ds, n FROM {a} WHERE ds BETWEEN @start_ds AND @end_ds"))

    rows = _call(spark, "apply", execution_time="2024-01-05 00:00:00", concurrency=2)

    spans_a, spans_b = _job_spans(spark, a), _job_spans(spark, b)
    spans_child = _job_spans(spark, child)
    assert [r.model for r in rows] == [a] * 4 + [b] * 4 + [child], "results come back in plan order"
    assert all(r.status == "ok" for r in rows)
    assert spark.table(child).count() == 4
    whole_a = (min(s for s, _ in spans_a.values()), max(e for _, e in spans_a.values()))
    whole_b = (min(s for s, _ in spans_b.values()), max(e for _, e in spans_b.values()))
    assert _most_at_once([whole_a, whole_b]) == 2, "the independent models a and b were built at the same time"
    assert min(s for s, _ in spans_child.values()) >= whole_a[1], "the child started after its parent finished"
    assert_df_equality(spark.table(child), spark.table(a).select("n", "ds"), ignore_row_order=True)


def test_a_failing_batch_stops_the_batches_not_yet_started_under_batch_concurrency(spark, isolated):
    raw = _raw(spark, isolated)
    name = f"{isolated}.daily"
    failing = "id + IF(ds = DATE'2024-01-03', CAST(raise_error('boom') AS BIGINT), 0)"  # day 3 fails inside Spark
    _call(spark, "create_model", definition=_model(name, raw, ", batch_size 1, batch_concurrency 2", total=failing))

    rows = _call(spark, "apply", execution_time="2024-01-09 00:00:00", concurrency=2)
    status = _call(spark, "status", model=name, execution_time="2024-01-09 00:00:00")

    by_day = {r.start.date().isoformat(): r.status for r in rows}
    assert by_day["2024-01-03"] == "failed"
    assert len(rows) < 8, "batches after the failure were never started"
    built = {(r.start.date().isoformat(), r.end.date().isoformat()) for r in status if r.state == "covered"}
    assert all(not (s <= "2024-01-03" < e) for s, e in built), "the failed day is not recorded as built"
    ok_days = {d for d, s in by_day.items() if s == "ok"}
    assert {r.ds.isoformat() for r in spark.table(name).collect()} == ok_days, "what state says is built is in the table"


def test_per_partition_runs_one_interval_per_job_whatever_the_batch_size(spark, isolated):
    raw = _raw(spark, isolated, days=5)
    name = f"{isolated}.daily"
    _call(spark, "create_model", definition=_model(name, raw, ", batch_size 7"))

    plan = _call(spark, "plan", execution_time="2024-01-06 00:00:00", per_partition=True)
    rows = _call(spark, "apply", execution_time="2024-01-06 00:00:00", per_partition=True)

    assert [r.batches for r in plan] == [5]
    assert [(r.start.date().isoformat(), r.intervals) for r in rows] == [
        (f"2024-01-0{d}", 1) for d in range(1, 6)]


@pytest.mark.parametrize("definition, expected", [
    ("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_concurrency 4)); "
     "SELECT ds FROM raw.t", (4, "")),
    ("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_concurrency 4)); "
     "SELECT ds FROM raw.t UNION ALL SELECT ds FROM a.b", (1, "the query reads the model itself")),
    ("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_concurrency 4)); "
     "SELECT ds FROM @this_model", (1, "the query reads the model itself")),
    ("MODEL (name a.b, kind INCREMENTAL_BY_UNIQUE_KEY (unique_key id, batch_concurrency 3)); SELECT id FROM raw.t",
     (1, "each INCREMENTAL_BY_UNIQUE_KEY batch builds on the previous one")),
    ("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds)); SELECT ds FROM raw.t", (0, "")),
    ("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds)); SELECT ds FROM a.b", (1, "")),
    ("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds)); SET x = 1; SELECT ds FROM raw.t", (1, "")),
    ("MODEL (name a.b, kind INCREMENTAL_BY_UNIQUE_KEY (unique_key id)); SELECT id FROM raw.t", (1, "")),
    ("MODEL (name a.b, kind FULL); SELECT 1 AS id", (1, "")),
])
def test_batch_concurrency_is_forced_to_one_where_batch_order_matters(definition, expected):
    from pyspark_incr.model.definition import parse_model
    from pyspark_incr.plan.support import batch_concurrency

    limit, note = batch_concurrency(parse_model(definition))

    assert limit == expected[0]
    assert expected[1] in note and (note == "") == (expected[1] == "")


@pytest.mark.parametrize("value", [0, -2])
def test_a_concurrency_below_one_is_refused_and_nothing_changes(spark, isolated, value):
    raw = _raw(spark, isolated, days=2)
    _call(spark, "create_model", definition=_model(f"{isolated}.daily", raw))
    before = state_rows(spark, isolated)

    with pytest.raises(Exception, match="concurrency is .* 1 or more"):
        _call(spark, "apply", execution_time="2024-01-03 00:00:00", concurrency=value)

    assert state_rows(spark, isolated) == before
    assert not spark.catalog.tableExists(f"{isolated}.daily")


def test_concurrency_setting_of_the_session_is_validated():
    from pyspark_incr.procedures.common import concurrency_arg

    class Conf:
        def get(self, key, default=None):
            return "many"

    class Session:
        conf = Conf()

    with pytest.raises(ArgumentError, match="spark conf spark.incr.concurrency is 'many'"):
        concurrency_arg(Session(), None)
    assert concurrency_arg(Session(), 3) == 3
    assert concurrency_arg(Session(), None, "2") == 2
