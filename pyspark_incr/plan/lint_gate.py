"""The linter in ``incr.plan`` and ``incr.apply``, as ``sqlmesh plan`` runs it.

Only when config.yaml's ``linter:`` section has ``enabled: true`` (SQLMesh's default is off; a project
without the section is linted by ``pyspark-incr lint`` alone). A finding of a ``rules`` rule stops the
plan before anything is read or written, listing every such finding; ``warn_rules`` findings are
returned per model, for the plan to show beside it.
"""

from __future__ import annotations

from pyspark_incr.errors import LintFailed
from pyspark_incr.plan import lint_safety  # noqa: F401  (registers the safety_* rules)
from pyspark_incr.project.lint import ERROR, Finding, lint_project
from pyspark_incr.project.loader import Project


def check(project: Project) -> dict[str, tuple[str, ...]]:
    """The warnings of each model of ``project`` (``rule: message``); raises :class:`LintFailed` on an error."""
    if not project.config.linter or not project.config.linter.get("enabled", False):
        return {}
    _, found = lint_project(project)
    errors = [f for f in found if f.severity == ERROR]
    if errors:
        raise LintFailed(
            f"Cannot plan: the linter found {len(errors)} error(s) in project {project.root}:\n"
            + "\n".join(f"  {f.describe()}" for f in errors)
            + "\nFix them, or move those rules to linter.warn_rules (or ignored_rules; a model's own ignored_rules "
              "leaves a rule off for it) in config.yaml; pyspark-incr lint lists every finding.")
    warnings: dict[str, list[str]] = {}
    for f in found:
        warnings.setdefault(f.model, []).append(_warning(f))
    return {model: tuple(lines) for model, lines in warnings.items()}


def _warning(finding: Finding) -> str:
    return f"{finding.rule}: {finding.message} (line {finding.line}, column {finding.col})"
