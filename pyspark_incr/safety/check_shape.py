"""The having, limit and distinct rules: clauses whose result depends on all rows being present."""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp
from sqlglot.tokens import TokenType

from pyspark_incr.safety.context import _Context
from pyspark_incr.safety.located import _shorten
from pyspark_incr.safety.rules import Finding

def _havings(ctx: _Context) -> Iterable[Finding]:
    for having in (n for n in ctx.main if isinstance(n, exp.Having)):
        if _has_aggregate(having):
            anchor = ctx.source.keyword({TokenType.HAVING}, ctx.source.start(having))
            yield ctx.finding("having", having, anchor)


def _has_aggregate(having: exp.Having) -> bool:
    select = having.parent_select
    if any(agg.parent_select is select for agg in having.find_all(exp.AggFunc)):
        return True
    # Spark lets HAVING name an aggregate by its select alias: `COUNT(*) AS n ... HAVING n > 10`.
    aggregated = {e.alias.lower() for e in select.expressions if e.alias and e.find(exp.AggFunc)}
    return any(not c.table and c.name.lower() in aggregated for c in having.find_all(exp.Column))


def _limits(ctx: _Context) -> Iterable[Finding]:
    for limit in (n for n in ctx.main if isinstance(n, (exp.Limit, exp.Fetch))):
        keywords = {TokenType.LIMIT, TokenType.FETCH, getattr(TokenType, "TOP", TokenType.LIMIT)}
        yield ctx.finding("limit", limit, ctx.source.keyword(keywords, ctx.source.start(limit)))


def _distincts(ctx: _Context) -> Iterable[Finding]:
    for node in ctx.main:
        if isinstance(node, exp.Select) and node.args.get("distinct"):
            yield from _select_distinct(ctx, node)
        elif _is_distinct_aggregate(node):
            yield from _distinct_aggregate(ctx, node)


def _select_distinct(ctx: _Context, select: exp.Select) -> Iterable[Finding]:
    # Rows with different partition values are never duplicates: DISTINCT over a list that
    # includes the partition column only removes duplicates within one partition.
    names = [e.alias_or_name for e in select.expressions]
    column = next((n for n in names if n.lower() in ctx.partition_columns), None)
    head = _shorten("SELECT DISTINCT " + ", ".join(e.sql(dialect=ctx.source.dialect) for e in select.expressions))
    anchor = ctx.source.keyword({TokenType.SELECT}, ctx.source.start(select.expressions[0]))
    if column:
        ctx.admit(f"DISTINCT over partition column {column}", select, anchor, head)
        return
    yield ctx.finding("distinct", select, anchor, head)


def _is_distinct_aggregate(node: exp.Expr) -> bool:
    if isinstance(node.parent, exp.Window):
        return False  # a windowed aggregate is judged by the window rule
    if isinstance(node, exp.ApproxDistinct):
        return True
    if isinstance(node, exp.Anonymous):
        return node.name.lower() == "approx_count_distinct"
    return isinstance(node, exp.AggFunc) and isinstance(node.this, exp.Distinct)


def _distinct_aggregate(ctx: _Context, agg: exp.Expr) -> Iterable[Finding]:
    # Grouped by the partition column, each group lies within one partition: exact on a slice.
    select = agg.parent_select
    column = _grouped_partition_column(ctx, select) if select is not None else None
    if column:
        ctx.admit(f"distinct aggregate grouped by {column}", agg, ctx.source.start(agg))
    else:
        yield ctx.finding("distinct", agg, ctx.source.start(agg))


def _grouped_partition_column(ctx: _Context, select: exp.Select) -> str | None:
    group = select.args.get("group")
    if group is None:
        return None
    names = []
    for key in group.expressions:
        # GROUP BY 1 and GROUP BY <alias> name a select expression.
        if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.name) <= len(select.expressions):
            key = select.expressions[int(key.name) - 1]
        names.append(key.alias_or_name.lower() if not isinstance(key, exp.Column) else key.name.lower())
    return next((n for n in names if n in ctx.partition_columns), None)
