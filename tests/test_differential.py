"""The differential suite against SQLMesh (bench/differential), checked without SQLMesh or Spark.

The suite itself runs from ``bash bench/differential.sh``; here its projects must stay loadable by
pyspark-incr and its scenarios well-formed, and its comparison must tell same from different.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

DIFFERENTIAL = Path(__file__).resolve().parents[1] / "bench" / "differential"
sys.path.insert(0, str(DIFFERENTIAL))

import run as differential  # noqa: E402

PROJECTS = sorted(p.name for p in (DIFFERENTIAL / "projects").iterdir() if (p / "steps.yaml").is_file())


@pytest.mark.parametrize("name", PROJECTS)
def test_every_differential_project_loads_with_the_pyspark_incr_loader(name):
    from pyspark_incr.project.loader import load

    project = load(DIFFERENTIAL / "projects" / name)

    assert [m for m in project.models if m.kind.builds_object], f"{name} has no model to compare"


@pytest.mark.parametrize("name", PROJECTS)
def test_every_scenario_has_steps_with_execution_times_and_compares_something(name):
    steps = differential.scenario(DIFFERENTIAL / "projects" / name)["steps"]

    assert any("plan" in s for s in steps), "a scenario starts the models with a plan"
    assert "plan" in steps[0] or "sql" in steps[0]


def test_expected_failures_name_projects_of_the_suite_with_a_reason():
    assert set(differential.EXPECTED_FAILURES) <= set(PROJECTS)
    assert all(reason.strip() for reason in differential.EXPECTED_FAILURES.values())


def test_a_broken_scenario_names_its_file_and_step(tmp_path):
    (tmp_path / "steps.yaml").write_text("steps:\n  - plan: '2024-01-01 00:00:00'\n    run: '2024-01-02 00:00:00'\n")

    with pytest.raises(ValueError, match=r"steps.yaml: step 0 must have exactly one of plan, run, sql"):
        differential.scenario(tmp_path)


def _dump(columns, rows):
    return {"columns": [list(c) for c in columns], "rows": [list(r) for r in rows]}


COLUMNS = [("ds", "date"), ("n", "bigint"), ("total", "double")]


def test_the_same_rows_in_another_order_and_within_float_tolerance_are_the_same():
    theirs = _dump(COLUMNS, [("2024-01-01", 3, 0.1 + 0.2), ("2024-01-02", 4, 1e12)])
    ours = _dump(COLUMNS, [("2024-01-02", 4, 1e12 * (1 + 1e-12)), ("2024-01-01", 3, 0.3)])

    result = differential.compare(theirs, ours)

    assert result["status"] == "same", result["detail"]
    assert result["rows"] == [2, 2]


def test_a_float_beyond_the_tolerance_is_a_difference():
    theirs = _dump(COLUMNS, [("2024-01-01", 3, 1.0)])
    ours = _dump(COLUMNS, [("2024-01-01", 3, 1.0 + 1e-6)])

    assert differential.compare(theirs, ours)["status"] == "different"


def test_different_rows_are_reported_with_counts_and_the_rows_only_one_side_has():
    theirs = _dump(COLUMNS, [("2024-01-01", 3, 1.5), ("2024-01-02", 4, 2.0), ("2024-01-02", 4, 2.0)])
    ours = _dump(COLUMNS, [("2024-01-01", 3, 1.5), ("2024-01-02", 4, 2.0), ("2024-01-03", 1, 9.0)])

    result = differential.compare(theirs, ours)

    assert result["status"] == "different"
    assert "rows: sqlmesh 3, pyspark-incr 3" in result["detail"]
    assert "only in sqlmesh [['2024-01-02', 4, 2.0]]" in result["detail"], "a duplicate row counts"
    assert "only in pyspark-incr [['2024-01-03', 1, 9.0]]" in result["detail"]


def test_a_date_against_a_string_holding_the_same_date_is_a_type_difference():
    theirs = _dump([("ds", "date")], [("2024-01-01",)])
    ours = _dump([("ds", "string")], [("2024-01-01",)])

    result = differential.compare(theirs, ours)

    assert result["status"] == "different"
    assert "type of ds: sqlmesh date vs pyspark-incr string" in result["detail"]


def test_integer_widths_and_decimal_scales_compare_by_value_with_a_note():
    theirs = _dump([("n", "int"), ("x", "decimal(10,2)")], [(1, "2.50")])
    ours = _dump([("n", "bigint"), ("x", "decimal(12,1)")], [(1, "2.5")])

    result = differential.compare(theirs, ours)

    assert result["status"] == "same", result["detail"]
    assert result["type_notes"] == ["n: int vs bigint", "x: decimal(10,2) vs decimal(12,1)"]


def test_other_column_names_are_a_difference():
    result = differential.compare(_dump([("a", "int")], [(1,)]), _dump([("b", "int")], [(1,)]))

    assert result["status"] == "different" and "columns: sqlmesh ['a'] vs pyspark-incr ['b']" in result["detail"]


def test_a_side_that_stopped_fails_every_model_from_that_step_with_its_first_error_line():
    model = _dump(COLUMNS, [("2024-01-01", 3, 1.5)])
    theirs = {"steps": [{"step": 0, "label": "plan 2024-01-02 00:00:00", "models": {"m.a": model}},
                        {"step": 2, "label": "run 2024-01-03 00:00:00", "models": {"m.a": model}}]}
    ours = {"steps": [{"step": 0, "label": "plan 2024-01-02 00:00:00", "models": {"m.a": model}}],
            "error": {"step": 2, "message": "RuntimeError: incr.run: m.a: boom"}}

    results = differential.compare_project("p", theirs, ours)

    assert [(r["step"], r["status"]) for r in results] == [
        ("plan 2024-01-02 00:00:00", "same"),
        ("run 2024-01-03 00:00:00", "pyspark-incr failed: RuntimeError: incr.run: m.a: boom"),
    ]
    assert differential.summarize(results)[0]["status"].startswith("pyspark-incr failed")


def test_a_model_only_one_side_has_is_a_difference():
    theirs = {"steps": [{"step": 0, "label": "plan", "models": {"m.a": _dump([("x", "int")], [])}}]}
    ours = {"steps": [{"step": 0, "label": "plan", "models": {}}]}

    [result] = differential.compare_project("p", theirs, ours)

    assert (result["status"], result["detail"]) == ("different", "pyspark-incr has no model m.a")


def test_an_update_replaces_only_the_projects_it_ran_and_recounts():
    same = {"status": "same", "detail": "", "step": "plan", "model": "m.a"}
    old = differential.report_of([{**same, "project": "p"}, {**same, "project": "q", "status": "different"}],
                                 {"p": {"seconds": 1.0}, "q": {"seconds": 2.0}}, {"sqlmesh": "0.236.4"}, 3.0)

    report = differential.merged(old, [{**same, "project": "q"}], {"q": {"seconds": 4.0}}, {}, 4.0)

    assert (report["same"], report["models_compared"], report["updated"]) == (2, 2, ["q"])
    assert report["projects"] == {"p": {"seconds": 1.0}, "q": {"seconds": 4.0}}
    assert report["versions"] == {"sqlmesh": "0.236.4"} and report["seconds"] == 7.0
