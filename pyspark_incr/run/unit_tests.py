"""Running unit tests (``tests/test*.yaml``): the model on fixture rows, compared with the expected rows.

Each input becomes a temporary view under a unique name, dropped afterwards (:mod:`.unit_inputs`). A
SQL model's query is rendered for the test's interval and variables with every table it reads mapped
to those views (:mod:`.unit_sql`); a Python model's ``execute()`` runs with its reads mapped the same
way (:mod:`.unit_python`). Anything still reading another table is refused: a test never reads (or
writes) a real table. Rows are compared as SQLMesh compares them (:mod:`.unit_outputs`,
:mod:`.unit_diff`): in any order unless the query has an ORDER BY, expected values cast to the types
of the actual columns, floats equal within a relative 1e-5 (absolute 1e-8).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from pyspark_incr.errors import IncrError, ModelDefinitionError
from pyspark_incr.model import python_model
from pyspark_incr.model.definition import Model
from pyspark_incr.model.macros import THIS_MODEL
from pyspark_incr.project.unit_tests import Data, UnitTest
from pyspark_incr.run import unit_python
from pyspark_incr.run.unit_diff import compare, same
from pyspark_incr.run.unit_inputs import VIEW_PREFIX, fixtures, literal, rows_query, where
from pyspark_incr.run.unit_outputs import check_query
from pyspark_incr.run.unit_sql import EPOCH, rendered

__all__ = ["ERROR", "EPOCH", "FAILED", "PASSED", "VIEW_PREFIX", "Outcome", "compare", "literal", "rows_query",
           "run_test", "run_tests", "same"]

PASSED, FAILED, ERROR = "passed", "failed", "error"


@dataclass(frozen=True)
class Outcome:
    """What one test came to: ``passed``, ``failed`` (``message`` is the diff) or ``error`` (why it could not run)."""

    test: UnitTest
    status: str
    message: str = ""


def run_tests(spark: Any, models: Mapping[str, Model], tests: Sequence[UnitTest],
              unloaded: Mapping[Path, IncrError] | None = None) -> list[Outcome]:
    """Run ``tests`` against the project's ``models``; ``unloaded`` holds the project files that did not load."""
    return [run_test(spark, models, t, unloaded or {}) for t in tests]


def run_test(spark: Any, models: Mapping[str, Model], test: UnitTest,
             unloaded: Mapping[Path, IncrError]) -> Outcome:
    """One test's outcome; an error in its definition, its model or its SQL is an ``error`` outcome, not a raise."""
    from pyspark.errors import PySparkException

    if test.error is not None:
        return Outcome(test, ERROR, str(test.error))
    try:
        model = _model_under_test(models, test, unloaded)
        if python_model.is_python(model):
            with fixtures(spark, test, models) as views:
                failures = unit_python.check(spark, test, model, views)
        else:
            test = _with_self_input(test, model)
            with fixtures(spark, test, models) as views:
                failures = check_query(spark, test, model, rendered(test, model, models, views), views)
    except IncrError as e:
        return Outcome(test, ERROR, str(e))
    except PySparkException as e:
        text = str(e).split("\n\nJVM stacktrace:", 1)[0].strip()
        return Outcome(test, ERROR, f"{where(test)}: Spark refused its SQL: {text}")
    return Outcome(test, FAILED, "\n\n".join(failures)) if failures else Outcome(test, PASSED)


def _model_under_test(models: Mapping[str, Model], test: UnitTest, unloaded: Mapping[Path, IncrError]) -> Model:
    model = models.get(test.model)
    if model is None:
        for path, error in unloaded.items():
            if _mentions(path, test.model):
                raise ModelDefinitionError(f"{where(test)}: model {test.model} is defined in {path}, which did "
                                           f"not load: {error}")
        raise ModelDefinitionError(f"{where(test)}: model {test.model} is not in the project; fix model: "
                                   f"(models: {', '.join(sorted(models)) or 'none'})")
    if model.query is None and not python_model.is_python(model):
        raise ModelDefinitionError(
            f"{where(test)}: model {test.model} (kind {model.kind.name}) has no query to test: unit tests run "
            "SQL and Python models; test the models that read it")
    return model


def _with_self_input(test: UnitTest, model: Model) -> UnitTest:
    """A model reading its own table starts empty when the test gives no rows for it, as in SQLMesh."""
    reads_itself = model.name in model.depends_on or THIS_MODEL in (model.query or "").lower()
    if not reads_itself or any(name == model.name for name, _ in test.inputs):
        return test
    return replace(test, inputs=(*test.inputs, (model.name, Data(rows=()))))


def _mentions(path: Path, name: str) -> bool:
    try:
        return name in path.read_text(encoding="utf-8").lower()
    except (OSError, ValueError):
        return False
