"""A project's ``audits/**/*.sql``: its custom audits, and checking the audit names its models call."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from pyspark_incr.errors import IncrError, ModelDefinitionError
from pyspark_incr.model.audit_defs import AuditDef, parse_audits
from pyspark_incr.model.definition import Model
from pyspark_incr.model.audits import BUILTINS, unknown_audit
from pyspark_incr.project.report import Report, raise_first


def load_audits(root: Path, dialect: str = "spark", report: Report = raise_first) -> dict[str, AuditDef]:
    """Every custom audit under ``root/audits`` by name (none without the folder; hidden folders skipped).

    A broken file or audit goes to ``report`` and is left out.
    """
    folder = root / "audits"
    if not folder.is_dir():
        return {}
    found: dict[str, AuditDef] = {}
    for path in sorted(folder.rglob("*.sql")):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        try:
            audits = parse_audits(path.read_text(encoding="utf-8"), str(path), dialect)
        except IncrError as e:
            report(path, e)
            continue
        for audit in audits:
            if audit.name in BUILTINS:
                report(path, ModelDefinitionError(
                    f"{audit.located}: custom audit {audit.name} has the name of the built-in audit {audit.name}; "
                    "rename it (built-in audits cannot be replaced)"
                ))
            elif audit.name in found:
                report(path, ModelDefinitionError(
                    f"audit {audit.name} is defined twice: {found[audit.name].located} and {audit.located}; rename one"
                ))
            else:
                found[audit.name] = audit
    return found


def check_calls(models: Iterable[Model], custom: dict[str, AuditDef], report: Report = raise_first) -> None:
    """Refuse a model calling an audit that is neither built in nor one of the project's (to ``report``)."""
    for model in models:
        for name, _ in model.audits:
            if name not in BUILTINS and name not in custom:
                report(Path(model.source), unknown_audit(name, f"model {model.name} ({model.located})", list(custom)))
