"""A small pure-Python SCD type 2, straight from the spec's words, to check the writers against.

Rows are dicts; ``valid_from`` / ``valid_to`` are datetimes (``valid_to`` None while open).
One call is one run: the history so far, the source's current rows, the run's execution time.

>>> from datetime import datetime as dt
>>> h = merge([], [{"id": 1, "v": "a", "u": dt(2020, 1, 1)}], dt(2020, 1, 1, 2), key=("id",), updated_at="u")
>>> [(r["v"], r["valid_from"].year, r["valid_to"]) for r in h]
[('a', 1970, None)]
>>> h = merge(h, [], dt(2020, 1, 2, 2), key=("id",), updated_at="u")
>>> h = merge(h, [{"id": 1, "v": "a", "u": dt(2020, 1, 1)}], dt(2020, 1, 3, 2), key=("id",), updated_at="u")
>>> [(r["valid_from"], r["valid_to"]) for r in h][1]  # re-appears with its old updated_at: no gap
(datetime.datetime(2020, 1, 2, 2, 0), None)
"""

from __future__ import annotations

from datetime import datetime

EPOCH = datetime(1970, 1, 1)


def merge(history: list[dict], source: list[dict], execution: datetime, *, key: tuple[str, ...],
          updated_at: str | None = None, check: tuple[str, ...] = (), invalidate_hard_deletes: bool = True,
          updated_at_as_valid_from: bool = False, execution_time_as_valid_from: bool = False,
          valid_from: str = "valid_from", valid_to: str = "valid_to") -> list[dict]:
    """The history after one run (``updated_at`` given: by time; else by the ``check`` columns).

    The source has one row per key (the generators make it so).
    """
    by_time = updated_at is not None
    out = [dict(r) for r in history]
    initial = not out
    open_rows = {_key(r, key): r for r in out if r[valid_to] is None}
    last_closed: dict[tuple, datetime] = {}
    for r in out:
        if r[valid_to] is not None:
            k = _key(r, key)
            last_closed[k] = max(last_closed.get(k, r[valid_to]), r[valid_to])
    seen = set()
    for row in source:
        k = _key(row, key)
        seen.add(k)
        old = open_rows.get(k)
        if old is None:
            if initial:
                start = (row[updated_at] if by_time and updated_at_as_valid_from
                         else execution if not by_time and execution_time_as_valid_from else EPOCH)
            elif by_time:  # "the largest of the updated_at of the new record or the valid_to of the deleted one"
                start = max(row[updated_at], last_closed[k]) if k in last_closed else row[updated_at]
            else:
                start = execution
            out.append({**row, valid_from: start, valid_to: None})
        elif (row[updated_at] > old[updated_at]) if by_time else any(row[c] != old[c] for c in check):
            at = row[updated_at] if by_time else execution
            old[valid_to] = at
            out.append({**row, valid_from: at, valid_to: None})
    if invalidate_hard_deletes:
        for k, old in open_rows.items():
            if k not in seen:
                old[valid_to] = execution
    return out


def _key(row: dict, key: tuple[str, ...]) -> tuple:
    return tuple(row[k] for k in key)
