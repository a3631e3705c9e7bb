"""Model dependencies: which models read which, and a parents-first order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set as AbstractSet
from graphlib import CycleError, TopologicalSorter

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.definition import Model


_SETS = frozenset({frozenset, set, dict})


def parents(model: Model, names: Iterable[str]) -> list[str]:
    """The models among ``names`` that ``model`` reads."""
    # a set or mapping is asked as it is: copying 1,000 names for each of 1,000 models costs a run 50 ms; the
    # built-in types first, as CPython never caches frozenset as a Set and asks the ABC's registry each time
    known = names if type(names) in _SETS or isinstance(names, (AbstractSet, Mapping)) else set(names)
    return [r for r in model.depends_on if r in known and r != model.name]


def topological(models: Iterable[Model]) -> list[Model]:
    """Parents before children; a cycle is an error naming its models.

    >>> from pyspark_incr.model.definition import parse_model
    >>> a = parse_model("MODEL (name s.a, kind FULL); SELECT * FROM s.b")
    >>> b = parse_model("MODEL (name s.b, kind FULL); SELECT 1 AS x")
    >>> [m.name for m in topological([a, b])]
    ['s.b', 's.a']
    """
    by_name = {m.name: m for m in models}
    graph = {name: parents(m, by_name) for name, m in sorted(by_name.items())}
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as e:
        cycle = " -> ".join(e.args[1])
        where = "; ".join(f"{n} at {by_name[n].located}" for n in dict.fromkeys(e.args[1]) if by_name[n].source != "registry")
        raise ModelDefinitionError(
            f"models depend on each other in a cycle: {cycle}; break the cycle" + (f" ({where})" if where else "")
        ) from None
    return [by_name[n] for n in order]
