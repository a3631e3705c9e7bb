"""Form A: the read reach a RANGE BETWEEN INTERVAL window frame adds to a source reference."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from pyspark_incr.safety.durations import _interval_ms, _Underivable
from pyspark_incr.safety.evidence import _note


class _FrameRules:
    """Form A of the deriver (mixed into ``bounds._Deriver``: needs ``time_column``, ``refs``, ``index``, ``lineage``,
    ``windows_vouched``)."""

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
                ref.frames.append((*self._frame(scope, window, i), scope))
            except _Underivable as e:
                if not self.windows_vouched:  # safety_overrides allow_window_functions: read as partition-local
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


def _windows(select: exp.Select) -> list[exp.Window]:
    """Window functions of this SELECT (not of nested subqueries, which are their own scopes)."""
    return [w for w in select.find_all(exp.Window)
            if w.find_ancestor(exp.Select) is select]
