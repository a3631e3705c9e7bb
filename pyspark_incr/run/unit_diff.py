"""Comparing a unit test's expected rows with the actual ones, as SQLMesh compares them, and the diff shown.

Rows match in any order unless ``ordered``; floats are equal within a relative 1e-5 (absolute 1e-8).

>>> print(compare(["item_id", "num_orders"], [(1, 3), (2, 1)], [(2, 1), (1, 2)], ordered=False))
Data mismatch (exp: expected, act: actual)
<BLANKLINE>
     num_orders
     exp  act
  0  3    2
>>> compare(["x"], [(0.1 + 0.2,)], [(0.3,)], ordered=True) is None
True
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any, Sequence

REL_TOL, ABS_TOL = 1e-5, 1e-8


def compare(columns: Sequence[str], expected: Sequence[tuple], actual: Sequence[tuple], ordered: bool) -> str | None:
    """None when the rows match, else the diff: per column expected vs actual, or the missing/unexpected rows."""
    if not ordered:
        expected, actual = sorted(expected, key=_row_key), sorted(actual, key=_row_key)
    if len(expected) == len(actual):
        bad_rows = [i for i, (e, a) in enumerate(zip(expected, actual)) if not same(e, a)]
        if not bad_rows:
            return None
        bad_columns = [j for j in range(len(columns)) if any(not same(expected[i][j], actual[i][j]) for i in bad_rows)]
        body = [[str(i)] + [_text(r[i][j]) for j in bad_columns for r in (expected, actual)] for i in bad_rows]
        return "Data mismatch (exp: expected, act: actual)\n\n" + _pairs_table([columns[j] for j in bad_columns], body)
    parts = ["Data mismatch (rows are different)"]
    for title, rows in (("Missing rows", _unmatched(expected, actual)), ("Unexpected rows", _unmatched(actual, expected))):
        if rows:
            parts.append(f"{title}:\n\n" + _table([list(columns)] + [[_text(v) for v in r] for r in rows]))
    return "\n\n".join(parts)


def same(expected: Any, actual: Any) -> bool:
    """Equal, floats within a relative 1e-5 (and absolute 1e-8); NULL equals only NULL."""
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, (float, Decimal)) or isinstance(actual, (float, Decimal)):
        if isinstance(expected, bool) or isinstance(actual, bool):
            return expected == actual
        try:
            e, a = float(expected), float(actual)
        except (TypeError, ValueError):
            return False
        return (e != e and a != a) or abs(e - a) <= ABS_TOL + REL_TOL * abs(a)
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(same(e, a) for e, a in zip(expected, actual))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(same(v, actual[k]) for k, v in expected.items())
    return expected == actual


def _unmatched(rows: Sequence[tuple], others: Sequence[tuple]) -> list[tuple]:
    """The rows of ``rows`` left once each is paired with an equal, still unpaired row of ``others``."""
    free = list(others)
    left = []
    for row in rows:
        match = next((i for i, other in enumerate(free) if same(row, other)), None)
        if match is None:
            left.append(row)
        else:
            free.pop(match)
    return left


def _row_key(row: tuple) -> tuple:
    return tuple((0, "") if v is None else (1, v) if isinstance(v, (int, float, Decimal, str, date)) else (1, repr(v))
                 for v in row)


def _text(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return str(value)


def _pairs_table(names: list[str], body: list[list[str]]) -> str:
    """A row number, then an exp and an act cell per column, the column's name spanning its pair."""
    rows = [[""] + ["exp", "act"] * len(names)] + body
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for k, name in enumerate(names):
        e, a = 1 + 2 * k, 2 + 2 * k
        widths[a] = max(widths[a], len(name) - widths[e] - 2)
    head = " " * widths[0] + "".join("  " + n.ljust(widths[1 + 2 * k] + 2 + widths[2 + 2 * k])
                                      for k, n in enumerate(names))
    lines = [head] + ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(("  " + line).rstrip() for line in lines)


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths))).rstrip() for r in rows)
