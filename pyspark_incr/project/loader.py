"""Loading a project directory.

``models/**/*.sql`` (one model per file; hidden folders skipped), ``models/**/*.py`` (Python
models), ``audits/**/*.sql`` (custom audits), ``seeds/`` (CSV files SEED models point at),
``external_models.yaml`` and ``config.yaml`` (model defaults, variables, plugin settings).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path

from pyspark_incr.errors import ArgumentError, IncrError, ModelDefinitionError
from pyspark_incr.model.definition import Model, parse_models, parse_python_models
from pyspark_incr.model.signals import load_signal_files
from pyspark_incr.model.macro_python import ProjectMacros, load_dir  # Python macros
from pyspark_incr.project.audit_files import check_calls, load_audits
from pyspark_incr.project.config import ProjectConfig, load_config
from pyspark_incr.project.external import load_external_models
from pyspark_incr.project.report import Report, raise_first


@dataclass(frozen=True)
class Project:
    """A loaded project: its models and its config."""

    root: Path
    models: tuple[Model, ...]
    config: ProjectConfig = field(default_factory=ProjectConfig)


def load(path: str | Path, report: Report = raise_first) -> Project:
    """Load the project at ``path``: every model, with config defaults and variables applied.

    Each broken file goes to ``report`` (by default the first one raises); a reporter that
    returns gets the project without the parts that did not load.
    """
    root = Path(path).expanduser()
    models_dir = root / "models"
    if not _is_dir(models_dir):
        raise ArgumentError(
            f"project {str(path)!r}: no models/ directory there; pass the project root "
            "(the directory holding models/*.sql)"
        )
    config = _config(root, report)
    files = [f for f in sorted(models_dir.rglob("*.sql"))
             if not any(part.startswith(".") for part in f.relative_to(models_dir).parts)]
    defaults = dict(config.model_defaults)
    if config.settings.get("table_format"):
        defaults.setdefault("table_format", config.settings["table_format"].lower())
    dialect = config.model_defaults.get("dialect", "spark")
    custom = load_audits(root, dialect, report)
    signal_files = load_signal_files(root, report)  # signals: signals/*.py
    python_macros = _python_macros(root, report)  # Python macros: macros/**/*.py
    parsed = []
    for f in files:
        try:
            parsed.extend(parse_models(f.read_text(encoding="utf-8"), str(f), defaults, config.variables,
                                       custom.values(), signal_files, python_macros=python_macros))
        except IncrError as e:
            report(f, e)
    for f in _python_files(models_dir):  # Python models: models/**/*.py with @model(...)
        try:
            parsed.extend(parse_python_models(f.read_text(encoding="utf-8"), str(f), defaults, config.variables,
                                              custom.values(), signal_files, python_macros=python_macros))
        except IncrError as e:
            report(f, e)
    check_calls(parsed, custom, report)
    try:
        external = load_external_models(root, dialect)
    except IncrError as e:
        report(_external_file(root), e)
        external = []
    models = _by_name([*parsed, *external], report)
    return Project(root, tuple(m for m in models.values() if m.enabled), config)


def _by_name(found: list[Model], report: Report) -> dict[str, Model]:
    """The models by name, a seed's with the hash of its CSV; a name defined twice keeps its first definition."""
    models: dict[str, Model] = {}
    for model in found:
        if model.name in models:
            report(Path(model.source), ModelDefinitionError(
                f"model {model.name} is defined twice: {models[model.name].located} and {model.located}; rename one"
            ))
            continue
        try:
            models[model.name] = with_content_hash(model)
        except IncrError as e:
            report(Path(model.source), e)
            models[model.name] = model
    return models


def _config(root: Path, report: Report) -> ProjectConfig:
    """``config.yaml``; all defaults when it is reported broken."""
    try:
        return load_config(root)
    except IncrError as e:
        report(next((p for p in (root / "config.yaml", root / "config.yml") if p.is_file()), root / "config.yaml"), e)
        return ProjectConfig()


def _external_file(root: Path) -> Path:
    return next((p for p in (root / "external_models.yaml", root / "external_models.yml") if p.is_file()),
                root / "external_models.yaml")


def _python_files(models_dir: Path) -> list[Path]:
    """``models/**/*.py`` but ``__init__.py`` files and hidden folders (Python models)."""
    return [f for f in sorted(models_dir.rglob("*.py")) if f.name != "__init__.py"
            and not any(part.startswith(".") for part in f.relative_to(models_dir).parts)]


def _python_macros(root: Path, report: Report) -> ProjectMacros:
    """``macros/**/*.py``; none when one is reported broken (the models calling them say so)."""
    try:
        return load_dir(root)
    except IncrError as e:
        report(root / "macros", e)
        return ProjectMacros()


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
