"""Which physical table a changed model's new version uses, from SQLMesh's change categories.

- A model whose own definition changed is *breaking* or *non-breaking*
  (:func:`categorize.categorize`, or the plan's ``categorize`` override): either
  way it gets a new table and is rebuilt.
- A model changed only because models it reads changed is *indirect breaking*
  when one of them broke (a new table, rebuilt), and *indirect non-breaking* when
  all of them are non-breaking: its rows stay right, so the new version keeps
  the table of the version it replaces and nothing is recomputed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark_incr.model.definition import Model
from pyspark_incr.model.fingerprint import data_hash
from pyspark_incr.plan.categorize import BREAKING, NON_BREAKING, categorize
from pyspark_incr.project.dag import parents

INDIRECT_BREAKING, INDIRECT_NON_BREAKING = "indirect breaking", "indirect non-breaking"
_BREAKS = (BREAKING, INDIRECT_BREAKING)


@dataclass(frozen=True)
class Decision:
    """The category of one changed model, why, and whether its new version keeps the old version's table."""

    category: str
    reason: str
    keeps_table: bool = False


def decide(old: Model, new: Model, categories: Mapping[str, str], overrides: Mapping[str, str]) -> Decision:
    """The category of ``new`` replacing ``old``; ``categories`` holds those of the changed models it may read.

    >>> from pyspark_incr.model.definition import parse_model
    >>> m = lambda q: parse_model(f"MODEL (name s.child, kind FULL); {q}")
    >>> decide(m("SELECT a FROM s.p"), m("SELECT a, 1 AS b FROM s.p"), {}, {}).category
    'non-breaking'
    >>> decide(m("SELECT a FROM s.p"), m("SELECT a FROM s.p"), {"s.p": "non-breaking"}, {})
    Decision(category='indirect non-breaking', reason='reads s.p (non-breaking): keeps its table', keeps_table=True)
    >>> decide(m("SELECT a FROM s.p"), m("SELECT a FROM s.p"), {"s.p": "breaking"}, {}).category
    'indirect breaking'
    """
    if data_hash(old) != data_hash(new):
        if new.name in overrides:
            return Decision(overrides[new.name], f"{overrides[new.name]} (as categorize says)")
        found = categorize(old, new)
        return Decision(found.name, f"{found.name}: {found.reason}")
    changed = {p: categories[p] for p in parents(new, categories)}
    broken = sorted(p for p, c in changed.items() if c in _BREAKS)
    if broken or not changed:  # no changed parent known: be safe and rebuild
        return Decision(INDIRECT_BREAKING, f"reads {', '.join(broken) or 'a changed model'} (breaking): rebuild")
    listed = ", ".join(f"{p} ({c})" for p, c in sorted(changed.items()))
    if not new.kind.stores_rows:  # a view names its parents' tables: a new one over their new tables
        return Decision(INDIRECT_NON_BREAKING, f"reads {listed}: a new view over their new tables")
    return Decision(INDIRECT_NON_BREAKING, f"reads {listed}: keeps its table", keeps_table=True)


__all__ = ["BREAKING", "NON_BREAKING", "INDIRECT_BREAKING", "INDIRECT_NON_BREAKING", "Decision", "decide"]
