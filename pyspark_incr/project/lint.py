"""``pyspark-incr lint [DIR]``: a project's models checked against lint rules, offline, as ``sqlmesh lint`` does.

The rules are those of :mod:`pyspark_incr.project.lint_rules` (SQLMesh's built-ins), the incremental
safety check's (:mod:`pyspark_incr.plan.lint_safety`, registered when imported) and the project's own
``linter/*.py``. Which run, and how, is config.yaml's ``linter:`` section, read as SQLMesh reads it:
``enabled`` (false by default), ``rules`` (violations are errors), ``warn_rules`` (warnings) and
``ignored_rules``, each a list of rule names or ``ALL``; a model's ``ignored_rules`` leaves rules off
for that model. A project without a ``linter:`` section gets the rules that declare themselves a default
(the safety rules) as warnings, so the command says something useful before it is configured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from pyspark_incr.errors import IncrError, ModelDefinitionError
from pyspark_incr.model.definition import Model
from pyspark_incr.project import unit_tests
from pyspark_incr.project.dag import topological
from pyspark_incr.project.lint_rules import (
    REGISTRY, LintContext, LintModel, Rule, known_columns, load_project_rules, run_rule,
)
from pyspark_incr.project.loader import Project, load

ERROR, WARNING = "error", "warning"
_KEYS = ("enabled", "rules", "warn_rules", "ignored_rules", "use_project_index")
_AT = re.compile(r"line (\d+), column (\d+)")


@dataclass(frozen=True)
class Linter:
    """The rules to run, by severity, after ``ignored_rules``; ``enabled`` False runs none."""

    enabled: bool
    all_rules: Mapping[str, type[Rule]]
    errors: Mapping[str, type[Rule]]
    warnings: Mapping[str, type[Rule]]


@dataclass(frozen=True)
class Finding:
    """One violation: where, which rule, how bad, what it says."""

    file: Path
    line: int
    col: int
    rule: str
    severity: str
    message: str
    model: str = ""

    def describe(self) -> str:
        """``file:line:col: severity rule: message``, the file relative to the working directory when below it."""
        try:
            shown = self.file.resolve().relative_to(Path.cwd())
        except ValueError:
            shown = self.file
        return f"{shown}:{self.line}:{self.col}: {self.severity} {self.rule}: {self.message}"


def linter(config: Mapping[str, Any] | None, all_rules: Mapping[str, type[Rule]], where: str) -> Linter:
    """The linter ``config`` (config.yaml's ``linter:`` section; None when absent) asks for."""
    if config is None:
        defaults = {n: r for n, r in all_rules.items() if getattr(r, "default_warning", False)}
        return Linter(True, all_rules, {}, defaults)
    unknown = sorted(set(map(str, config)) - set(_KEYS))
    if unknown:
        raise ModelDefinitionError(f"{where}: unknown linter key {unknown[0]!r} (known: {', '.join(_KEYS)})")
    enabled = config.get("enabled", False)
    if not isinstance(enabled, bool):
        raise ModelDefinitionError(f"{where}: linter.enabled must be true or false, got {enabled!r}")
    ignored = select(all_rules, names(config.get("ignored_rules"), f"{where}: linter.ignored_rules"),
                     f"{where}: linter.ignored_rules")
    included = {n: r for n, r in all_rules.items() if n not in ignored}
    errors = select(included, names(config.get("rules"), f"{where}: linter.rules"), f"{where}: linter.rules",
                    ignored)
    warnings = select(included, names(config.get("warn_rules"), f"{where}: linter.warn_rules"),
                      f"{where}: linter.warn_rules", ignored)
    both = sorted(set(errors) & set(warnings))
    if both:
        raise ModelDefinitionError(f"{where}: rules cannot both warn and raise an error: {', '.join(both)}; "
                                   "keep each in one of linter.rules and linter.warn_rules")
    return Linter(enabled, all_rules, errors, warnings)


def names(value: Any, where: str) -> set[str]:
    """Rule names from a config value: one name, ``ALL``, or a list of them; lowercased."""
    if value is None:
        return set()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple, set)) or not all(isinstance(i, str) for i in items):
        raise ModelDefinitionError(f"{where}: must be a rule name, ALL, or a list of rule names, got {value!r}")
    return {i.strip().lower() for i in items}


