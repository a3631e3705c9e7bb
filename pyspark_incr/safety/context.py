"""What every classifier rule sees: the located query, its main-query nodes, the findings' shape."""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp

from pyspark_incr.model.macros import PREFIX
from pyspark_incr.safety.grains import grain_of
from pyspark_incr.safety.located import _Source
from pyspark_incr.safety.outputs import writers
from pyspark_incr.safety.rules import WHY, Finding

# Parents under which a query is part of the main query, not an expression subquery.
_MAIN_QUERY_PARENTS = (exp.From, exp.Join, exp.SetOperation, exp.CTE, exp.Subquery, exp.Lateral)


class _Context:
    def __init__(self, source: _Source, partition_columns: frozenset[str],
                 timeseries: frozenset[tuple[str, ...]], interval_ms: int, time_column: str | None) -> None:
        self.source = source
        self.partition_columns = partition_columns
        self.timeseries = timeseries
        #: Length of the model's interval: a floor of the time column coarser than it spans intervals.
        self.interval_ms = interval_ms
        self.time_column = time_column
        #: The select expressions writing the time column (one per UNION branch).
        self.time_writers = writers(source.tree, time_column) if time_column else []
        #: Partition columns whose rows of one value lie in one interval: keys a slice holds whole.
        self.time_keys = frozenset(
            c for c in partition_columns if c == time_column or (time_column and self._time_derived(c)))
        self.admitted: list[tuple[tuple[int, int], str]] = []
        self.expression_subqueries = [q for q in source.tree.find_all(exp.Query) if _is_expression_subquery(q)]
        inner = {id(n) for q in self.expression_subqueries for n in q.walk()}
        # Nodes of the main query: what the data-shape rules judge.
        self.main = [n for n in source.tree.walk() if id(n) not in inner]

    def finding(self, rule: str, node: exp.Expr, offset: int | None, construct: str | None = None,
                why: str | None = None) -> Finding:
        line, column = self.source.position(offset if offset is not None else 0)
        return Finding(rule, construct or self.source.sql(node), line, column, why or WHY[rule])

    def admit(self, note: str, node: exp.Expr, offset: int | None, construct: str | None = None) -> None:
        where = self.source.position(offset if offset is not None else 0)
        self.admitted.append((where, f"{note}: {construct or self.source.sql(node)}"))

    def partitioned(self, exprs: Iterable[exp.Expr]) -> str | None:
        """The time key (:attr:`time_keys`) among ``exprs`` (bare or qualified columns), if any."""
        for e in exprs:
            if isinstance(e, exp.Column) and e.name.lower() in self.time_keys:
                return e.name
        return None

    def _time_derived(self, column: str) -> bool:
        """Whether partition column ``column`` is written as the time column's value or a rounding of it that
        fits in one interval (``CAST(ts AS DATE) AS event_date`` beside time column ``ts`` in a daily model; not
        in an hourly one, nor ``region``): a partitioned_by column the query does not tie to the time column
        spans every slice, so grouping or partitioning a window by it alone is not local to a slice."""
        bases = {g.column.name.lower() for w in self.time_writers if (g := grain_of(w.unalias())) is not None}
        found = writers(self.source.tree, column)
        return bool(found) and all(_fits_from(w.unalias(), bases, self.interval_ms) for w in found)


def _fits_from(value: exp.Expr, bases: set[str], interval_ms: int) -> bool:
    grain = grain_of(value)
    return (grain is not None and grain.fits(interval_ms) and grain.column.name.lower() in bases
            and not grain.column.name.lower().startswith(PREFIX))


def _is_expression_subquery(query: exp.Expr) -> bool:
    # `(SELECT ...)` in an expression, or EXISTS (SELECT ...); derived tables, CTE bodies and
    # set-operation branches belong to the main query.
    parent = query.parent
    if isinstance(query, exp.Subquery):
        return parent is not None and not isinstance(parent, _MAIN_QUERY_PARENTS)
    return isinstance(parent, exp.Exists)
