"""auto_restatement_cron: a prod run past a tick of the model's own cron builds its latest intervals again,
and the models reading it, once per tick."""

from __future__ import annotations

import pytest

from conftest import call as _call
from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.definition import parse_model
from pyspark_incr.model.fingerprint import data_hash, metadata_hash

TIME_RANGE = ("MODEL (name s.m, kind INCREMENTAL_BY_TIME_RANGE (time_column ds{}), start '2024-01-01'); "
              "SELECT ds FROM s.raw")


def test_auto_restatement_properties_are_read_from_the_kind():
    model = parse_model(TIME_RANGE.format(", auto_restatement_cron '@weekly', auto_restatement_intervals 2"))

    assert (model.kind.auto_restatement_cron, model.kind.auto_restatement_intervals) == ("@weekly", 2)


def test_auto_restatement_is_metadata_and_leaves_models_without_it_hashed_as_before():
    plain = parse_model(TIME_RANGE.format(""))
    auto = parse_model(TIME_RANGE.format(", auto_restatement_cron '@weekly'"))

    assert data_hash(plain) == data_hash(auto)
    assert metadata_hash(plain) != metadata_hash(auto)
    # the hash a model without the property had before the property existed (computed on the previous code)
    assert (metadata_hash(plain), data_hash(plain)) == ("cbedda596f0b0201", "2bfdc847e35f83cd")


def test_an_invalid_auto_restatement_cron_is_refused_naming_the_model_and_where_it_stands():
    with pytest.raises(ModelDefinitionError, match=r"model s\.m: line 1, column \d+: auto_restatement_cron 'weekly' "
                                                   r"is not a valid cron expression; use e\.g\. '@weekly'"):
        parse_model(TIME_RANGE.format(", auto_restatement_cron 'weekly'"))


@pytest.mark.parametrize("kind, refused", [
    ("FULL (auto_restatement_cron '@weekly')", "unknown kind FULL property 'auto_restatement_cron'"),
    ("INCREMENTAL_BY_UNIQUE_KEY (unique_key ds, auto_restatement_intervals 2)",
     "unknown kind INCREMENTAL_BY_UNIQUE_KEY property 'auto_restatement_intervals'"),
])
def test_a_kind_without_the_property_refuses_it(kind, refused):
    with pytest.raises(ModelDefinitionError, match=refused):
        parse_model(f"MODEL (name s.m, kind {kind}); SELECT 1 AS ds")


