"""A project's ``audits/**/*.sql``: its custom audits, and checking the audit names its models call."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.audit_defs import AuditDef, parse_audits
from pyspark_incr.model.definition import Model
from pyspark_incr.model.audits import BUILTINS, unknown_audit


def load_audits(root: Path, dialect: str = "spark") -> dict[str, AuditDef]:
    """Every custom audit under ``root/audits`` by name (none without the folder; hidden folders skipped)."""
    folder = root / "audits"
    if not folder.is_dir():
        return {}
    found: dict[str, AuditDef] = {}
    for path in sorted(folder.rglob("*.sql")):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        for audit in parse_audits(path.read_text(encoding="utf-8"), str(path), dialect):
            if audit.name in BUILTINS:
                raise ModelDefinitionError(
                    f"{audit.located}: custom audit {audit.name} has the name of the built-in audit {audit.name}; "
                    "rename it (built-in audits cannot be replaced)"
                )
            if audit.name in found:
                raise ModelDefinitionError(
                    f"audit {audit.name} is defined twice: {found[audit.name].located} and {audit.located}; rename one"
                )
            found[audit.name] = audit
    return found


def check_calls(models: Iterable[Model], custom: dict[str, AuditDef]) -> None:
    """Refuse a model calling an audit that is neither built in nor one of the project's."""
    for model in models:
        for name, _ in model.audits:
            if name not in BUILTINS and name not in custom:
                raise unknown_audit(name, f"model {model.name} ({model.located})", list(custom))
