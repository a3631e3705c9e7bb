"""Laying out a dependency graph for the site: layers left to right, parents before children.

Python places the nodes (so the layout is tested without a browser) and the page's
``site.js`` draws them as SVG from the JSON this module returns. Each node sits in
the layer one past its deepest parent; within a layer, a few barycentre sweeps
(Sugiyama's heuristic) order nodes by the mean position of their neighbours, which
untangles most crossings in linear time per sweep, so hundreds of models lay out at once.
"""

from __future__ import annotations

from collections import deque
from graphlib import CycleError, TopologicalSorter
from typing import Callable, Iterable, Mapping, Sequence

from pyspark_incr.errors import ModelDefinitionError

#: Node box and the gaps between layers and rows, in SVG user units (site.js draws with these).
NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 200, 28, 64, 10, 8
#: Labels longer than this are cut with an ellipsis; the node's tooltip keeps the whole name.
LABEL_CHARS = 27
_SWEEPS = 4


def edges_of(parents: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """``(parent, child)`` pairs of a ``{child: parents}`` mapping, parents outside the mapping left out.

    >>> edges_of({"a": [], "b": ["a", "x"]})
    [('a', 'b')]
    """
    return [(p, child) for child, ps in parents.items() for p in ps if p in parents and p != child]


def neighbourhood(parents: Mapping[str, Sequence[str]], focus: str, depth: int = 2) -> list[str]:
    """``focus`` and the models up to ``depth`` steps upstream and downstream of it, in first-found order.

    >>> sorted(neighbourhood({"a": [], "b": ["a"], "c": ["b"], "d": ["c"]}, "d", depth=2))
    ['b', 'c', 'd']
    """
    children: dict[str, list[str]] = {}
    for parent, child in edges_of(parents):
        children.setdefault(parent, []).append(child)
    found = {focus: 0}
    for step in (lambda n: parents.get(n, ()), lambda n: children.get(n, ())):
        queue = deque([focus])
        seen = {focus: 0}
        while queue:
            node = queue.popleft()
            if seen[node] == depth:
                continue
            for other in step(node):
                if other in parents and other not in seen:
                    seen[other] = seen[node] + 1
                    found.setdefault(other, seen[other])
                    queue.append(other)
    return list(found)


def layout(names: Iterable[str], edges: Iterable[tuple[str, str]], *, kind: Callable[[str], str] = lambda _: "",
           href: Callable[[str], str | None] = lambda _: None, focus: str | None = None) -> dict:
    """The JSON ``site.js`` draws: nodes with their box, and edges as node indexes ``[from, to]``.

    >>> g = layout(["b", "a"], [("a", "b")])
    >>> [(n["name"], n["layer"]) for n in g["nodes"]], g["edges"]
    ([('a', 0), ('b', 1)], [[0, 1]])
    """
    names = list(dict.fromkeys(names))
    known = set(names)
    pairs = sorted({(p, c) for p, c in edges if p in known and c in known and p != c})
    parents: dict[str, list[str]] = {n: [] for n in names}
    children: dict[str, list[str]] = {n: [] for n in names}
    for p, c in pairs:
        parents[c].append(p)
        children[p].append(c)
    layers = _order(_layers(parents), parents, children)
    tallest = max((len(layer) for layer in layers), default=0)
    nodes = []
    for k, layer in enumerate(layers):
        top = (tallest - len(layer)) * (NODE_H + GAP_Y) / 2  # each layer centred on the tallest
        for i, name in enumerate(layer):
            nodes.append({"name": name, "label": _label(name), "kind": kind(name), "href": href(name),
                          "focus": name == focus, "layer": k,
                          "x": PAD + k * (NODE_W + GAP_X), "y": PAD + top + i * (NODE_H + GAP_Y)})
    index = {n["name"]: i for i, n in enumerate(nodes)}
    return {"width": 2 * PAD + max(0, len(layers) * (NODE_W + GAP_X) - GAP_X),
            "height": 2 * PAD + max(0, tallest * (NODE_H + GAP_Y) - GAP_Y),
            "node_w": NODE_W, "node_h": NODE_H,
            "nodes": nodes, "edges": [[index[p], index[c]] for p, c in pairs]}


def _layers(parents: dict[str, list[str]]) -> list[list[str]]:
    """Names by layer: a node one layer past its deepest parent (roots in layer 0)."""
    try:
        order = list(TopologicalSorter(parents).static_order())
    except CycleError as e:
        raise ModelDefinitionError(f"models depend on each other in a cycle: {' -> '.join(e.args[1])}; "
                                   "break the cycle before building the site") from None
    depth: dict[str, int] = {}
    for name in order:
        depth[name] = 1 + max((depth[p] for p in parents[name]), default=-1)
    layers: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for name in sorted(depth):
        layers[depth[name]].append(name)
    return layers


def _order(layers: list[list[str]], parents: dict[str, list[str]],
           children: dict[str, list[str]]) -> list[list[str]]:
    """Layers reordered by barycentre sweeps, alternately down (by parents) and up (by children)."""
    pos = {n: i for layer in layers for i, n in enumerate(layer)}
    for sweep in range(_SWEEPS):
        down = sweep % 2 == 0
        neighbours = parents if down else children
        for k in (range(1, len(layers)) if down else range(len(layers) - 2, -1, -1)):
            def centre(name: str) -> tuple[float, str]:
                ref = [pos[m] for m in neighbours[name]]
                return (sum(ref) / len(ref) if ref else pos[name], name)

            layers[k] = sorted(layers[k], key=centre)
            pos.update({n: i for i, n in enumerate(layers[k])})
    return layers


def _label(name: str) -> str:
    """The name as a node shows it: cut to :data:`LABEL_CHARS` with an ellipsis.

    >>> _label("shop.daily_orders"), _label("x" * 40)[-3:]
    ('shop.daily_orders', 'xx…')
    """
    return name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"