def select(rules: Mapping[str, type[Rule]], wanted: set[str], where: str,
           ignored: Iterable[str] = ()) -> dict[str, type[Rule]]:
    """The rules ``wanted`` names (``all``: every one of ``rules``); an unknown name is an error naming it."""
    if "all" in wanted:
        return dict(rules)
    for name in sorted(wanted - set(rules)):
        also = " (it is in linter.ignored_rules too: keep it in one)" if name in ignored else ""
        raise ModelDefinitionError(f"{where}: rule {name} could not be found{also}; known rules: "
                                   f"{', '.join(sorted(rules))}")
    return {n: rules[n] for n in sorted(wanted)}


def lint_model(model: Model, lint: Linter, context: LintContext) -> list[Finding]:
    """The findings of the linter's rules in ``model``, less those its ``ignored_rules`` leave off."""
    if not lint.enabled:
        return []
    where = f"model {model.name} ({model.located}): ignored_rules"
    off = select(lint.all_rules, {n.lower() for n in model.ignored_rules}, where)
    view = LintModel(model)
    found = []
    for severity, rules in ((ERROR, lint.errors), (WARNING, lint.warnings)):
        for name, rule in rules.items():
            if name not in off:
                found += [_finding(model, name, severity, v) for v in run_rule(rule, view, context)]
    return found


def _finding(model: Model, rule: str, severity: str, violation: Any) -> Finding:
    """Where a violation stands: its range when the rule gave one, else where the model's name is written."""
    at = violation.violation_range
    if at is not None:
        line, col = at.start.line + 1, at.start.character + 1
    else:
        found = _AT.search(model.located)
        line, col = (int(found[1]), int(found[2])) if found else (1, 1)
    return Finding(Path(model.source), line, col, rule, severity, str(violation.violation_msg).strip(), model.name)


def lint_project(project: Project) -> tuple[Linter, list[Finding]]:
    """The linter the project's config asks for, and every finding in its models, in file order."""
    root = project.root
    all_rules = {**REGISTRY, **load_project_rules(root)}
    lint = linter(project.config.linter, all_rules, str(_config_file(root)))
    if not lint.enabled:
        return lint, []
    models = list(project.models)
    try:
        order = [m.name for m in topological(models)]
    except IncrError:  # a cycle: validate reports it; columns are then known only where declared
        order = sorted(m.name for m in models)
    tested = {t.model for t in unit_tests.discover(root, project.config.variables) if t.model}
    context = LintContext(root, {m.name: m for m in models}, frozenset(tested), known_columns(models, order))
    found = [f for m in models if m.source != "registry" for f in lint_model(m, lint, context)]
    return lint, sorted(found, key=lambda f: (str(f.file), f.line, f.col, f.rule))


def _config_file(root: Path) -> Path:
    return next((p for p in (root / "config.yaml", root / "config.yml") if p.is_file()), root / "config.yaml")


def command(root: Path) -> int:
    """Print every finding; 1 when one is an error (or the project does not load), else 0."""
    broken: list[Path] = []
    try:
        project = load(root, report=lambda path, error: broken.append(path))
    except IncrError as e:
        print(f"{root}: error: {e}")
        return 1
    lint, found = lint_project(project)
    for path in broken:  # validate says what is wrong: lint names the file, so its models are known unchecked
        print(f"{path}: error: does not load, so it was not linted; pyspark-incr validate shows why")
    for finding in found:
        print(finding.describe())
    warnings = sum(f.severity == WARNING for f in found)
    errors = len(found) - warnings + len(broken)
    if not lint.enabled:
        print(f"{root}: the linter is disabled (linter: enabled: false in {_config_file(root).name}); "
              "nothing checked")
    elif found or broken:
        files = len({f.file for f in found} | set(broken))
        print(f"{root}: {errors} error(s), {warnings} warning(s) in {files} file(s)")
    else:
        print(f"{root}: no lint findings ({len(lint.errors)} error rule(s), {len(lint.warnings)} warning rule(s), "
              f"{len(project.models)} model(s))")
    return 1 if errors else 0
