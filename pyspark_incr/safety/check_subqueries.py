"""The subquery rule: an expression subquery reading a sliced source, resolved through CTEs."""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp
from sqlglot.tokens import TokenType

from pyspark_incr.safety.context import _Context, _is_expression_subquery
from pyspark_incr.safety.located import _shorten
from pyspark_incr.safety.rules import Finding
from pyspark_incr.safety.tables import table_key

def _subqueries(ctx: _Context) -> Iterable[Finding]:
    ctes = _cte_reads(ctx.source.tree)
    for query in ctx.expression_subqueries:
        if any(_same_table(t, s) for t in _own_tables(query, ctes) for s in ctx.timeseries):
            select = query.this if isinstance(query, exp.Subquery) else query
            keyword = ctx.source.keyword({TokenType.SELECT, TokenType.WITH}, ctx.source.start(select))
            paren = ctx.source.token_before(keyword) if keyword is not None else None
            anchor = paren.start if paren is not None and paren.token_type == TokenType.L_PAREN else keyword
            construct = ctx.source.sql(query) if isinstance(query, exp.Subquery) else f"({ctx.source.sql(query)})"
            yield ctx.finding("subquery", query, anchor, _shorten(construct))


def _cte_reads(tree: exp.Expr) -> dict[str, set[tuple[str, ...]]]:
    """Tables each CTE reads, through the CTEs it names (a CTE only sees earlier ones)."""
    reads: dict[str, set[tuple[str, ...]]] = {}
    for cte in tree.find_all(exp.CTE):
        tables: set[tuple[str, ...]] = set()
        for table in cte.this.find_all(exp.Table):
            tables |= _expand(table, reads)
        reads[cte.alias_or_name.lower()] = tables
    return reads


def _expand(table: exp.Table, ctes: dict[str, set[tuple[str, ...]]]) -> set[tuple[str, ...]]:
    if not table.db and table.name.lower() in ctes:
        return ctes[table.name.lower()]
    return {table_key(".".join(p.name for p in table.parts))}


def _own_tables(query: exp.Expr, ctes: dict[str, set[tuple[str, ...]]]) -> set[tuple[str, ...]]:
    """Tables a subquery reads itself, not through subqueries nested in it (they are judged
    alone, so the innermost reading one is the finding)."""
    nested = {id(n) for q in query.find_all(exp.Query) if q is not query and _is_expression_subquery(q)
              for n in q.walk()}
    keys: set[tuple[str, ...]] = set()
    for table in query.find_all(exp.Table):
        if id(table) not in nested:
            keys |= _expand(table, ctes)
    return keys


def _same_table(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    # An unqualified name may resolve to the source in the current database: when either side
    # has no database, compare table names (refusing too much is the safe side).
    return a == b or ((len(a) == 1 or len(b) == 1) and a[-1] == b[-1])
