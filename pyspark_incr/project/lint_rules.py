"""Lint rules: SQLMesh's ``Rule`` class, its built-in rules, and the loader of a project's ``linter/*.py``.

A rule is a class; its name is the class name lowercased (as SQLMesh names them), its docstring the
message of a violation that gives none. Every subclass of :class:`Rule` defined here or in another room
(the incremental safety rules live in :mod:`pyspark_incr.plan.lint_safety`) registers itself in
:data:`REGISTRY`; a project's own rules, from ``linter/*.py``, go to the project's rule set instead
(one named as a built-in replaces it there).
A SQLMesh rule file imports ``from sqlmesh.core.linter.rule import Rule, RuleViolation``: those names
resolve to this module's stand-ins (:mod:`pyspark_incr.model.pyfiles`), so it loads unedited.

>>> NoMissingAudits.name, REGISTRY["nomissingaudits"] is NoMissingAudits, NoMissingAudits(None).violation()
('nomissingaudits', True, nomissingaudits: Model `audits` must be configured to test data quality.)
"""

from __future__ import annotations

import csv
import re
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Iterable, Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify

from pyspark_incr.errors import IncrError, ModelDefinitionError
from pyspark_incr.model import pyfiles, python_model
from pyspark_incr.model.definition import Model
from pyspark_incr.model.macros import PREFIX
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS
from pyspark_incr.project.loader import seed_path

#: Every rule known without a project, by name: SQLMesh's built-ins and ours.
REGISTRY: dict[str, type["Rule"]] = {}
_loading = threading.local()


@dataclass(frozen=True)
class Position:
    """A place in a file, as SQLMesh's LSP-style ranges give it: 0-based line and character."""

    line: int
    character: int


@dataclass(frozen=True)
class Range:
    """Where a violation stands in its model's file."""

    start: Position
    end: Position


class RuleViolation:
    """What a rule found wrong in one model (SQLMesh's ``RuleViolation``)."""

    def __init__(self, rule: "Rule", violation_msg: str, violation_range: Range | None = None,
                 fixes: list | None = None) -> None:
        self.rule = rule
        self.violation_msg = violation_msg
        self.violation_range = violation_range
        self.fixes = fixes or []

    def __repr__(self) -> str:
        return f"{self.rule.name}: {self.violation_msg}"


class Rule:
    """The base class for a rule."""

    name: ClassVar[str] = "rule"
    #: True for a rule run as a warning in a project whose config.yaml has no ``linter:`` section.
    default_warning: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            cls.name = cls.__name__.lower()
        if cls.__dict__.get("abstract"):  # a base other rules share, no rule itself
            return
        loading = getattr(_loading, "found", None)  # a project's linter/*.py file is running
        if loading is not None:
            loading.append(cls)
        else:
            REGISTRY[cls.name] = cls

    def __init__(self, context: "LintContext | None") -> None:
        self.context = context

    def check_model(self, model: Any) -> "RuleViolation | list[RuleViolation] | None":
        """The violation(s) of this rule in ``model``, or None."""
        raise NotImplementedError(f"lint rule {self.name} defines no check_model(self, model)")

    @property
    def summary(self) -> str:
        """What the rule checks: its docstring."""
        return (self.__doc__ or "").strip()

    def violation(self, violation_msg: str | None = None, violation_range: Range | None = None,
                  fixes: list | None = None) -> RuleViolation:
        """A violation of this rule, its message the rule's summary unless given."""
        return RuleViolation(self, violation_msg or self.summary, violation_range, fixes)

    def __repr__(self) -> str:
        return self.name


@dataclass
class LintContext:
    """What a rule may ask about the project besides its model (SQLMesh rules get the Context as ``self.context``)."""

    path: Path
    models: Mapping[str, Model]
    models_with_tests: frozenset[str] = frozenset()
    #: Output column names of the models whose columns are known offline, lowercased (see :func:`known_columns`).
    columns: dict[str, list[str]] = field(default_factory=dict)

    def get_model(self, name: str) -> Model | None:
        """The project's model named ``name`` (``schema.table``), or None."""
        return self.models.get(name.lower())


