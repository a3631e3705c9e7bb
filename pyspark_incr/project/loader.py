"""Loading a project directory.

``models/**/*.sql`` (one model per file; hidden folders skipped), ``audits/**/*.sql``
(custom audits), ``seeds/`` (CSV files SEED models point at), ``external_models.yaml``
and ``config.yaml`` (model defaults, variables, plugin settings).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path

from pyspark_incr.errors import ArgumentError, ModelDefinitionError
from pyspark_incr.model.definition import Model, parse_model
from pyspark_incr.project.audit_files import check_calls, load_audits
from pyspark_incr.project.config import ProjectConfig, load_config
from pyspark_incr.project.external import load_external_models


@dataclass(frozen=True)
class Project:
    """A loaded project: its models and its config."""

    root: Path
    models: tuple[Model, ...]
    config: ProjectConfig = field(default_factory=ProjectConfig)


def load(path: str | Path) -> Project:
    """Load the project at ``path``: every model, with config defaults and variables applied."""
    root = Path(path).expanduser()
    models_dir = root / "models"
    if not _is_dir(models_dir):
        raise ArgumentError(
            f"project {str(path)!r}: no models/ directory there; pass the project root "
            "(the directory holding models/*.sql)"
        )
    config = load_config(root)
    models: dict[str, Model] = {}
    files = [f for f in sorted(models_dir.rglob("*.sql"))
             if not any(part.startswith(".") for part in f.relative_to(models_dir).parts)]
    _refuse_python_models(models_dir)
    defaults = dict(config.model_defaults)
    if config.settings.get("table_format"):
        defaults.setdefault("table_format", config.settings["table_format"].lower())
    custom = load_audits(root, config.model_defaults.get("dialect", "spark"))
    parsed = [parse_model(f.read_text(encoding="utf-8"), str(f), defaults, config.variables, custom.values())
              for f in files]
    check_calls(parsed, custom)
    external = load_external_models(root, config.model_defaults.get("dialect", "spark"))
    for model in [*parsed, *external]:
        if model.name in models:
            raise ModelDefinitionError(
                f"model {model.name} is defined twice: {models[model.name].located} and {model.located}; rename one"
            )
        models[model.name] = with_content_hash(model)
    return Project(root, tuple(m for m in models.values() if m.enabled), config)


def _refuse_python_models(models_dir: Path) -> None:
    """Refuse SQLMesh Python models: skipping them would leave their readers without a parent."""
    python = [f for f in sorted(models_dir.rglob("*.py")) if f.name != "__init__.py"
              and not any(part.startswith(".") for part in f.relative_to(models_dir).parts)]
    if python:
        raise ModelDefinitionError(
            f"{python[0]}: Python models are not supported (only SQL models, models/**/*.sql); "
            "rewrite it as a SQL model, or build its table outside and declare it in external_models.yaml"
        )


def _is_dir(path: Path) -> bool:
    """``path.is_dir()``, False for a path the OS cannot even look up (a name too long): a clear error, no traceback."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def load_project(path: str | Path) -> list[Model]:
    """The enabled models of the project at ``path``."""
    return list(load(path).models)


def with_content_hash(model: Model) -> Model:
    """A SEED model with the hash of its CSV, so an edited file is a data change; other models as they are."""
    if model.kind.name != "SEED":
        return model
    path = seed_path(model)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError as e:
        raise ModelDefinitionError(f"model {model.name}: seed file {path} cannot be read ({e.strerror})") from None
    return replace(model, content_hash=digest)


def seed_path(model: Model) -> Path:
    """The CSV of a SEED model: relative to its model file, or to the working directory for registered models."""
    path = Path(model.kind.path).expanduser()
    if not path.is_absolute() and model.source != "registry":
        path = Path(model.source).parent / path
    return path.resolve()
