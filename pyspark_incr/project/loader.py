"""Loading a project directory: every ``models/**/*.sql`` file is one model."""

from __future__ import annotations

from pathlib import Path

from pyspark_incr.errors import ArgumentError, ModelDefinitionError
from pyspark_incr.model.definition import Model, parse_model


def load_project(path: str | Path) -> list[Model]:
    """Parse every model file of the project at ``path`` (hidden folders skipped); names must be unique."""
    root = Path(path).expanduser()
    models_dir = root / "models"
    if not models_dir.is_dir():
        raise ArgumentError(
            f"project {str(path)!r}: no models/ directory there; pass the project root "
            "(the directory holding models/*.sql)"
        )
    models: dict[str, Model] = {}
    for file in sorted(models_dir.rglob("*.sql")):
        if any(part.startswith(".") for part in file.relative_to(models_dir).parts):
            continue  # hidden folders hold editor and notebook copies (.ipynb_checkpoints), not models
        model = parse_model(file.read_text(encoding="utf-8"), source=str(file))
        if model.name in models:
            raise ModelDefinitionError(
                f"model {model.name} is defined twice: {models[model.name].source} and {file}; rename one"
            )
        models[model.name] = model
    return list(models.values())
