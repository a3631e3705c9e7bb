"""Every mistake in a project file is refused with its file, line and column, and changes nothing."""

from __future__ import annotations

import pytest

from conftest import state_rows, tables_in
from pyspark_incr.sqltext import call_sql

GOOD = "MODEL (name {p}.good, kind FULL, start '2024-01-01');\nSELECT 1 AS x\n"

#: case -> (files under models/, fragments the error must contain; {f} is the bad file's path)
CASES = {
    "unknown_property": (
        {"bad.sql": "MODEL (name {p}.x, kind FULL,\n  crn '@daily');\nSELECT 1 AS x"},
        ["{f}", "line 2, column 3", "unknown MODEL property 'crn'", "did you mean 'cron'?"],
    ),
    "wrong_property_type": (
        {"bad.sql": "MODEL (name {p}.x, kind FULL, allow_partials 'maybe');\nSELECT 1 AS x"},
        ["{f}", "line 1, column", "allow_partials must be true or false, got \"'maybe'\""],
    ),
    "unknown_kind": (
        {"bad.sql": "MODEL (\n  name {p}.x,\n  kind INCREMENTAL_BY_TIMES (time_column ds)\n);\nSELECT 1 AS ds"},
        ["{f}", "line 3, column 8", "unknown model kind 'INCREMENTAL_BY_TIMES'", "Did you mean INCREMENTAL_BY_TIME_RANGE"],
    ),
    "missing_required_kind_property": (
        {"bad.sql": "MODEL (name {p}.x,\n  kind INCREMENTAL_BY_UNIQUE_KEY (batch_size 2));\nSELECT 1 AS id"},
        ["{f}", "line 2, column 8", "kind INCREMENTAL_BY_UNIQUE_KEY needs unique_key"],
    ),
    "duplicate_model_name": (
        {"a.sql": "MODEL (name {p}.same, kind FULL);\nSELECT 1 AS x", "b.sql": "\nMODEL (name {p}.same, kind FULL);\nSELECT 2 AS x"},
        ["model {p}.same is defined twice", "a.sql: line 1, column 8", "b.sql: line 2, column 8"],
    ),
    "dependency_cycle": (
        {"a.sql": "MODEL (name {p}.a, kind FULL);\nSELECT * FROM {p}.b", "bad.sql": "MODEL (name {p}.b, kind FULL);\nSELECT * FROM {p}.a"},
        ["cycle", "{p}.a ->", "a.sql: line 1, column 8", "bad.sql: line 1, column 8"],
    ),
    "unknown_macro": (
        {"bad.sql": "MODEL (name {p}.x, kind FULL);\nSELECT 1 AS x\nWHERE @start_dss IS NOT NULL"},
        ["{f}", "line 3, column 7", "unknown macro @start_dss"],
    ),
    "malformed_time_format": (
        {"bad.sql": "MODEL (name {p}.x,\n  kind INCREMENTAL_BY_TIME_RANGE (time_column (ds, '%Y-%m-%Q')));\nSELECT 1 AS ds"},
        ["{f}", "line 2, column", "time format '%Y-%m-%Q' has an unknown directive %Q"],
    ),
    "batch_size_below_one": (
        {"bad.sql": "MODEL (name {p}.x, kind INCREMENTAL_BY_TIME_RANGE (\n  time_column ds,\n  batch_size 0));\nSELECT 1 AS ds"},
        ["{f}", "line 3, column 3", "batch_size must be at least 1, got 0"],
    ),
    "unparseable_query": (
        {"bad.sql": "MODEL (name {p}.x, kind FULL);\nSELECT a,\n  (1 + FROM t"},
        ["{f}", "line 3, column", "the query cannot be parsed"],
    ),
}


@pytest.fixture(scope="module")
def baseline(spark, module_isolated, tmp_path_factory):
    """An applied good project, so a refused call has state and tables it could damage."""
    root = tmp_path_factory.mktemp("good")
    (root / "models").mkdir()
    (root / "models" / "good.sql").write_text(GOOD.format(p=module_isolated))
    spark.sql(call_sql("apply", project=str(root), execution_time="2024-01-03")).collect()
    return module_isolated


@pytest.mark.parametrize("case", sorted(CASES))
def test_project_mistake_is_refused_with_file_line_and_column_and_changes_nothing(spark, baseline, tmp_path, case):
    files, fragments = CASES[case]
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "good.sql").write_text(GOOD.format(p=baseline))
    for name, text in files.items():
        (tmp_path / "models" / name).write_text(text.format(p=baseline))
    before = (state_rows(spark, baseline), tables_in(spark, baseline))

    for procedure in ("plan", "apply"):
        with pytest.raises(Exception) as info:
            spark.sql(call_sql(procedure, project=str(tmp_path), execution_time="2024-01-04")).collect()
        message = str(info.value)
        for fragment in fragments:
            expected = fragment.format(p=baseline, f=tmp_path / "models" / "bad.sql")
            assert expected in message, f"{expected!r} not in: {message}"

    assert (state_rows(spark, baseline), tables_in(spark, baseline)) == before
