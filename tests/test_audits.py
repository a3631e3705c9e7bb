"""Audits run on each batch just written: blocking failures keep the interval missing and stop the model."""

from __future__ import annotations

import pytest

from conftest import state_rows, tables_in, call as _call


def _model(name: str, audits: str, batch_size: int = 1) -> str:
    # One row per day; `amount` is NULL on 2024-01-02 and negative on 2024-01-03.
    return (
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size {batch_size}), "
        f"start '2024-01-01', audits ({audits}));\n"
        "SELECT ds, CASE WHEN ds = DATE'2024-01-02' THEN NULL WHEN ds = DATE'2024-01-03' THEN -1 ELSE 5 END AS amount "
        "FROM (SELECT DATE_ADD(DATE'2024-01-01', CAST(id AS INT)) AS ds FROM range(5)) "
        "WHERE ds BETWEEN @start_ds AND @end_ds"
    )


def test_a_failing_blocking_audit_keeps_its_interval_missing_and_stops_later_batches(spark, isolated):
    name = f"{isolated}.checked"
    _call(spark, "create_model", definition=_model(name, "not_null(columns := (amount))"))

    rows = _call(spark, "apply", execution_time="2024-01-05 00:00:00", concurrency=1)  # one batch at a time
    status = _call(spark, "status", model=name, execution_time="2024-01-05 00:00:00")

    assert [(r.start.date().isoformat(), r.status) for r in rows] == [("2024-01-01", "ok"), ("2024-01-02", "failed")]
    assert "Audit not_null(columns := (amount)) failed: 1 bad rows" in rows[1].message
    assert [(r.state, r.start.date().isoformat(), r.end.date().isoformat()) for r in status] == [
        ("covered", "2024-01-01", "2024-01-02"), ("missing", "2024-01-02", "2024-01-05")]


def test_a_non_blocking_audit_warns_and_the_batch_counts(spark, isolated):
    name = f"{isolated}.warned"
    _call(spark, "create_model", definition=_model(name, "positive_values(column := amount, blocking := false)", 4))

    rows = _call(spark, "apply", execution_time="2024-01-05 00:00:00")

    assert [(r.status, r.intervals) for r in rows] == [("ok", 4)]
    assert rows[0].message == "Warning: audit positive_values(column := amount, blocking := FALSE) found 1 bad rows."


def test_incr_audit_runs_a_models_audits_on_demand(spark, isolated):
    name = f"{isolated}.ondemand"
    audits = "not_null(columns := (amount), blocking := false), accepted_range(column := amount, min_v := 0, max_v := 10)"
    _call(spark, "create_model", definition=_model(name, audits, 5))
    _call(spark, "apply", execution_time="2024-01-06 00:00:00")

    whole = _call(spark, "audit", model=name)
    first_day = _call(spark, "audit", model=name, start="2024-01-01", end="2024-01-01")

    assert [(r.audit.split("(")[0], r.bad_rows, r.status) for r in whole] == [
        ("not_null", 1, "warning"), ("accepted_range", 1, "failed")]
    assert [r.bad_rows for r in first_day] == [0, 0]


@pytest.mark.parametrize("audits, fragment", [
    ("no_such_audit(column := amount)", "unknown audit 'no_such_audit'; built-in audits:"),
    ("not_null(columns := (price))", "audit not_null(columns := (price)) refers to price, which the query does not produce"),
    ("accepted_values(column := amount)", "audit accepted_values needs is_in := ..."),
])
def test_a_wrong_audit_is_refused_before_anything_changes(spark, isolated, audits, fragment):
    _call(spark, "create_model", definition=_model(f"{isolated}.good", "not_null(columns := (ds))"))
    before = (state_rows(spark, isolated), tables_in(spark, isolated))

    with pytest.raises(Exception, match=fragment.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        _call(spark, "create_model", definition=_model(f"{isolated}.bad", audits))

    assert (state_rows(spark, isolated), tables_in(spark, isolated)) == before
