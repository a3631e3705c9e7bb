"""The models a plan wants: the catalog registry plus, when given, a project directory."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from pyspark_incr.errors import ArgumentError, ModelDefinitionError
from pyspark_incr.model.definition import Model, parse_model
from pyspark_incr.project.loader import Project, with_content_hash
from pyspark_incr.state.store import StateStore

REGISTRY = "registry"


@dataclass(frozen=True)
class Desired:
    """Models wanted now, and which sources this plan speaks for (their absent models get removed)."""

    models: dict[str, Model]
    #: Source tag of each model: ``registry`` or ``project:<root>``.
    source: dict[str, str]
    sources: frozenset[str]


def desired_models(store: StateStore, project: Project | None) -> Desired:
    """Registry models, plus the project's when ``project`` is given; a name in both is an error."""
    models = {name: with_content_hash(parse_model(text)) for name, text in store.registry().items()}
    source = {name: REGISTRY for name in models}
    sources = {REGISTRY}
    if project is not None:
        root = str(project.root.resolve())
        for model in project.models:
            if model.name in models:
                raise ModelDefinitionError(
                    f"model {model.name} is both registered with incr.create_model and defined in "
                    f"{model.located}; drop one (CALL incr.drop_model(name => '{model.name}')) or rename it"
                )
            models[model.name] = model
            source[model.name] = project_source(root)
        sources.add(project_source(root))
    return Desired(models, source, frozenset(sources))


def project_source(root: str) -> str:
    """The source tag of models loaded from project ``root``."""
    return f"project:{root}"


def select(names: list[str], pattern: str | None) -> set[str]:
    """Names matching a comma-separated list of names or globs; a pattern matching nothing is an error.

    >>> sorted(select(["a.x", "a.y", "b.z"], "a.*, b.z"))
    ['a.x', 'a.y', 'b.z']
    """
    if not pattern or not pattern.strip(" ,"):
        return set(names)
    chosen: set[str] = set()
    for part in (p.strip().lower() for p in pattern.split(",")):
        if not part:
            continue
        hits = fnmatch.filter(names, part)
        if not hits:
            raise ArgumentError(f"select: {part!r} matches no model; known models: {', '.join(sorted(names)) or 'none'}")
        chosen.update(hits)
    return chosen
