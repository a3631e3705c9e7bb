"""What every classifier rule sees: the located query, its main-query nodes, the findings' shape."""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp

from pyspark_incr.safety.located import _Source
from pyspark_incr.safety.rules import WHY, Finding

# Parents under which a query is part of the main query, not an expression subquery.
_MAIN_QUERY_PARENTS = (exp.From, exp.Join, exp.SetOperation, exp.CTE, exp.Subquery, exp.Lateral)


class _Context:
    def __init__(self, source: _Source, partition_columns: frozenset[str],
                 timeseries: frozenset[tuple[str, ...]], interval_ms: int) -> None:
        self.source = source
        self.partition_columns = partition_columns
        self.timeseries = timeseries
        #: Length of the model's interval: a floor of the time column coarser than it spans intervals.
        self.interval_ms = interval_ms
        self.admitted: list[tuple[tuple[int, int], str]] = []
        self.expression_subqueries = [q for q in source.tree.find_all(exp.Query) if _is_expression_subquery(q)]
        inner = {id(n) for q in self.expression_subqueries for n in q.walk()}
        # Nodes of the main query: what the data-shape rules judge.
        self.main = [n for n in source.tree.walk() if id(n) not in inner]

    def finding(self, rule: str, node: exp.Expr, offset: int | None, construct: str | None = None) -> Finding:
        line, column = self.source.position(offset if offset is not None else 0)
        return Finding(rule, construct or self.source.sql(node), line, column, WHY[rule])

    def admit(self, note: str, node: exp.Expr, offset: int | None, construct: str | None = None) -> None:
        where = self.source.position(offset if offset is not None else 0)
        self.admitted.append((where, f"{note}: {construct or self.source.sql(node)}"))

    def partitioned(self, exprs: Iterable[exp.Expr]) -> str | None:
        """The partition column among ``exprs`` (bare or qualified columns), if any."""
        for e in exprs:
            if isinstance(e, exp.Column) and e.name.lower() in self.partition_columns:
                return e.name
        return None


def _is_expression_subquery(query: exp.Expr) -> bool:
    # `(SELECT ...)` in an expression, or EXISTS (SELECT ...); derived tables, CTE bodies and
    # set-operation branches belong to the main query.
    parent = query.parent
    if isinstance(query, exp.Subquery):
        return parent is not None and not isinstance(parent, _MAIN_QUERY_PARENTS)
    return isinstance(parent, exp.Exists)
