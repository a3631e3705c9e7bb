"""Form B: WHERE / JOIN ON comparisons tying a source's time column to the run window."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from pyspark_incr.model.macros import PREFIX
from pyspark_incr.safety.durations import _int_value, _interval_ms, _Underivable, _unit_ms
from pyspark_incr.safety.evidence import _note, _Tie
from pyspark_incr.safety.floors import floor_of
from pyspark_incr.safety.lineage import _relation

_UNTIED = "untied"  # a constant or a row-local value: it narrows a read, never locates it


def _macro_name(node: exp.Expression) -> str | None:
    """The run-window macro ``node`` is (``@start_ds`` as Parameter, or hidden as a column)."""
    if isinstance(node, exp.Parameter):
        name = node.name.lower()
    elif isinstance(node, exp.Column) and not node.table and node.name.lower().startswith(PREFIX):
        name = node.name.lower()[len(PREFIX):]
    else:
        return None
    # start/end macros bound the run; execution_* is "now" and says nothing about the window.
    return name if name.startswith(("start_", "end_")) else None


class _ConditionRules:
    """Form B of the deriver (mixed into ``bounds._Deriver``: needs ``time_column``, ``refs``, ``index``, ``lineage``)."""

    def _conjunct(self, scope: Scope, node: exp.Expression, kept: frozenset[str]) -> None:
        """One AND-ed condition; ``kept``: aliases whose rows it does not filter (an outer join's preserved side)."""
        if isinstance(node, exp.Or):
            for i in self._time_refs(scope, node, kept):
                ref = self.refs[i]
                _note(ref.soft, f"{ref.source}.{ref.column} is filtered inside an OR: {node.sql('spark')}")
            return
        for lhs, sides, rhs in _comparisons(node):
            self._comparison(scope, lhs, sides, rhs, node, kept)

    def _comparison(self, scope: Scope, lhs, sides: str, rhs, node: exp.Expression, kept: frozenset[str]) -> None:
        lhs, rhs = _peel(lhs, rhs)
        lhs, floored = _floor_of(lhs)
        plain = isinstance(lhs, exp.Column) and not _macro_name(lhs)
        targets = self._time_refs(scope, lhs, kept)
        if not targets:
            return
        for i in targets:
            ref = self.refs[i]
            try:
                tie = self._anchor(scope, rhs, i)
            except _Underivable as e:
                _note(ref.soft, f"{ref.source}.{ref.column}: {e}")
                continue
            if tie == _UNTIED:
                continue
            if not plain or self._computed(scope, lhs, i) or (floored and tie.anchor is not None):
                _note(ref.soft, f"{ref.source}.{ref.column} is compared through a computed expression: "
                                f"{node.sql('spark')}")
                continue
            if "low" in sides:
                ref.lows.append(_Tie(tie.anchor, -tie.offset_ms, scope))
            if "high" in sides:
                ref.highs.append(_Tie(tie.anchor, tie.offset_ms, scope))

    def _anchor(self, scope: Scope, node: exp.Expression, lhs: int):
        """``node`` as run-window anchor + offset, _UNTIED, or _Underivable (``lhs``: the compared reference)."""
        node = node.unnest() if isinstance(node, exp.Paren) else node
        if _macro_name(node):
            return _Tie(None, 0)
        if isinstance(node, exp.Cast):  # CAST(@start_ds AS DATE) is still the run start
            return self._anchor(scope, node.this, lhs)
        if isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.expression, exp.Interval):
            sign = 1 if isinstance(node, exp.Add) else -1
            return self._shift(self._anchor(scope, node.this, lhs), sign * _interval_ms(node.expression))
        if isinstance(node, exp.Add) and isinstance(node.this, exp.Interval):
            return self._shift(self._anchor(scope, node.expression, lhs), _interval_ms(node.this))
        if isinstance(node, (exp.TsOrDsAdd, exp.DateAdd, exp.DateSub)):
            return self._date_add(scope, node, lhs)
        if isinstance(node, exp.Column):
            return self._column_anchor(scope, node, lhs)
        if not any(_macro_name(n) or isinstance(n, exp.Column) for n in node.walk()):
            return _UNTIED
        raise _Underivable(f"{node.sql('spark')} is not a run-window bound plus or minus a fixed interval")

    def _date_add(self, scope: Scope, node: exp.Expression, lhs: int):
        days = _int_value(node.expression)
        unit = node.args.get("unit")
        if days is None:
            raise _Underivable(f"{node.sql('spark')}: the offset is not a constant")
        step = _unit_ms(unit.name if unit else "day", node.sql("spark"))
        sign = -1 if isinstance(node, exp.DateSub) else 1
        return self._shift(self._anchor(scope, node.this, lhs), sign * days * step)

    @staticmethod
    def _shift(tie, ms: int):
        return tie if tie == _UNTIED else _Tie(tie.anchor, tie.offset_ms + ms)

    def _column_anchor(self, scope: Scope, col: exp.Column, lhs: int):
        origins = self.lineage.column(scope, col)
        if origins and all(self.index.get(id(o.table)) == lhs for o in origins):
            return _UNTIED  # compared with another column of the same row: narrows only
        for o in origins:
            i = self.index.get(id(o.table))
            if i is not None and i != lhs and o.column == self.refs[i].column and not o.computed:
                return _Tie(i, 0)  # another timeseries source's time column: follows its bound
        if col.name.lower() == self.time_column:
            return _Tie(None, 0)  # the model's own time column of another relation: in the run window
        raise _Underivable(f"compared with {col.sql('spark')}, which is not a time column tied to the run window")

    def _time_refs(self, scope: Scope, node: exp.Expression, kept: frozenset[str] = frozenset()) -> list[int]:
        """References whose time column ``node`` reads (directly or through a computation), except via ``kept``."""
        out = []
        for col in ([node] if isinstance(node, exp.Column) else node.find_all(exp.Column)):
            if _relation(scope, col) in kept:
                continue
            for o in self.lineage.column(scope, col):
                i = self.index.get(id(o.table))
                if i is not None and o.column == self.refs[i].column and i not in out:
                    out.append(i)
        return out

    def _computed(self, scope: Scope, col: exp.Column, i: int) -> bool:
        return any(o.computed for o in self.lineage.column(scope, col) if self.index.get(id(o.table)) == i)


