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

from typing import Mapping

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from pyspark_incr.safety.conditions import _ConditionRules, _conditions, _conjuncts
from pyspark_incr.safety.durations import iso_duration
from pyspark_incr.safety.evidence import BOUNDED, NOT_DERIVABLE, UNBOUNDED, Bound, _Ref, _settle, _widest
from pyspark_incr.safety.frames import _FrameRules, _windows
from pyspark_incr.safety.lineage import _inline_ctes, _Lineage
from pyspark_incr.safety.tables import table_name

__all__ = ["BOUNDED", "NOT_DERIVABLE", "UNBOUNDED", "Bound", "derive", "iso_duration"]


class _Deriver(_ConditionRules, _FrameRules):
    def __init__(self, root: exp.Expression, time_column: str, sources: Mapping[str, str],
                 windows_vouched: bool = False):
        root = _inline_ctes(root)
        self.windows_vouched = windows_vouched
        self.time_column = time_column.lower()
        self.scopes = traverse_scope(root)
        self.lineage = _Lineage(self.scopes)
        self.sources = {k.lower(): v.lower() for k, v in sources.items()}
        self.refs: list[_Ref] = []
        self.index: dict[int, int] = {}
        for table in root.find_all(exp.Table):
            name = table_name(table)
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


def derive(query: str, time_column: str, sources: Mapping[str, str], dialect: str = "spark",
           windows_vouched: bool = False) -> dict[str, Bound]:
    """The bound of each timeseries source ``query`` reads, keyed by lowercased ``db.table``.

    ``sources`` maps each timeseries source to its time column; any other table is a lookup read in full.
    ``windows_vouched`` (``safety_overrides`` allow_window_functions): a window without an interval frame
    adds no reach instead of making its source not derivable (smelt reads it as partition-local).

    >>> derive("SELECT * FROM raw.e WHERE ts >= DATE_SUB(@start_ds, 1) AND ts < @end_ds", "ds",
    ...        {"raw.e": "ts", "raw.other": "ts"})
    {'raw.e': Bound(source='raw.e', kind='bounded', column='ts', before_ms=86400000, after_ms=0, reason='')}
    """
    return _Deriver(sqlglot.parse_one(query, read=dialect), time_column, sources, windows_vouched).run()