class LintModel:
    """A model as a rule sees it: every field of the record, the query as a sqlglot expression (as SQLMesh's
    ``model.query``), and the names SQLMesh rules use (``fqn``, ``ignored_rules``, ``render_query()``)."""

    def __init__(self, model: Model) -> None:
        self._model = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    @property
    def record(self) -> Model:
        """The model record itself."""
        return self._model

    @cached_property
    def query(self) -> exp.Query | None:
        """The compiled query parsed (runtime macros as ``${start_ds}`` parameters); None for a model without SQL."""
        if self._model.query is None or python_model.is_python(self._model):
            return None
        try:
            return sqlglot.parse_one(self._model.query, read="spark")
        except SQLGLOT_ERRORS:
            return None

    def render_query(self) -> exp.Query | None:
        """The query (SQLMesh renders it for the run; here it is the compiled query, macros left as parameters)."""
        return self.query

    @property
    def fqn(self) -> str:
        return self._model.name

    @property
    def _path(self) -> Path | None:
        return None if self._model.source == "registry" else Path(self._model.source)


# ---------------------------------------------------------------- SQLMesh's built-in rules


class NoSelectStar(Rule):
    """Query should not contain SELECT * on its outer most projections, even if it can be expanded."""

    def check_model(self, model: LintModel) -> RuleViolation | None:
        return self.violation() if model.query is not None and model.query.is_star else None


class InvalidSelectStarExpansion(Rule):
    """The outer SELECT * can be expanded into columns only when every table it reads has known columns."""

    def check_model(self, model: LintModel) -> RuleViolation | None:
        query = model.query
        if query is None or not any(s.is_star for s in query.selects) or self.context is None:
            return None
        missing = [d for d in model.depends_on if d != model.name and d not in self.context.columns]
        if not missing:
            return None
        return self.violation(
            f"SELECT * cannot be expanded due to missing schema(s) for model(s): {', '.join(map(repr, missing))}. "
            f"Declare their columns (a columns property, or external_models.yaml) or list the columns of "
            f"model {model.name!r} instead of *.")


class AmbiguousOrInvalidColumn(Rule):
    """A column the query names does not exist in the tables it reads, or could come from more than one."""

    def check_model(self, model: LintModel) -> RuleViolation | None:
        error = _qualify_error(model, self.context)
        if error is None:
            return None
        return self.violation(f"{error} for model '{model.name}', the column may not exist or is ambiguous.")


class NoMissingAudits(Rule):
    """Model `audits` must be configured to test data quality."""

    def check_model(self, model: LintModel) -> RuleViolation | None:
        symbolic = model.kind.name in ("EXTERNAL", "EMBEDDED")  # they never run, so nothing to audit
        return None if model.audits or symbolic else self.violation()


class NoMissingUnitTest(Rule):
    """All models must have a unit test found in the tests/ directory yaml files"""

    def check_model(self, model: LintModel) -> RuleViolation | None:
        if model.kind.name == "EXTERNAL" or self.context is None or model.name in self.context.models_with_tests:
            return None
        return self.violation(f"Model {model.name} is missing unit test(s). Please add in the tests/ directory.")


class NoMissingExternalModels(Rule):
    """All external models must be registered in the external_models.yaml file"""

    def check_model(self, model: LintModel) -> RuleViolation | None:
        if model.kind.name == "EXTERNAL" or self.context is None:
            return None
        missing = sorted(d for d in model.depends_on if self.context.get_model(d) is None)
        if not missing:
            return None
        return self.violation(f"Model '{model.name}' depends on unregistered external models: {', '.join(missing)}. "
                              "Please register them in the external models file (external_models.yaml).")


class NoAmbiguousProjections(Rule):
    """All projections in a model must have unique & inferrable names or explicit aliases."""

    def check_model(self, model: LintModel) -> RuleViolation | None:
        query = model.render_query()
        if query is None:
            return None
        seen: set[str] = set()
        for projection in query.selects:
            alias = projection.output_name
            if alias == "*" or _left_for_run(projection):
                continue
            if not alias:
                return self.violation(f"Outer projection '{projection.sql(dialect='spark')}' must have inferrable "
                                      "names or explicit aliases.")
            if alias in seen:
                return self.violation(f"Found duplicate outer select name '{alias}'")
            seen.add(alias)
        return None


def _left_for_run(node: exp.Expression) -> bool:
    """A macro call the run evaluates (``@STAR(...)`` reads a table's columns): its columns are not known yet."""
    return isinstance(node, exp.Anonymous) and node.name.lower().startswith(PREFIX)


# ---------------------------------------------------------------- columns known offline


