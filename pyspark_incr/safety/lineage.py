"""Scope and alias resolution: CTEs inlined per reference, columns traced to base-table columns."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

@dataclass(frozen=True)
class _Origin:
    """Where a column comes from: a base table node, the column there, and whether it was computed."""

    table: exp.Table
    column: str
    computed: bool


class _Lineage:
    """Resolves a column seen in a scope to the base-table columns it is read from."""

    def __init__(self, scopes: list[Scope]):
        # set-operation branches are child scopes of the union's scope
        self.branches: dict[int, list[Scope]] = {}
        for scope in scopes:
            if scope.is_set_operation and scope.parent is not None:  # a branch of the parent's UNION
                self.branches.setdefault(id(scope.parent), []).append(scope)

    def column(self, scope: Scope, col: exp.Column, computed: bool = False) -> list[_Origin]:
        source = self._source(scope, col)
        if isinstance(source, exp.Table):
            return [_Origin(source, col.name.lower(), computed)]
        if isinstance(source, Scope):
            return self.output(source, col.name.lower(), computed)
        return []

    def output(self, scope: Scope, name: str, computed: bool = False) -> list[_Origin]:
        """Origins of output column ``name`` of ``scope`` (a CTE, derived table or union)."""
        if isinstance(scope.expression, exp.SetOperation):
            return [o for b in self.branches.get(id(scope), []) for o in self.output(b, name, computed)]
        if not isinstance(scope.expression, exp.Select):
            return []
        out: list[_Origin] = []
        for proj in scope.expression.expressions:
            if isinstance(proj, exp.Star):  # SELECT *: the name may come from any selected source
                out += [o for alias in scope.selected_sources
                        for o in self.column(scope, exp.column(name, alias), computed)]
            elif isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star):
                out += self.column(scope, exp.column(name, proj.table), computed)
            elif proj.alias_or_name.lower() == name:
                inner = proj.unalias()
                if isinstance(inner, exp.Column):
                    return self.column(scope, inner, computed)
                return [o for c in inner.find_all(exp.Column) for o in self.column(scope, c, True)]
        return out

    def reachable(self, scope: Scope) -> list[exp.Table]:
        """Every base table a scope reads, through its derived tables and CTEs."""
        if isinstance(scope.expression, exp.SetOperation):
            return [t for b in self.branches.get(id(scope), []) for t in self.reachable(b)]
        out: list[exp.Table] = []
        for _, source in scope.selected_sources.values():
            out += [source] if isinstance(source, exp.Table) else self.reachable(source)
        return out

    def _source(self, scope: Scope | None, col: exp.Column):
        # correlated subqueries see the enclosing scopes' sources
        while scope is not None:
            sources = scope.selected_sources
            if col.table:
                if col.table in sources:
                    return sources[col.table][1]
            elif len(sources) == 1:
                return next(iter(sources.values()))[1]
            elif len(sources) > 1:
                return None  # ambiguous unqualified column: no lineage claimed
            scope = scope.parent
        return None


def _inline_ctes(root: exp.Expression) -> exp.Expression:
    """Each reference to a CTE becomes its own copy of the CTE's query.

    A CTE read twice (``FROM c x JOIN c y``) is two reads of its tables, each with its own filters;
    as copies they are separate references, whose bounds :func:`_widest` then merges.
    A recursive CTE is left as is (it cannot be expanded).
    """
    root = root.copy()
    if any(w.args.get("recursive") for w in root.find_all(exp.With)):
        return root
    while True:
        found = next(((node, src) for scope in traverse_scope(root) for node, src in scope.selected_sources.values()
                      if isinstance(node, exp.Table) and isinstance(src, Scope) and src.is_cte), None)
        if found is None:
            break
        node, src = found
        alias = exp.TableAlias(this=exp.to_identifier(node.alias_or_name))
        node.replace(exp.Subquery(this=src.expression.copy(), alias=alias))
    for with_ in list(root.find_all(exp.With)):
        with_.pop()
    return root


def _relation(scope: Scope, col: exp.Column) -> str | None:
    """The alias (lowercased) of the relation a column is read from in this scope."""
    if col.table:
        return col.table.lower()
    sources = scope.selected_sources
    return next(iter(sources)).lower() if len(sources) == 1 else None
