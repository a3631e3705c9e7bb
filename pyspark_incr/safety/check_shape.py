"""The having, limit and distinct rules: clauses whose result depends on all rows being present."""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp
from sqlglot.tokens import TokenType

from pyspark_incr.model.macros import PREFIX
from pyspark_incr.safety.context import _Context
from pyspark_incr.safety.grains import grain_of
from pyspark_incr.safety.located import _shorten
from pyspark_incr.safety.rules import Finding

def _havings(ctx: _Context) -> Iterable[Finding]:
    for having in (n for n in ctx.main if isinstance(n, exp.Having)):
        if not _has_aggregate(having):
            continue
        anchor = ctx.source.keyword({TokenType.HAVING}, ctx.source.start(having))
        # Grouped by the time column, each group lies within one interval: a slice holds it whole.
        column = _grouped_time_key(ctx, having.parent_select)
        if column:
            ctx.admit(f"HAVING grouped by {column}", having, anchor)
        else:
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
    # Rows with different time keys are never duplicates: DISTINCT over a list that
    # includes one only removes duplicates within one interval.
    names = [e.alias_or_name for e in select.expressions]
    column = next((n for n in names if n.lower() in ctx.time_keys), None)
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
    # Grouped by the time column, each group lies within one interval: exact on a slice.
    column = _grouped_time_key(ctx, agg.parent_select)
    if column:
        ctx.admit(f"distinct aggregate grouped by {column}", agg, ctx.source.start(agg))
    else:
        yield ctx.finding("distinct", agg, ctx.source.start(agg))


def _grouped_time_key(ctx: _Context, select: exp.Select | None) -> str | None:
    """The time key ``select`` groups by, if one of its plain GROUP BY keys is one.

    A key counts when its output column is named like the time column (or a partition column written as a
    rounding of it, :attr:`_Context.time_keys`) and is a column, or a rounding of one whose buckets fit in the
    model's interval (``DATE(ts) AS ds`` in a daily model, not in an hourly one; ``DATE_TRUNC('WEEK', d)`` in
    a weekly one): every row of a group then falls in the same interval. Keys inside ROLLUP, CUBE or
    GROUPING SETS are not read (some of their groups span every time value).
    """
    group = select.args.get("group") if select is not None else None
    for key in group.expressions if group is not None else ():
        name, value = _group_key(select, key)
        if name in ctx.time_keys and _within_interval(ctx, value):
            return name
    return None


def _group_key(select: exp.Select, key: exp.Expr) -> tuple[str, exp.Expr]:
    """The output name of a GROUP BY key (lowercased) and the expression it groups by."""
    outputs = select.expressions
    if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.name) <= len(outputs):
        chosen = outputs[int(key.name) - 1]  # GROUP BY 1
    elif isinstance(key, exp.Column) and not key.table:
        # Spark resolves a bare key to a select alias when the input has no such column; judging the
        # aliased expression is right in that case and refuses no more than needed in the other.
        chosen = next((e for e in outputs if isinstance(e, exp.Alias) and e.alias.lower() == key.name.lower()), key)
    else:
        # GROUP BY DATE(ts) with DATE(ts) AS ds in the select list
        chosen = next((e for e in outputs if e.unalias() == key), key)
    return chosen.alias_or_name.lower(), chosen.unalias()


def _within_interval(ctx: _Context, value: exp.Expr) -> bool:
    grain = grain_of(value)
    # `@start_ds AS ds` (hidden as a column by the gate) is one value for the whole job: one group of every day
    return grain is not None and grain.fits(ctx.interval_ms) and not grain.column.name.lower().startswith(PREFIX)