def known_columns(models: Iterable[Model], order: Iterable[str]) -> dict[str, list[str]]:
    """Each model's output columns where they are known without the catalog: declared ``columns``, a seed's
    CSV header, else the query's projections once every table it reads has known columns (``order``: the
    model names, parents first)."""
    by_name = {m.name: m for m in models}
    found: dict[str, list[str]] = {}
    for name in order:
        model = by_name.get(name)
        if model is None:
            continue
        columns = [c.lower() for c, _ in model.columns] or _seed_header(model) or _projections(model, found)
        if columns:
            found[name] = columns
    return found


def _seed_header(model: Model) -> list[str]:
    if model.kind.name != "SEED" or model.source == "registry":
        return []
    try:
        with open(seed_path(model), newline="", encoding="utf-8") as f:
            header = next(csv.reader(f, delimiter=dict(model.kind.csv_settings).get("delimiter", ",")), [])
    except (OSError, UnicodeDecodeError):
        return []
    return [h.strip().lower() for h in header if h.strip()]


def _projections(model: Model, known: dict[str, list[str]]) -> list[str]:
    query = LintModel(model).query
    if query is None:
        return []
    if any(s.is_star for s in query.selects):
        qualified = _qualified(query, model, known)
        query = qualified if isinstance(qualified, exp.Query) else None
    names = [s.output_name.lower() for s in query.selects] if query is not None else []
    # a duplicate name makes the table's columns ambiguous: readers of it cannot be checked
    return names if names and all(names) and "*" not in names and len(set(names)) == len(names) else []


def _qualified(query: exp.Query, model: Model, known: dict[str, list[str]]) -> exp.Query | Exception | None:
    """The query with every column qualified (stars expanded) against ``known``; the error that stops it;
    None when a table it reads has unknown columns (nothing can be said then, as SQLMesh says nothing)."""
    deps = [d for d in model.depends_on if d != model.name]
    macro_tables = any(t.name.lower().startswith(PREFIX) for t in query.find_all(exp.Table))  # @this_model
    if any(d not in known for d in deps) or macro_tables or any(map(_left_for_run, query.find_all(exp.Anonymous))):
        return None
    schema: dict[str, dict[str, dict[str, str]]] = {}
    for dep in deps:
        db, table = dep.split(".", 1)
        schema.setdefault(db, {})[table] = {c: "STRING" for c in known[dep]}
    try:
        return qualify(query.copy(), dialect="spark", schema=schema, validate_qualify_columns=True,
                       quote_identifiers=False, identify=False)
    except (SqlglotError, *SQLGLOT_ERRORS) as e:
        return e


def _qualify_error(model: LintModel, context: LintContext | None) -> str | None:
    if model.query is None or context is None:
        return None
    result = _qualified(model.query, model.record, context.columns)
    if not isinstance(result, Exception):
        return None
    # the position sqlglot gives is in the compiled query, not in the model's file
    return re.sub(r"\.? Line: \d+, Col: \d+\.?", "", str(result).splitlines()[0])


# ---------------------------------------------------------------- a project's own rules


def load_project_rules(root: Path) -> dict[str, type[Rule]]:
    """The rules of ``root/linter/*.py`` by name: every subclass of :class:`Rule` the files define."""
    folder = root / "linter"
    found: dict[str, type[Rule]] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.glob("*.py")):
        _loading.found = []
        try:
            pyfiles.run_file(path)
            rules = list(_loading.found)
        finally:
            _loading.found = None
        found.update((rule.name, rule) for rule in rules)  # one named as a built-in replaces it, as in SQLMesh
    return found


def run_rule(rule: type[Rule], model: LintModel, context: LintContext) -> list[RuleViolation]:
    """The violations ``rule`` finds in ``model``; a rule that raises is a :class:`ModelDefinitionError` naming it."""
    try:
        result = rule(context).check_model(model)
    except IncrError:
        raise
    except Exception as e:  # noqa: BLE001 - a project's rule is the project's code
        raise ModelDefinitionError(f"lint rule {rule.name} failed on model {model.name}: {type(e).__name__}: {e}; "
                                   "leave it off for this model (ignored_rules), or fix it if it is the "
                                   "project's own (linter/)") from None
    if result is None:
        return []
    return [result] if isinstance(result, RuleViolation) else list(result)


pyfiles.stand_in("Rule", Rule)
pyfiles.stand_in("RuleViolation", RuleViolation)
pyfiles.stand_in("Range", Range)
pyfiles.stand_in("Position", Position)
pyfiles.stand_in("Model", LintModel, unless_offered=True)
pyfiles.stand_in("SqlModel", LintModel, unless_offered=True)