def _conditions(select: exp.Select) -> list[tuple[exp.Expression, frozenset[str]]]:
    """WHERE and JOIN ON conditions, each with the aliases whose rows it does not filter.

    ``a LEFT JOIN b ON a.ts >= @start_ts`` still returns every row of ``a``: an outer join's ON
    only filters the null-supplying side.
    """
    out = [(select.args["where"].this, frozenset())] if select.args.get("where") else []
    from_ = select.args.get("from_") or select.args.get("from")
    before = {from_.this.alias_or_name.lower()} if from_ else set()
    for join in select.args.get("joins") or []:
        this, side = join.this.alias_or_name.lower(), (join.side or "").upper()
        if join.args.get("on"):
            kept = {"LEFT": before, "RIGHT": {this}, "FULL": before | {this}}.get(side, set())
            out.append((join.args["on"], frozenset(kept)))
        before.add(this)
    return out


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    node = node.unnest() if isinstance(node, exp.Paren) else node
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _comparisons(node: exp.Expression) -> list[tuple[exp.Expression, str, exp.Expression]]:
    """``(column side, which read bound it gives, other side)``, both orientations of a comparison."""
    if isinstance(node, exp.Between):
        return [(node.this, "low", node.args["low"]), (node.this, "high", node.args["high"])]
    flip = {exp.GTE: ("low", "high"), exp.GT: ("low", "high"), exp.LTE: ("high", "low"),
            exp.LT: ("high", "low"), exp.EQ: ("low high", "low high")}
    sides = flip.get(type(node))
    if sides is None:
        return []
    left, right = (n.unnest() if isinstance(n, exp.Paren) else n for n in (node.this, node.expression))
    return [(left, sides[0], right), (right, sides[1], left)]


def _floor_of(node: exp.Expression) -> tuple[exp.Expression, bool]:
    """``(ts, True)`` for a day or hour floor of ``ts`` (:func:`floors.floor_of`), else ``(node, False)``.

    Compared with a run-window macro such a floor reads what the column itself would
    (``DATE(ts) BETWEEN @start_ds AND @end_ds`` keeps ts within the run's days): the macros
    stand for the run window. Compared with another relation's column it does not
    (``DATE(a.ts) = DATE(b.ts)`` reaches up to a day either way), which the caller refuses.

    >>> import sqlglot
    >>> [_floor_of(sqlglot.parse_one(s, read="spark"))[1]
    ...  for s in ("DATE(ts)", "DATE_TRUNC('HOUR', ts)", "DATE_TRUNC('MONTH', ts)", "ts")]
    [True, True, False, False]
    """
    floored = floor_of(node)
    return (floored[0], True) if floored else (node, False)


def _peel(lhs: exp.Expression, rhs: exp.Expression) -> tuple[exp.Expression, exp.Expression]:
    """Move a fixed offset from the column side to the other: ``m.ts - INTERVAL 1 DAY <= s.ts`` is ``m.ts <= s.ts + INTERVAL 1 DAY``."""
    while True:
        lhs = lhs.unnest() if isinstance(lhs, exp.Paren) else lhs
        if isinstance(lhs, (exp.Add, exp.Sub)) and isinstance(lhs.expression, exp.Interval):
            inverse = exp.Sub if isinstance(lhs, exp.Add) else exp.Add
            lhs, rhs = lhs.this, inverse(this=rhs.copy(), expression=lhs.expression.copy())
        elif isinstance(lhs, (exp.TsOrDsAdd, exp.DateAdd, exp.DateSub)):
            kind = exp.DateAdd if isinstance(lhs, exp.DateSub) else exp.DateSub
            lhs, rhs = lhs.this, kind(this=rhs.copy(), expression=lhs.expression.copy(), unit=lhs.args.get("unit"))
        else:
            return lhs, rhs
