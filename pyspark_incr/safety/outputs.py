"""Which select expressions write an output column of the query: what lands in the model's table."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, build_scope


def writers(tree: exp.Expression, name: str) -> list[exp.Expression]:
    """The select expressions (``DATE_TRUNC('MONTH', ds) AS ds``) writing output column ``name`` of ``tree``.

    One per set-operation branch (branches line up by position, as Spark unions them), followed through
    bare columns and stars into the derived tables and CTEs they read, so ``SELECT ds FROM (SELECT
    DATE(ts) AS ds ...)`` gives ``DATE(ts) AS ds``. A column read from a base table is its own writer.

    >>> import sqlglot
    >>> q = "WITH m AS (SELECT DATE(ts) AS ds FROM e) SELECT ds FROM m UNION ALL SELECT d FROM f"
    >>> [w.sql() for w in writers(sqlglot.parse_one(q), "ds")]
    ['DATE(ts) AS ds', 'd']
    """
    scope = build_scope(tree) if isinstance(tree, exp.Query) else None
    return _writers(scope, name.lower(), set()) if scope is not None else []


def _writers(scope: Scope, name: str, seen: set[tuple[int, str]]) -> list[exp.Expression]:
    if (id(scope), name) in seen:  # a recursive CTE reads itself
        return []
    seen.add((id(scope), name))
    if isinstance(scope.expression, exp.SetOperation):
        branches = _branches(scope)
        at = _position(branches[0].expression, name) if branches else None
        if at is None:
            return [w for b in branches for w in _writers(b, name, seen)]
        return [w for b in branches for w in _at(b, at, name, seen)]
    if not isinstance(scope.expression, exp.Select):
        return []
    out: list[exp.Expression] = []
    for proj in scope.expression.expressions:
        if isinstance(proj, exp.Star) or (isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star)):
            picked = [proj.table] if isinstance(proj, exp.Column) else list(scope.selected_sources)
            out += [w for alias in picked for w in _from_source(scope, alias, name, seen)]
        elif proj.alias_or_name.lower() == name:
            return _followed(scope, proj, seen)
    return out


def _followed(scope: Scope, proj: exp.Expression, seen: set[tuple[int, str]]) -> list[exp.Expression]:
    """``proj`` itself, or when it only passes a derived table's column on, what writes that column."""
    inner = proj.unalias()
    if not isinstance(inner, exp.Column):
        return [proj]
    sources = scope.selected_sources
    alias = inner.table or (next(iter(sources)) if len(sources) == 1 else "")
    return _from_source(scope, alias, inner.name.lower(), seen) or [proj]


def _from_source(scope: Scope, alias: str, name: str, seen: set[tuple[int, str]]) -> list[exp.Expression]:
    source = scope.selected_sources.get(alias, (None, None))[1]
    return _writers(source, name, seen) if isinstance(source, Scope) else []


def _branches(scope: Scope) -> list[Scope]:
    if not isinstance(scope.expression, exp.SetOperation):
        return [scope]
    return [b for s in scope.set_operation_scopes for b in _branches(s)]


def _position(select: exp.Expression, name: str) -> int | None:
    """Index of ``name`` among the select's outputs, unless a star before it hides how many there are."""
    if not isinstance(select, exp.Select):
        return None
    for i, proj in enumerate(select.expressions):
        if isinstance(proj, exp.Star) or (isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star)):
            return None
        if proj.alias_or_name.lower() == name:
            return i
    return None


def _at(scope: Scope, at: int, name: str, seen: set[tuple[int, str]]) -> list[exp.Expression]:
    select = scope.expression
    if not isinstance(select, exp.Select) or at >= len(select.expressions):
        return []
    proj = select.expressions[at]
    if isinstance(proj, exp.Star) or (isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star)):
        # a star in a later branch: its columns cannot be counted without the tables' schemas, names usually agree
        return _writers(scope, name, seen)
    return _followed(scope, proj, seen)
