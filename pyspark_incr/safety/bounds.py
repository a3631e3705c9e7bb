"""Per-source bounds: how far outside the run window a model must read each timeseries source.

smelt's "per-source lookback derivation": for a run window ``[start, end)`` a source with
bound ``bounded(col, before, after)`` needs only ``col >= start - before AND col < end + after``.
The bound comes from two SQL forms:

* Form A: a window frame ``RANGE BETWEEN INTERVAL 'N unit' PRECEDING AND ...`` ordered by the
  source's time column (before = N, after = the FOLLOWING interval or 0);
* Form B: WHERE / JOIN ON conditions putting the source's time column between a run-window
  macro (``@start_ds``, ``@end_ts``, ...) or a time column of another relation and a fixed offset.

A source whose time column nothing ties to the run window is ``unbounded`` (read in full); one
whose reach cannot be proven (a window without an interval frame, a computed-expression join,
a month interval) is ``not derivable``. Sources not named in ``sources`` (lookups) are absent.

Combining: each reference of a table (a self-join has two; a CTE read twice is inlined into two)
gets a bound, and the table reads the widest of them. Within one reference the AND-ed filters
give the tightest bound, widened by any window frame the reference's rows go through. Offsets
relative to a macro are conservative: ``ts < @end_ds + INTERVAL 1 DAY`` counts as P1D after.

>>> q = '''SELECT e.id, d.name FROM raw.events e JOIN dim.devices d ON e.device = d.id
...        WHERE e.ts BETWEEN @start_ts - INTERVAL '30 minutes' AND @end_ts'''
>>> derive(q, "ts", {"raw.events": "ts"})["raw.events"].iso()
{'type': 'bounded', 'partition_col': 'ts', 'before': 'PT30M', 'after': 'PT0S'}
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

BOUNDED, UNBOUNDED, NOT_DERIVABLE = "bounded", "unbounded", "not derivable"

_MS = {"millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000,
       "week": 7 * 86_400_000}
#: Units whose length varies (28-31 day months): no fixed offset can be derived from them.
_VARIABLE = ("month", "quarter", "year")
#: Prefix ``hide_macros`` gives ``@name`` when a query is parsed in another dialect.
_HIDDEN = "__incr_macro__"


@dataclass(frozen=True)
class Bound:
    """The derived read bound of one timeseries source."""

    source: str
    kind: str
    column: str | None = None
    before_ms: int = 0
    after_ms: int = 0
    reason: str = ""

    def iso(self) -> dict:
        """smelt's ``explain --json`` shape; a bound that is not ``bounded`` says why instead of durations.

        >>> Bound("raw.e", BOUNDED, "ts", 1_800_000).iso()
        {'type': 'bounded', 'partition_col': 'ts', 'before': 'PT30M', 'after': 'PT0S'}
        >>> Bound("raw.e", UNBOUNDED, "ts", reason="no filter").iso()
        {'type': 'unbounded', 'partition_col': 'ts', 'reason': 'no filter'}
        """
        out: dict = {"type": self.kind, "partition_col": self.column}
        if self.kind == BOUNDED:
            out.update(before=iso_duration(self.before_ms), after=iso_duration(self.after_ms))
        else:
            out["reason"] = self.reason
        return out


def iso_duration(ms: int) -> str:
    """ISO-8601 duration of ``ms`` milliseconds, days being the largest unit (weeks print as days).

    >>> iso_duration(0), iso_duration(30 * 60_000), iso_duration(86_400_000), iso_duration(36 * 3_600_000)
    ('PT0S', 'PT30M', 'P1D', 'P1DT12H')
    >>> iso_duration(7 * 86_400_000 + 1500)
    'P7DT1.5S'
    """
    days, rest = divmod(ms, _MS["day"])
    hours, rest = divmod(rest, _MS["hour"])
    minutes, rest = divmod(rest, _MS["minute"])
    seconds = f"{rest // 1000}" + (f".{rest % 1000:03d}".rstrip("0") if rest % 1000 else "")
    time = "".join(f"{v}{u}" for v, u in ((hours, "H"), (minutes, "M"), (seconds, "S")) if v not in (0, "0"))
    if not days and not time:
        return "PT0S"
    return "P" + (f"{days}D" if days else "") + (f"T{time}" if time else "")


class _Underivable(Exception):
    """A construct whose reach cannot be proven (a month interval, a computed bound)."""


# ---------------------------------------------------------------- durations and anchors


def _unit_ms(unit: str, where: str) -> int:
    unit = unit.lower().rstrip("s") if unit.lower() != "ms" else "millisecond"
    if unit in _MS:
        return _MS[unit]
    if unit in _VARIABLE:
        raise _Underivable(f"{where}: a {unit} has no fixed length")
    raise _Underivable(f"{where}: unknown interval unit {unit!r}")


def _interval_ms(node: exp.Interval) -> int:
    """``INTERVAL '30 minutes'`` / ``INTERVAL 30 MINUTES`` / ``INTERVAL '1' DAY`` in milliseconds."""
    text, unit = node.this.name if node.this else "", node.args.get("unit")
    if isinstance(node.this, exp.Neg):
        text = "-" + node.this.this.name
    where = node.sql("spark")
    if unit is not None:
        return _number(text, where) * _unit_ms(unit.name, where)
    # sqlglot keeps a multi-part string ('1 day 2 hours') unsplit: sum its parts.
    parts = re.findall(r"(-?\d+)\s*([a-zA-Z]+)", text)
    if not parts:
        raise _Underivable(f"{where}: cannot read the interval")
    return sum(_number(n, where) * _unit_ms(u, where) for n, u in parts)


def _number(text: str, where: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise _Underivable(f"{where}: not a whole number of units") from None


def _int_value(node: exp.Expression) -> int | None:
    """Constant integer of a DATE_ADD/DATE_SUB day count (sqlglot writes DATE_SUB(x, n) as x + n * -1)."""
    node = node.unnest() if isinstance(node, exp.Paren) else node
    if isinstance(node, exp.Literal) and not node.is_string:
        return int(node.this) if re.fullmatch(r"-?\d+", node.this) else None
    if isinstance(node, exp.Neg):
        inner = _int_value(node.this)
        return None if inner is None else -inner
    if isinstance(node, exp.Mul):
        a, b = _int_value(node.this), _int_value(node.expression)
        return None if a is None or b is None else a * b
    return None


def _macro_name(node: exp.Expression) -> str | None:
    """The run-window macro ``node`` is (``@start_ds`` as Parameter, or hidden as a column)."""
    if isinstance(node, exp.Parameter):
        name = node.name.lower()
    elif isinstance(node, exp.Column) and not node.table and node.name.lower().startswith(_HIDDEN):
        name = node.name.lower()[len(_HIDDEN):]
    else:
        return None
    # start/end macros bound the run; execution_* is "now" and says nothing about the window.
    return name if name.startswith(("start_", "end_")) else None


@dataclass(frozen=True)
class _Tie:
    """A value tied to the run window: ``anchor + offset_ms`` (anchor None = the run window itself,
    else the index of another source reference whose time column the value follows)."""

    anchor: int | None
    offset_ms: int


_UNTIED = "untied"  # a constant or a row-local value: it narrows a read, never locates it


# ---------------------------------------------------------------- column lineage through scopes


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


# ---------------------------------------------------------------- the derivation


@dataclass
class _Ref:
    """One reference to a timeseries source in the query (a self-join has two)."""

    table: exp.Table
    source: str
    column: str
    lows: list[_Tie] = field(default_factory=list)    # lower read bounds: anchor - before
    highs: list[_Tie] = field(default_factory=list)   # upper read bounds: anchor + after
    frames: list[tuple[int, int]] = field(default_factory=list)  # Form A (before, after)
    hard: list[str] = field(default_factory=list)     # not derivable whatever else is known
    soft: list[str] = field(default_factory=list)     # not derivable unless another filter bounds it


class _Deriver:
    def __init__(self, root: exp.Expression, time_column: str, sources: Mapping[str, str]):
        root = _inline_ctes(root)
        self.time_column = time_column.lower()
        self.scopes = traverse_scope(root)
        self.lineage = _Lineage(self.scopes)
        self.sources = {k.lower(): v.lower() for k, v in sources.items()}
        self.refs: list[_Ref] = []
        self.index: dict[int, int] = {}
        for table in root.find_all(exp.Table):
            name = _table_name(table)
            if name in self.sources:
                self.index[id(table)] = len(self.refs)
                self.refs.append(_Ref(table, name, self.sources[name]))

    def run(self) -> dict[str, Bound]:
        for scope in self.scopes:
            if isinstance(scope.expression, exp.Select):
                for condition, kept in _conditions(scope.expression):
                    for conjunct in _conjuncts(condition):
                        self._conjunct(scope, conjunct, kept)
                for window in _windows(scope.expression):
                    self._window(scope, window)
        return _widest(_settle(self.refs))

    # -- Form B

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
            if not plain or self._computed(scope, lhs, i):
                _note(ref.soft, f"{ref.source}.{ref.column} is compared through a computed expression: "
                                f"{node.sql('spark')}")
                continue
            if "low" in sides:
                ref.lows.append(_Tie(tie.anchor, -tie.offset_ms))
            if "high" in sides:
                ref.highs.append(tie)

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

    # -- Form A

    def _window(self, scope: Scope, window: exp.Window) -> None:
        cols = list(window.find_all(exp.Column))
        if cols:
            tables = [o.table for c in cols for o in self.lineage.column(scope, c)]
        else:  # COUNT(*) OVER (): the window spans whatever the scope reads
            tables = self.lineage.reachable(scope)
        seen: set[int] = set()
        for table in tables:
            i = self.index.get(id(table))
            if i is None or i in seen:
                continue
            seen.add(i)
            if self._aligned(scope, window, i):
                continue
            ref = self.refs[i]
            try:
                ref.frames.append(self._frame(scope, window, i))
            except _Underivable as e:
                _note(ref.hard, f"{e} (window {window.sql('spark')} over {ref.source})")

    def _aligned(self, scope: Scope, window: exp.Window, i: int) -> bool:
        """PARTITION BY the source's or the model's time column: each window stays inside one partition."""
        return any(self._is_time_key(scope, key, i) for key in window.args.get("partition_by") or [])

    def _is_time_key(self, scope: Scope, key: exp.Expression, i: int) -> bool:
        if not isinstance(key, exp.Column):
            return False
        if key.name.lower() == self.time_column:
            return True
        return any(self.index.get(id(o.table)) == i and o.column == self.refs[i].column and not o.computed
                   for o in self.lineage.column(scope, key))

    def _frame(self, scope: Scope, window: exp.Window, i: int) -> tuple[int, int]:
        spec, order = window.args.get("spec"), window.args.get("order")
        column = self.refs[i].column
        if spec is None or spec.args.get("kind", "").upper() != "RANGE":
            raise _Underivable(f"no RANGE BETWEEN INTERVAL ... PRECEDING frame on {column}")
        keys = order.expressions if order else []
        if len(keys) != 1 or not self._is_time_key(scope, keys[0].this, i):
            raise _Underivable(f"the RANGE frame is not ordered by {column} alone")
        return self._frame_edge(spec, "start", "PRECEDING"), self._frame_edge(spec, "end", "FOLLOWING")

    @staticmethod
    def _frame_edge(spec: exp.WindowSpec, edge: str, outward: str) -> int:
        value, side = spec.args.get(edge), (spec.args.get(f"{edge}_side") or "").upper()
        if isinstance(value, str) and value.upper() == "CURRENT ROW":
            return 0
        if isinstance(value, exp.Interval):
            ms = _interval_ms(value)
            return ms if side == outward else 0  # an edge on the inner side does not widen the read
        raise _Underivable(f"frame edge {value if isinstance(value, str) else value.sql('spark')} {side} "
                           "is not a fixed interval")


# ---------------------------------------------------------------- combining the evidence


def _settle(refs: list[_Ref]) -> list[Bound]:
    """Per reference bound. Ties to another reference follow that reference's bound, so iterate to a fixpoint."""
    known: dict[int, tuple[int, int]] = {}
    for _ in range(len(refs) + 1):
        now = {i: b for i, r in enumerate(refs) if not r.hard and (b := _sides(r, known)) is not None}
        if now == known:
            break
        known = now
    else:  # positive cycle (a >= b - 1d, b >= a - 1d): the offsets grow without end
        cyclic = {i for i in known if _sides(refs[i], known) != known[i]}
        for i in cyclic:
            refs[i].hard.append(f"the interval filters on {refs[i].source}.{refs[i].column} form a cycle")
            known.pop(i)
    return [_bound(i, r, known) for i, r in enumerate(refs)]


