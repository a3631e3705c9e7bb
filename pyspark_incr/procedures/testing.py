"""incr.test: run a project's unit tests (``tests/test*.yaml``, SQLMesh's format) without touching a real table."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

from pyspark_incr.errors import ArgumentError, IncrError
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param
from pyspark_incr.project.loader import load
from pyspark_incr.project.unit_tests import UnitTest, discover
from pyspark_incr.run.unit_tests import run_tests


@procedure(
    "test",
    "Run the project's unit tests (tests/**/test*.yaml in SQLMesh's format: inputs, outputs.query and "
    "outputs.ctes, partial, vars, execution_time) on fixture rows held in temporary views: no real table is read "
    "or written. One row per test; a failed test's message shows the rows that differ (expected vs actual).",
    params=(
        Param("project", "string", "Project directory holding models/ and tests/, relative to the Spark driver's "
                                   "working directory (default: that directory)."),
        Param("select", "string", "Tests to run (default: all), comma-separated: a test name, a model name, a test "
                                  "file (tests/test_x.yaml) or file::test, each may be a glob (shop.*)."),
    ),
    output=(
        Column("test", "string", "Test name."),
        Column("model", "string", "The model it tests."),
        Column("file", "string", "Its test file, relative to the project."),
        Column("status", "string", "passed, failed (rows differ) or error (the test, its model or its SQL "
                                   "could not run)."),
        Column("message", "string", "For failed, the diff: missing/unexpected rows or per column expected vs "
                                    "actual; for error, what went wrong and what to fix."),
    ),
)
def test(spark: Any, project: str | None, select: str | None) -> list[tuple]:
    root = Path(project or ".").expanduser()
    unloaded: dict[Path, IncrError] = {}
    loaded = load(root, report=lambda path, error: unloaded.setdefault(path, error))
    tests = chosen(discover(root, loaded.config.variables), select, root)
    models = {m.name: m for m in loaded.models}
    return [(o.test.name, o.test.model, _relative(o.test.file, root), o.status, o.message)
            for o in run_tests(spark, models, tests, unloaded)]


def chosen(tests: list[UnitTest], select: str | None, root: Path) -> list[UnitTest]:
    """The tests ``select`` names (all without it); a pattern naming none is an error listing the tests."""
    patterns = [p.strip() for p in (select or "").split(",") if p.strip()]
    if not patterns:
        return tests
    picked = []
    for t in tests:
        names = (t.name, t.model, _relative(t.file, root), f"{_relative(t.file, root)}::{t.name}")
        if any(fnmatch.fnmatchcase(n.lower(), p.lower()) for n in names for p in patterns):
            picked.append(t)
    if not picked:
        listed = ", ".join(t.name for t in tests) or "none"
        raise ArgumentError(f"test: select {select!r} names no test of project {str(root)!r} (tests: {listed}); "
                            "name a test, a model, a test file or file::test")
    return picked


def _relative(file: Path, root: Path) -> str:
    try:
        return file.relative_to(root).as_posix()
    except ValueError:
        return str(file)
