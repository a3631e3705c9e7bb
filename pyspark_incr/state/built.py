"""The intervals each physical table has built, folded from the INTERVALS state rows in ``seq`` order.

Folded once while the table's files stay the same, and grown by the rows of files that only appeared
(``StateStore.coverage``, through ``FileCache.derived``).
"""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from pyspark_incr.intervals.ranges import Interval, IntervalSet


class Coverage(NamedTuple):
    """Built intervals per physical table, folded from INTERVALS rows up to ``last_seq`` (None: no rows)."""

    last_seq: int | None
    tables: dict[str, IntervalSet]


def coverage_of(table: pa.Table, since: Coverage | None = None) -> Coverage:
    """The intervals state rows ``table`` leave built, per physical table (after ``since``'s, when given)."""
    before = since.tables if since is not None else {}
    if not table.num_rows:
        return Coverage(since.last_seq if since is not None else None, before)
    cols = table.sort_by("seq").select(["table_name", "start_ms", "end_ms", "op"])
    changes: dict[str, list[tuple[str, Interval]]] = {}
    for name, start, end, op in zip(*(c.to_pylist() for c in cols.columns)):
        changes.setdefault(name, []).append((op, Interval(start, end)))
    folded = {key: fold_intervals(rows, before.get(key, IntervalSet())) for key, rows in changes.items()}
    return Coverage(pc.max(table["seq"]).as_py(), {**before, **folded})


def grown_coverage(before: Coverage, added: pa.Table) -> Coverage | None:
    """``before`` with the rows of files that appeared since folded on; None when they do not all come after it.

    Rows fold in ``seq`` order, so new rows can be folded onto the old result only when every one of
    them sorts after every row already folded (a slow writer's older rows, or compaction's folded
    file, which sorts among them, need the whole fold again).
    """
    if added.num_rows and (added["seq"].null_count or before.last_seq is None
                           or pc.min(added["seq"]).as_py() <= before.last_seq):
        return None
    return coverage_of(added, before)


def fold_intervals(changes: list[tuple[str, Interval]], current: IntervalSet = IntervalSet()) -> IntervalSet:
    """Adds and removes applied in order onto ``current``; a run of adds (or of removes) is applied at once.

    >>> fold_intervals([("add", Interval(0, 10)), ("add", Interval(20, 30)), ("remove", Interval(5, 25)), ("add", Interval(8, 9))])
    IntervalSet([0, 5), [8, 9), [25, 30))
    """
    for op, run in groupby(changes, key=itemgetter(0)):
        intervals = [interval for _, interval in run]
        current = current | intervals if op == "add" else current - IntervalSet(intervals)
    return current