def _sides(ref: _Ref, known: dict[int, tuple[int, int]]) -> tuple[int, int] | None:
    before = _reach(ref.lows, known, 0, [f[0] for f in ref.frames])
    after = _reach(ref.highs, known, 1, [f[1] for f in ref.frames])
    return None if before is None or after is None else (max(before, 0), max(after, 0))


def _reach(ties: list[_Tie], known, side: int, frames: list[int]) -> int | None:
    """How far one side of a reference's read reaches past the run window.

    The filters on one reference are AND-ed, so the tightest resolvable one bounds the read (a tie to a
    reference with no known bound says nothing). A window frame needs rows the filters may keep or drop:
    the widest of frames and filters is read (reading too much is safe, too little is not).
    """
    filters = [t.offset_ms + (known[t.anchor][side] if t.anchor is not None else 0)
               for t in ties if t.anchor is None or t.anchor in known]
    values = frames + ([min(filters)] if filters else [])
    return max(values) if values else None


def _bound(i: int, ref: _Ref, known: dict[int, tuple[int, int]]) -> Bound:
    if ref.hard:
        return Bound(ref.source, NOT_DERIVABLE, ref.column, reason="; ".join(ref.hard))
    if i in known:
        return Bound(ref.source, BOUNDED, ref.column, *known[i])
    if ref.soft:
        return Bound(ref.source, NOT_DERIVABLE, ref.column, reason="; ".join(ref.soft))
    missing = [s for n, s in enumerate(("lower", "upper")) if _reach((ref.lows, ref.highs)[n], known, n, []) is None]
    what = " or ".join(missing)
    return Bound(ref.source, UNBOUNDED, ref.column,
                 reason=f"no {what} filter on {ref.source}.{ref.column} tied to the run window: "
                        "the whole source is read")


