"""lookback and allow_partials through CALL statements: late rows are picked up, partial days rebuilt."""

from __future__ import annotations

from conftest import call as _call


def _raw(spark, prefix: str) -> str:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.sql(f"DROP TABLE IF EXISTS {prefix}_raw.events")
    spark.sql(f"""CREATE TABLE {prefix}_raw.events USING parquet AS
        SELECT id, DATE_ADD(DATE'2024-01-01', CAST(id % 5 AS INT)) AS ds FROM range(50)""")
    return f"{prefix}_raw.events"


def _model(name: str, raw: str, extra: str = "", kind_extra: str = "") -> str:
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds{kind_extra}), start '2024-01-01'{extra}); "
            f"SELECT ds, COUNT(*) AS n FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds")


def _counts(spark, name: str) -> dict[str, int]:
    return {r.ds.isoformat(): r.n for r in spark.table(name).collect()}


def test_lookback_picks_up_late_rows_of_the_last_n_days_and_nothing_more(spark, isolated):
    raw, name = _raw(spark, isolated), f"{isolated}.daily"
    _call(spark, "create_model", definition=_model(name, raw, kind_extra=", lookback 2"))
    _call(spark, "apply", execution_time="2024-01-05 01:00:00")
    spark.sql(f"INSERT INTO {raw} VALUES (900, DATE'2024-01-03'), (901, DATE'2024-01-01')")  # late rows

    rows = _call(spark, "run", execution_time="2024-01-06 01:00:00")
    again = _call(spark, "run", execution_time="2024-01-06 01:00:00")

    assert [(r.start.date().isoformat(), r.end.date().isoformat(), r.intervals) for r in rows] == [
        ("2024-01-03", "2024-01-06", 3)]
    assert again == []
    counts = _counts(spark, name)
    assert counts["2024-01-03"] == 11, "the late row of a day inside the lookback is picked up"
    assert counts["2024-01-01"] == 10, "a day before the lookback window is not re-run"


def test_allow_partials_builds_today_so_far_and_rebuilds_it_on_the_next_run(spark, isolated):
    raw, name = _raw(spark, isolated), f"{isolated}.daily"
    # an hourly cron: as in SQLMesh, the cron's last tick bounds the partial day (tests/test_allow_partials.py)
    _call(spark, "create_model", definition=_model(name, raw, extra=", allow_partials true, cron '@hourly', "
                                                                    "interval_unit 'day'"))

    first = _call(spark, "apply", execution_time="2024-01-03 10:00:00")
    spark.sql(f"INSERT INTO {raw} VALUES (902, DATE'2024-01-03')")
    second = _call(spark, "run", execution_time="2024-01-03 18:00:00")
    status = _call(spark, "status", model=name, execution_time="2024-01-03 18:00:00")

    assert [(r.start.isoformat(), r.end.isoformat()) for r in first] == [("2024-01-01T00:00:00", "2024-01-03T10:00:00")]
    assert [(r.start.isoformat(), r.end.isoformat()) for r in second] == [("2024-01-03T00:00:00", "2024-01-03T18:00:00")]
    assert _counts(spark, name)["2024-01-03"] == 11
    assert [(r.state, r.end.isoformat()) for r in status][0] == ("covered", "2024-01-03T18:00:00"), \
        "the partial day is recorded as built up to where it was built, as SQLMesh records it"


def test_each_finished_batch_is_reported_as_it_happens_with_n_of_total(spark, isolated, caplog):
    from pyspark_incr.run import progress

    raw, name = _raw(spark, isolated), f"{isolated}.daily"
    _call(spark, "create_model", definition=_model(name, raw, kind_extra=", batch_size 2"))
    events = []
    unsubscribe = progress.subscribe(events.append)
    try:
        with caplog.at_level("INFO", logger="pyspark_incr.run"):
            _call(spark, "apply", execution_time="2024-01-06 00:00:00", concurrency=1)  # batches in order
    finally:
        unsubscribe()

    finished = [e for e in events if isinstance(e, progress.Event)]
    assert [(e.done, e.total, e.result.intervals) for e in finished] == [(1, 3, 2), (2, 3, 2), (3, 3, 1)]
    assert [(e.done, e.total, e.model, str(e.interval)) for e in events if isinstance(e, progress.Started)] == [
        (0, 3, None, "None"), (0, 3, name, "[2024-01-01, 2024-01-03)"), (1, 3, name, "[2024-01-03, 2024-01-05)"),
        (2, 3, name, "[2024-01-05, 2024-01-06)")]
    assert f"[1/3] {name} build [2024-01-01, 2024-01-03) ok, 2 rows in" in caplog.text


def test_status_since_until_shows_only_that_window(spark, isolated):
    raw, name = _raw(spark, isolated), f"{isolated}.daily"
    _call(spark, "create_model", definition=_model(name, raw))
    _call(spark, "apply", execution_time="2024-01-04 00:00:00")

    rows = _call(spark, "status", model=name, execution_time="2024-01-08 00:00:00", since="2024-01-02", until="2024-01-05")

    assert [(r.state, r.start.date().isoformat(), r.end.date().isoformat()) for r in rows] == [
        ("covered", "2024-01-02", "2024-01-04"), ("missing", "2024-01-04", "2024-01-06")]
