"""Custom SQL audits (a project's ``audits/*.sql``): parsed, carried by the models calling them, run like built-ins."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import state_rows, tables_in, call as _call
from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.audit_defs import AuditDef, parse_audits
from pyspark_incr.model.definition import reparse
from pyspark_incr.model.fingerprint import data_hash, metadata_hash
from pyspark_incr.project.loader import load_project
from pyspark_incr.state.snapshot import from_snapshot, to_snapshot

RULES = """\
-- Rules for amounts.
AUDIT (
  name assert_above,
  defaults (threshold := 0)
);
SELECT * FROM @this_model WHERE @column <= @threshold;

AUDIT (name assert_known, dialect duckdb, blocking false);
SELECT * FROM @this_model AS t WHERE t.amount::DOUBLE IS NULL
"""


def _write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _model(name: str, audits: str, batch_size: int = 1) -> str:
    # One row per day; `amount` is NULL on 2024-01-02 and negative on 2024-01-03 (as in test_audits.py).
    return (
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size {batch_size}), "
        f"start '2024-01-01', audits ({audits}));\n"
        "SELECT ds, CASE WHEN ds = DATE'2024-01-02' THEN NULL WHEN ds = DATE'2024-01-03' THEN -1 ELSE 5 END AS amount "
        "FROM (SELECT DATE_ADD(DATE'2024-01-01', CAST(id AS INT)) AS ds FROM range(5)) "
        "WHERE ds BETWEEN @start_ds AND @end_ds"
    )


def _project(root: Path, models: dict[str, str], rules: str = RULES) -> Path:
    for name, text in models.items():
        _write(root, f"models/{name.split('.')[1]}.sql", text)
    _write(root, "audits/rules.sql", rules)
    return root


# =========================================================================== parsing


def test_an_audit_file_holds_several_audits_with_their_dialect_blocking_and_defaults():
    above, known = parse_audits(RULES, "audits/rules.sql")

    assert (above.name, above.blocking, above.defaults, above.arguments) == (
        "assert_above", True, (("threshold", "0"),), ("column", "threshold"))
    assert above.located == "audits/rules.sql: line 3, column 3"
    assert (known.name, known.blocking, known.arguments) == ("assert_known", False, ())
    assert "CAST(t.amount AS DOUBLE) IS NULL" in known.query, "DuckDB's :: cast is transpiled to Spark"


def test_a_project_model_carries_only_the_custom_audits_it_calls(tmp_path):
    _project(tmp_path, {"s.a": _model("s.a", "assert_above(column := amount), not_null(columns := (ds))"),
                        "s.b": _model("s.b", "not_null(columns := (ds))")})

    by_name = {m.name: m for m in load_project(tmp_path)}

    assert [a.name for a in by_name["s.a"].custom_audits] == ["assert_above"]
    assert by_name["s.b"].custom_audits == () and by_name["s.b"].context == ""


def test_a_stored_model_reparsed_without_the_project_has_the_same_custom_audits(tmp_path):
    _project(tmp_path, {"s.a": _model("s.a", "assert_above(column := amount), assert_known")})
    [model] = load_project(tmp_path)
    shutil.rmtree(tmp_path / "audits")

    again = reparse(model.definition, model.source, model.context)

    assert again.custom_audits == model.custom_audits and len(again.custom_audits) == 2
    assert [a.located for a in again.custom_audits] == [a.located for a in model.custom_audits]
    assert again.context == model.context
    assert from_snapshot(to_snapshot(model)) == model


def test_editing_an_audits_sql_changes_the_metadata_of_its_models_not_their_data(tmp_path):
    _project(tmp_path, {"s.a": _model("s.a", "assert_above(column := amount)")})
    [before] = load_project(tmp_path)
    _write(tmp_path, "audits/rules.sql", RULES.replace("@column <= @threshold", "@column < @threshold"))
    [after] = load_project(tmp_path)

    assert data_hash(before) == data_hash(after)
    assert metadata_hash(before) != metadata_hash(after)


@pytest.mark.parametrize("rules, models, fragment", [
    pytest.param("AUDIT (name broken);\nSELECT * FROM @this_model WHERE (", {},
                 r"audit broken \(.*rules\.sql\): line 2, column 33: the query cannot be parsed", id="unparsable"),
    pytest.param("AUDIT (name not_null);\nSELECT * FROM @this_model", {},
                 r"rules\.sql: line 1, column 8: custom audit not_null has the name of the built-in audit not_null",
                 id="built-in name"),
    pytest.param(RULES, {"s.a": _model("s.a", "assert_abov(column := amount)")},
                 r"model s\.a \(.*\): unknown audit 'assert_abov'; built-in audits: .*not_null.*; "
                 r"custom audits: assert_above, assert_known", id="unknown name"),
    pytest.param(RULES + ";\nAUDIT (name assert_above); SELECT * FROM @this_model", {},
                 r"audit assert_above is defined twice: .*rules\.sql: line 3, column 3 and .*rules\.sql: line 11",
                 id="defined twice"),
])
def test_a_wrong_audit_file_or_call_is_refused_when_the_project_loads(tmp_path, rules, models, fragment):
    _project(tmp_path, models or {"s.ok": _model("s.ok", "not_null(columns := (ds))")}, rules)

    with pytest.raises(ModelDefinitionError, match=fragment):
        load_project(tmp_path)


# =========================================================================== end to end


T = "2024-01-05 00:00:00"


def test_a_passing_custom_audit_lets_every_batch_count(spark, isolated, tmp_path):
    name = f"{isolated}.passing"
    root = _project(tmp_path, {name: _model(name, "assert_above(column := amount, threshold := -5)", 2)})

    rows = _call(spark, "apply", project=str(root), execution_time=T)

    assert [(r.start.date().isoformat(), r.status, r.message or "") for r in rows] == [
        ("2024-01-01", "ok", ""), ("2024-01-03", "ok", "")]


def test_a_failing_blocking_custom_audit_keeps_its_interval_missing_and_stops_later_batches(spark, isolated, tmp_path):
    name = f"{isolated}.checked"
    root = _project(tmp_path, {name: _model(name, "assert_above(column := amount)")})

    rows = _call(spark, "apply", project=str(root), execution_time=T, concurrency=1)  # one batch at a time
    status = _call(spark, "status", model=name, execution_time=T)

    assert [(r.start.date().isoformat(), r.status) for r in rows] == [
        ("2024-01-01", "ok"), ("2024-01-02", "ok"), ("2024-01-03", "failed")]
    assert "Audit assert_above(column := amount) failed: 1 bad rows" in rows[2].message
    assert [(r.state, r.start.date().isoformat(), r.end.date().isoformat()) for r in status] == [
        ("covered", "2024-01-01", "2024-01-03"), ("missing", "2024-01-03", "2024-01-05")]


def test_a_non_blocking_custom_audit_warns_by_definition_or_by_call(spark, isolated, tmp_path):
    by_definition, by_call = f"{isolated}.by_definition", f"{isolated}.by_call"
    root = _project(tmp_path, {by_definition: _model(by_definition, "assert_known", 4),
                               by_call: _model(by_call, "assert_above(column := amount, blocking := false)", 4)})

    rows = {r.model: r for r in _call(spark, "apply", project=str(root), execution_time=T)}

    assert (rows[by_definition].status, rows[by_definition].intervals) == ("ok", 4)
    assert rows[by_definition].message == "Warning: audit assert_known() found 1 bad rows."
    assert (rows[by_call].status, rows[by_call].intervals) == ("ok", 4)
    assert rows[by_call].message == "Warning: audit assert_above(column := amount, blocking := FALSE) found 1 bad rows."


def test_incr_run_audits_new_batches_from_state_without_the_project(spark, isolated, tmp_path):
    name = f"{isolated}.later"
    root = _project(tmp_path, {name: _model(name, "assert_above(column := amount)")})
    first = _call(spark, "apply", project=str(root), execution_time="2024-01-03 00:00:00")
    shutil.rmtree(root)

    rows = _call(spark, "run", execution_time=T, concurrency=1)  # one batch at a time: the failure stops the next

    assert [r.status for r in first] == ["ok", "ok"]
    assert [(r.start.date().isoformat(), r.status) for r in rows] == [("2024-01-03", "failed")]
    assert "Audit assert_above(column := amount) failed: 1 bad rows" in rows[0].message


def test_incr_audit_runs_custom_audits_on_demand(spark, isolated, tmp_path):
    name = f"{isolated}.ondemand"
    audits = "assert_above(column := amount, blocking := false), assert_known, not_null(columns := (ds))"
    root = _project(tmp_path, {name: _model(name, audits, 5)})
    _call(spark, "apply", project=str(root), execution_time="2024-01-06 00:00:00")

    whole = _call(spark, "audit", model=name)
    first_day = _call(spark, "audit", model=name, start="2024-01-01", end="2024-01-01")

    assert [(r.audit.split("(")[0], r.bad_rows, r.status) for r in whole] == [
        ("assert_above", 1, "warning"), ("assert_known", 1, "warning"), ("not_null", 0, "ok")]
    assert [r.bad_rows for r in first_day] == [0, 0, 0]


def test_editing_an_audits_sql_is_planned_as_a_metadata_change(spark, isolated, tmp_path):
    name = f"{isolated}.edited"
    root = _project(tmp_path, {name: _model(name, "assert_above(column := amount, threshold := -5)", 5)})
    _call(spark, "apply", project=str(root), execution_time=T)
    _write(root, "audits/rules.sql", RULES.replace("@column <= @threshold", "@column < @threshold"))

    planned = _call(spark, "plan", project=str(root), execution_time=T)

    assert [(r.model, r.change, r.intervals) for r in planned] == [(name, "metadata", 0)]


@pytest.mark.parametrize("rules, audits, fragment", [
    pytest.param("AUDIT (name broken);\n  SELECT * FROM @this_model WHERE amount > (", "broken",
                 r"audit broken \(.*rules\.sql\): line 2, column 44: the query cannot be parsed", id="unparsable"),
    pytest.param("AUDIT (name not_null); SELECT * FROM @this_model", "not_null(columns := (ds))",
                 "custom audit not_null has the name of the built-in audit not_null", id="built-in name"),
    pytest.param(RULES, "no_such_audit(column := amount)",
                 "unknown audit 'no_such_audit'; built-in audits: .*; custom audits: assert_above, assert_known",
                 id="unknown name"),
    pytest.param(RULES, "assert_above(threshold := 1)",
                 r"model .*\.bad \(.*\): audit assert_above needs column := \.\.\.: its query \(.*rules\.sql: line 3, "
                 r"column 3\) uses @column, which has no default", id="missing argument"),
    pytest.param(RULES, "assert_above(column := price)",
                 r"audit assert_above\(column := price\) refers to price, which the query does not produce",
                 id="unknown column"),
    pytest.param("AUDIT (name wrong); SELECT * FROM @this_model WHERE price > 0", "wrong",
                 r"audit wrong\(\) \(.*rules\.sql: line 1, column 8\): Spark cannot run its query on the model's output",
                 id="query Spark refuses"),
])
def test_a_wrong_custom_audit_is_refused_before_anything_changes(spark, isolated, tmp_path, rules, audits, fragment):
    name = f"{isolated}.bad"
    root = _project(tmp_path, {name: _model(name, audits)}, rules)

    for procedure in ("plan", "apply"):
        with pytest.raises(Exception, match=fragment):
            _call(spark, procedure, project=str(root), execution_time=T)

    assert sum(state_rows(spark, isolated).values()) == 0, "no state row was written"
    assert tables_in(spark, isolated) == set()


def test_a_custom_audit_record_is_plain_data():
    audit = AuditDef("a", "SELECT * FROM __incr_macro__this_model", located="x.sql: line 1, column 8")

    assert audit == AuditDef("a", "SELECT * FROM __incr_macro__this_model") and hash(audit)