@pytest.fixture()
def chain(spark, isolated):
    """A daily model restated weekly (its last 2 days), an incremental child, a FULL total and a unique-key
    model restated whole; applied through 2024-01-03, then run on 2024-01-06 (the restatement clock starts)."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    raw = f"{isolated}_raw.sales"
    _load(spark, raw, 1)
    names = {k: f"{isolated}.{k}" for k in ("daily", "child", "total", "keyed")}
    _call(spark, "create_model", definition=(
        f"MODEL (name {names['daily']}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, auto_restatement_cron "
        f"'@weekly', auto_restatement_intervals 2), start '2024-01-01', cron '@daily'); "
        f"SELECT ds, amount FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "create_model", definition=(
        f"MODEL (name {names['child']}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
        f"cron '@daily'); SELECT ds, amount * 10 AS big FROM {names['daily']} WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "create_model", definition=(
        f"MODEL (name {names['total']}, kind FULL, cron '@daily'); SELECT SUM(amount) AS total FROM {names['daily']}"))
    _call(spark, "create_model", definition=(
        f"MODEL (name {names['keyed']}, kind INCREMENTAL_BY_UNIQUE_KEY (unique_key ds, auto_restatement_cron "
        f"'@weekly'), start '2024-01-01', cron '@daily'); "
        f"SELECT ds, amount FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "apply", execution_time="2024-01-04 00:00:00")
    _call(spark, "run", execution_time="2024-01-06 12:00:00")
    return raw, names


def _load(spark, raw: str, factor: int) -> None:
    """Sales of 2024-01-01 .. 2024-01-08: day d sells d * factor."""
    rows = ", ".join(f"(DATE'2024-01-0{d}', {d * factor})" for d in range(1, 9))
    spark.sql(f"CREATE TABLE IF NOT EXISTS {raw} (ds DATE, amount INT) USING parquet")
    spark.sql(f"INSERT OVERWRITE {raw} SELECT * FROM VALUES {rows} AS t(ds, amount)")


def _amounts(spark, name: str, column: str = "amount") -> list:
    return [r[column] for r in spark.table(name).orderBy("ds").collect()]


def _built(results) -> list[tuple[str, str]]:
    return sorted((r.model.split(".")[1], str(r.start)[:10]) for r in results if r.action == "build")


AT_TICK = "2024-01-07 01:00:00"


def test_a_run_before_the_tick_restates_nothing(spark, isolated, chain):
    raw, names = chain
    _load(spark, raw, 100)

    results = _call(spark, "run", execution_time="2024-01-06 23:00:00")

    assert _built(results) == []
    assert _amounts(spark, names["daily"]) == [1, 2, 3, 4, 5]


def test_a_run_after_the_tick_rebuilds_the_last_intervals_and_what_reads_them(spark, isolated, chain):
    raw, names = chain
    _load(spark, raw, 100)  # late corrections on every day: only the restated ones are picked up

    results = _call(spark, "run", execution_time="2024-01-07 01:00:00")

    assert ("daily", "2024-01-05") in _built(results) and ("child", "2024-01-05") in _built(results)
    assert _amounts(spark, names["daily"]) == [1, 2, 3, 4, 500, 600]
    assert _amounts(spark, names["child"], "big") == [10, 20, 30, 40, 5000, 6000]
    assert spark.table(names["total"]).collect()[0].total == 1110
    # a kind SQLMesh restates only whole is restated whole
    assert _amounts(spark, names["keyed"]) == [100, 200, 300, 400, 500, 600]


def test_the_restatement_happens_once_per_tick_and_again_at_the_next(spark, isolated, chain):
    raw, names = chain
    _call(spark, "run", execution_time="2024-01-07 01:00:00")
    _load(spark, raw, 100)

    again = _call(spark, "run", execution_time="2024-01-07 05:00:00")
    assert _built(again) == []
    assert _amounts(spark, names["daily"]) == [1, 2, 3, 4, 5, 6]
    assert _amounts(spark, names["keyed"]) == [1, 2, 3, 4, 5, 6]

    _call(spark, "run", execution_time="2024-01-14 01:00:00")
    assert _amounts(spark, names["daily"]) == [1, 2, 3, 4, 5, 6, 700, 800]
    assert _amounts(spark, names["keyed"]) == [100, 200, 300, 400, 500, 600, 700, 800]


def test_the_tick_is_kept_in_state_for_other_applications(spark, isolated, chain):
    from pyspark_incr.plan.auto_restatement import references
    from pyspark_incr.state.store import StateStore

    _, names = chain
    _call(spark, "run", execution_time="2024-01-07 01:00:00")

    rows = spark.sql(f"SELECT model, op, execution_ms FROM {isolated}_state.auto_restatements").collect()
    ops = sorted((r.model.split(".")[1], r.op) for r in rows)
    assert ops == [("daily", "restate"), ("daily", "start"), ("keyed", "restate"), ("keyed", "start")]
    # what a run of another application reads: the time the clock runs from now
    assert set(references(StateStore(spark)).values()) == {1704589200000}  # 2024-01-07 01:00 UTC


def test_two_runs_due_at_the_same_tick_restate_once_and_the_later_one_sees_it_done(spark, isolated, chain, monkeypatch):
    """The second run plans while the first, holding its claims, is about to record its restatement: the
    interleaving that made both restate when the record came after the claims were given back."""
    import threading

    from pyspark_incr.plan import auto_restatement
    from pyspark_incr.procedures import running

    raw, names = chain
    _load(spark, raw, 100)
    record, plan_run = auto_restatement.record, running.plan_run
    planned, answers = threading.Event(), {}
    second = threading.Thread(target=lambda: answers.update(rows=_call(spark, "run", execution_time=AT_TICK)))

    def planning(*args, **kwargs):
        made = plan_run(*args, **kwargs)
        if threading.current_thread() is second and made.restatement.auto:
            planned.set()  # the second run decided to restate, from state without the first's record
        return made

    def recording(*args, **kwargs):
        if threading.current_thread() is not second and not second.is_alive():
            second.start()
            assert planned.wait(timeout=300), "the second run planned its restatement"
        record(*args, **kwargs)

    monkeypatch.setattr(running, "plan_run", planning)
    monkeypatch.setattr(auto_restatement, "record", recording)
    first = _call(spark, "run", execution_time=AT_TICK)
    second.join(timeout=300)

    assert ("daily", "2024-01-05") in _built(first)
    assert [r for r in answers["rows"] if r.status == "ok"] == [], "the second run rebuilt nothing"
    assert {r.status for r in answers["rows"]} <= {"skipped"}
    restated = spark.sql(f"SELECT model FROM {isolated}_state.auto_restatements WHERE op = 'restate'").collect()
    assert sorted(r.model for r in restated) == [names["daily"], names["keyed"]], "recorded once per model"
    assert _amounts(spark, names["daily"]) == [1, 2, 3, 4, 500, 600]


def test_outside_prod_nothing_is_auto_restated(spark, isolated, chain):
    raw, names = chain
    _call(spark, "apply", env="dev", execution_time="2024-01-06 12:00:00")
    _load(spark, raw, 100)

    results = _call(spark, "run", env="dev", execution_time="2024-01-07 01:00:00")

    assert ("daily", "2024-01-05") not in _built(results)


def test_a_model_with_disable_restatement_is_not_auto_restated(spark, isolated):
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    raw = f"{isolated}_raw.sales"
    _load(spark, raw, 1)
    name = f"{isolated}.locked"
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, auto_restatement_cron '@weekly', "
        f"disable_restatement true), start '2024-01-01', cron '@daily'); "
        f"SELECT ds, amount FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "apply", execution_time="2024-01-06 12:00:00")
    _call(spark, "run", execution_time="2024-01-06 12:00:00")
    _load(spark, raw, 100)

    _call(spark, "run", execution_time="2024-01-07 01:00:00")

    assert _amounts(spark, name) == [1, 2, 3, 4, 5, 600]


def _due(monkeypatch, definitions: list[str], execution: str, reference: str = "2024-01-06"):
    """What a prod run at ``execution`` auto-restates among ``definitions``, every table built through
    2024-01-06 and its clock started at ``reference``."""
    from types import SimpleNamespace

    from pyspark_incr.intervals.ranges import Interval, IntervalSet
    from pyspark_incr.intervals.times import to_ms
    from pyspark_incr.plan import auto_restatement

    models = {m.name: m for m in map(parse_model, definitions)}
    monkeypatch.setattr(auto_restatement, "references", lambda store: {f"t.{n}": to_ms(reference) for n in models})
    current = {n: SimpleNamespace(table_name=f"t.{n}") for n in models}
    built = {f"t.{n}": IntervalSet([Interval(to_ms("2024-01-01"), to_ms("2024-01-07"))]) for n in models}
    return auto_restatement.due(None, models, current, built, to_ms(execution))


def test_kinds_sqlmesh_never_restates_are_accepted_and_not_auto_restated(monkeypatch):
    due = _due(monkeypatch, [
        "MODEL (name s.log, kind INCREMENTAL_UNMANAGED (auto_restatement_cron '@weekly')); SELECT 1 AS x",
        "MODEL (name s.hist, kind SCD_TYPE_2 (unique_key id, auto_restatement_cron '@weekly')); "
        "SELECT 1 AS id, CURRENT_TIMESTAMP() AS updated_at",
    ], "2024-01-07 01:00:00")

    assert (due.ranges, due.auto) == ({}, {})


def test_a_restatement_reaches_the_models_reading_it_but_not_past_one_that_refuses_it(monkeypatch):
    from pyspark_incr.intervals.ranges import Interval
    from pyspark_incr.intervals.times import to_ms

    due = _due(monkeypatch, [
        TIME_RANGE.format(", auto_restatement_cron '@weekly', auto_restatement_intervals 3"),
        "MODEL (name s.kid, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01'); SELECT ds FROM s.m",
        "MODEL (name s.locked, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, disable_restatement true), "
        "start '2024-01-01'); SELECT ds FROM s.m",
        "MODEL (name s.behind, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01'); "
        "SELECT ds FROM s.locked",
    ], "2024-01-07 01:00:00")

    three_days = Interval(to_ms("2024-01-04"), to_ms("2024-01-07"))
    assert due.ranges == {"s.m": three_days, "s.kid": three_days}
    assert due.auto == {"s.m": ("s.m", "s.kid")}
    assert "disable_restatement" in due.skipped["s.locked"] and "s.behind" not in due.skipped
