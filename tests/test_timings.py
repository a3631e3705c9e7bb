"""Phase timings of a call (spark.incr.profile): nesting, threads, nothing recorded when off, a real run's phases."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading

import pytest

from conftest import call as _call
from pyspark_incr import timings


@pytest.fixture()
def profiling():
    """Profiling forced on for the test, then back to what the environment and conf say."""
    timings.enable()
    yield
    timings.enable(None)


class _Spark:
    """A stand-in session: profiling is asked of its SparkContext's conf."""

    def __init__(self, conf: dict[str, str]) -> None:
        self.asked = 0
        spark = self

        class _Conf:
            def get(self, key: str, default: str) -> str:
                spark.asked += 1
                return conf.get(key, default)

        self.sparkContext = type("SparkContext", (), {"getConf": lambda _self: _Conf()})()


def test_phases_nest_under_the_call_and_sum_per_path(profiling, caplog):
    with caplog.at_level(logging.INFO, logger="pyspark_incr.timings"), timings.call(None, "run"):
        with timings.phase("plan"):
            pass
        for _ in range(3):
            with timings.phase("batch"), timings.phase("write"):
                pass
    profile = timings.last()

    assert profile.call == "run"
    assert [p.path for p in profile.phases] == ["run", "run/plan", *["run/batch", "run/batch/write"] * 3]
    totals = profile.totals()
    assert totals["run/batch"]["count"] == 3 and totals["run/batch/write"]["count"] == 3
    assert all(inner.start >= outer.start and inner.end <= outer.end
               for outer, inner in zip(profile.phases[2::2], profile.phases[3::2])), "a write lies inside its batch"
    assert "run/batch/write" in profile.describe()
    assert [r.getMessage() for r in caplog.records] == [profile.describe()], "the call's phases are logged at INFO"


def test_entering_and_leaving_a_context_are_timed_apart_from_its_block(profiling):
    class Claims:
        def __enter__(self):
            return "held"

        def __exit__(self, *exc):
            return None

    with timings.call(None, "apply"):
        with timings.entered("claim", Claims(), left="release") as held:
            with timings.phase("work"):
                pass
    paths = [p.path for p in timings.last().phases]

    assert held == "held"
    assert paths == ["apply", "apply/claim", "apply/work", "apply/release"], "claim and release do not hold the work"


def test_when_off_nothing_is_recorded_and_the_wrapped_objects_come_back_unchanged():
    timings.disable()
    try:
        before = timings.profiles()
        inner = threading.Lock()
        fn = len
        with timings.call(None, "run"):
            with timings.phase("plan"):
                pass
        assert timings.phase("plan") is timings.phase("write"), "one shared do-nothing context"
        assert timings.entered("claim", inner) is inner
        assert timings.timed("audits", fn) is fn
        assert timings.profiles() == before
    finally:
        timings.enable(None)


def test_the_application_conf_is_read_once_per_spark_context():
    on, off = _Spark({timings.PROFILE_CONF: "true"}), _Spark({})

    assert [timings.enabled(on) for _ in range(3)] == [True] * 3
    assert [timings.enabled(off) for _ in range(3)] == [False] * 3
    assert (on.asked, off.asked) == (1, 1), "later calls read the answer cached on the SparkContext"


def test_the_environment_variable_profiles_every_call_of_the_process():
    probe = "from pyspark_incr import timings; print(timings.enabled(None))"
    env = {**os.environ, timings.PROFILE_ENV: "1"}

    shown = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)

    assert shown.stdout.strip() == "True"


def test_phases_of_worker_threads_are_recorded_whole_under_the_call(profiling):
    start = threading.Barrier(8)

    def batch(k: int) -> None:
        start.wait()
        for _ in range(50):
            with timings.phase("batch"), timings.phase("write"):
                pass

    with timings.call(None, "run"):
        workers = [threading.Thread(target=batch, args=(k,)) for k in range(8)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    totals = timings.last().totals()

    assert totals["run/batch"]["count"] == 400 and totals["run/batch/write"]["count"] == 400


def test_a_profiled_run_reports_its_phases_and_the_statements_inside_them(spark, isolated, profiling):
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"CREATE TABLE {isolated}_raw.events USING parquet AS "
              "SELECT id, DATE'2024-01-01' + CAST(id % 3 AS INT) AS ds FROM range(30)")
    _call(spark, "create_model", definition=(
        f"MODEL (name {isolated}.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
        f"cron '@daily', audits (not_null(columns := (ds)))); "
        f"SELECT ds, COUNT(*) AS n FROM {isolated}_raw.events WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds"))
    _call(spark, "apply", execution_time="2024-01-02 00:00:00")

    built = _call(spark, "run", execution_time="2024-01-03 00:00:00")
    profile = timings.last()
    totals = profile.totals()

    assert [r.action for r in built] == ["build"]
    assert profile.call == "run"
    for path in ("run/plan", "run/claim", "run/release", "run/safety", "run/views", "run/runs record",
                 "run/compact", "run/batch/write", "run/batch/audits", "run/batch/state commit"):
        assert any(p == path or p.endswith("/" + path.partition("/")[2]) for p in totals), (path, sorted(totals))
    assert totals["run"]["statements"] >= 1, ("statements through SparkSession.sql are counted", totals)