def _widest(bounds: list[Bound]) -> dict[str, Bound]:
    """One bound per source table: a self-join reads the widest of its references' bounds."""
    rank = {BOUNDED: 0, UNBOUNDED: 1, NOT_DERIVABLE: 2}
    out: dict[str, Bound] = {}
    for b in bounds:
        seen = out.get(b.source)
        if seen is None or rank[b.kind] > rank[seen.kind]:
            out[b.source] = b
        elif b.kind == seen.kind == BOUNDED:
            out[b.source] = Bound(b.source, BOUNDED, b.column, max(b.before_ms, seen.before_ms),
                                  max(b.after_ms, seen.after_ms))
    return out


# ---------------------------------------------------------------- query shape helpers


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


def _note(reasons: list[str], reason: str) -> None:
    if reason not in reasons:  # BETWEEN yields two comparisons with the same complaint
        reasons.append(reason)


def _table_name(table: exp.Table) -> str:
    return ".".join(p for p in (table.catalog, table.db, table.name) if p).lower()


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


def _relation(scope: Scope, col: exp.Column) -> str | None:
    """The alias (lowercased) of the relation a column is read from in this scope."""
    if col.table:
        return col.table.lower()
    sources = scope.selected_sources
    return next(iter(sources)).lower() if len(sources) == 1 else None


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


def _windows(select: exp.Select) -> list[exp.Window]:
    """Window functions of this SELECT (not of nested subqueries, which are their own scopes)."""
    return [w for w in select.find_all(exp.Window)
            if w.find_ancestor(exp.Select) is select]


def derive(query: str, time_column: str, sources: Mapping[str, str], dialect: str = "spark") -> dict[str, Bound]:
    """The bound of each timeseries source ``query`` reads, keyed by lowercased ``db.table``.

    ``sources`` maps each timeseries source to its time column; any other table is a lookup read in full.

    >>> derive("SELECT * FROM raw.e WHERE ts >= DATE_SUB(@start_ds, 1) AND ts < @end_ds", "ds",
    ...        {"raw.e": "ts", "raw.other": "ts"})
    {'raw.e': Bound(source='raw.e', kind='bounded', column='ts', before_ms=86400000, after_ms=0, reason='')}
    """
    return _Deriver(sqlglot.parse_one(query, read=dialect), time_column, sources).run()
