"""The models a plan wants: the catalog registry plus, when given, a project directory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

from pyspark_incr.errors import ArgumentError, ModelDefinitionError, UnknownModelError
from pyspark_incr.model.definition import Model, reparse
from pyspark_incr.project.dag import parents
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
    models = {name: with_content_hash(reparse(text, REGISTRY, "")) for name, text in store.registry().items()}
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


def select_models(models: Mapping[str, Model], pattern: str | None) -> set[str]:
    """The names of ``models`` a selector chooses; no selector (or a blank one) chooses them all.

    A selector is a comma-separated list of items, their choices united. An item is
    a model name or glob (``shop.daily_*``), or ``tag:<tag or glob>`` (models whose
    ``tags`` hold a match), optionally with ``+`` before it (and every model it
    reads, transitively) and/or after it (and every model reading it, transitively).
    Matching is case-insensitive. An item matching no model is an error naming it.

    >>> from pyspark_incr.model.definition import parse_model
    >>> a = parse_model("MODEL (name s.a, kind FULL, tags (finance)); SELECT 1 AS x")
    >>> b = parse_model("MODEL (name s.b, kind FULL); SELECT * FROM s.a")
    >>> c = parse_model("MODEL (name s.c, kind FULL); SELECT * FROM s.b")
    >>> known = {m.name: m for m in (a, b, c)}
    >>> sorted(select_models(known, "+s.b")), sorted(select_models(known, "tag:finance+"))
    (['s.a', 's.b'], ['s.a', 's.b', 's.c'])
    """
    if not pattern or not pattern.strip(" ,"):
        return set(models)
    upstream = {name: parents(model, models) for name, model in models.items()}
    downstream: dict[str, list[str]] = {name: [] for name in models}
    for name, ups in upstream.items():
        for parent in ups:
            downstream[parent].append(name)
    chosen: set[str] = set()
    for item in (p.strip() for p in pattern.split(",")):
        if not item:
            continue
        core = item.lower()
        with_parents, core = core.startswith("+"), core.removeprefix("+")
        with_children, core = core.endswith("+"), core.removesuffix("+")
        core = core.strip()
        if not core or "+" in core:
            raise ArgumentError(
                f"select: {item!r} is not a selector; write a model name or glob, or tag:<tag>, "
                "optionally with + before (and its upstream models) and/or after (and its downstream models)"
            )
        hits = _matches(models, core, item)
        if with_parents:
            hits |= _reachable(hits, upstream)
        if with_children:
            hits |= _reachable(hits, downstream)
        chosen |= hits
    return chosen


def _matches(models: Mapping[str, Model], core: str, item: str) -> set[str]:
    """The models a name/glob or ``tag:<glob>`` matches; none is an error listing what there is."""
    if core.startswith("tag:"):
        tag = core.removeprefix("tag:").strip()
        if not tag:
            raise ArgumentError(f"select: {item!r} names no tag; write tag:<tag>, e.g. tag:finance")
        hits = {n for n, m in models.items() if any(fnmatchcase(t.lower(), tag) for t in m.tags)}
        if not hits:
            known = sorted({t for m in models.values() for t in m.tags}, key=str.lower)
            raise UnknownModelError(
                f"No model matches {item!r} (argument select): no model has a tag matching {tag!r}. "
                f"Known tags: {', '.join(known) or 'none'}."
            )
        return hits
    hits = {n for n in models if fnmatchcase(n, core)}
    if not hits:
        raise UnknownModelError(
            f"No model matches {item!r} (argument select). Known models: {', '.join(sorted(models)) or 'none'}."
        )
    return hits


def _reachable(start: set[str], edges: dict[str, list[str]]) -> set[str]:
    """Every name reachable from ``start`` along ``edges``, transitively."""
    seen: set[str] = set()
    todo = [n for s in start for n in edges[s]]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(edges[name])
    return seen
