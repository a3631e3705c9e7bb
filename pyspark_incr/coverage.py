"""Interval coverage as a picture: ``incr.status`` rows turned into one timeline line per model.

Pure functions, no Spark and no terminal: the CLI prints :func:`lines` with rich
colours, the docs test redraws a saved capture with :func:`render_text`, and
``pyspark_incr.coverage_plot`` draws the same :class:`Coverage` records as a PNG.

Each model's line runs from its first status row to the execution time (or to
its last built interval, when that is later). A character cell is *missing* as
soon as any missing interval touches it, so a one-day gap in a five-year line
still shows; else *waiting* where an interval a signal holds back touches it;
otherwise it is *built* where a built range touches it, and *pending* past the
last complete interval (not complete yet at the execution time).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Iterable, Mapping

from pyspark_incr.intervals.times import to_datetime, to_ms

BUILT, MISSING, PENDING, BUILDING, WAITING = "covered", "missing", "pending", "building", "waiting"
#: The one colour of the timeline: missing cells and the count of gaps.
GAP_STYLE = "bold red"
#: Intervals a signal holds back: not built, yet nothing to fix (the next run checks again).
WAITING_STYLE = "yellow"

#: How each cell state is drawn: its character (distinct without colour) and its rich style. Only gaps are
#: coloured, so the eye goes to what needs a run; built is the terminal's own colour.
GLYPHS: dict[str, tuple[str, str]] = {
    BUILT: ("█", ""),
    MISSING: ("░", GAP_STYLE),
    PENDING: ("·", "dim"),
    WAITING: ("▒", WAITING_STYLE),
}
LEGEND = (("built", BUILT), ("missing", MISSING), ("not complete yet", PENDING))
#: Added to the legend only when some line has waiting cells (a project without signals never sees it).
WAITING_LEGEND = ("waiting for a signal", WAITING)
_MIN_BAR = 10


@dataclass(frozen=True)
class Span:
    """One status row with a range: ``state`` (covered, missing or waiting) over ``[start, end)``, epoch ms UTC."""

    state: str
    start: int
    end: int
    intervals: int


@dataclass(frozen=True)
class Coverage:
    """One model's status rows; ``note`` instead of spans for kinds without intervals (view, seed, ...)."""

    model: str
    kind: str
    table: str | None
    spans: tuple[Span, ...] = ()
    note: str | None = None

    @property
    def built(self) -> int:
        """Intervals built."""
        return sum(s.intervals for s in self.spans if s.state == BUILT)

    @property
    def missing(self) -> int:
        """Intervals missing."""
        return sum(s.intervals for s in self.spans if s.state == MISSING)

    @property
    def waiting(self) -> int:
        """Intervals missing that a signal holds back (a run would not build them yet)."""
        return sum(s.intervals for s in self.spans if s.state == WAITING)

    @property
    def gaps(self) -> int:
        """Missing ranges (each status row of state missing is one maximal gap)."""
        return sum(1 for s in self.spans if s.state == MISSING)

    def edges(self, until_ms: int) -> tuple[int, int]:
        """Where the model's line starts and ends: its first row, and the later of ``until_ms`` and its last row."""
        return min(s.start for s in self.spans), max(until_ms, max(s.end for s in self.spans))


def coverages(rows: Iterable[Mapping[str, Any]]) -> list[Coverage]:
    """Group ``incr.status`` rows (dicts, or anything with ``asDict()``) by model, in first-seen order.

    >>> [c] = coverages([
    ...     {"model": "m", "kind": "INCREMENTAL_BY_TIME_RANGE", "state": "covered", "start": "2024-01-01",
    ...      "end": "2024-01-03", "intervals": 2, "table": "db.m"},
    ...     {"model": "m", "kind": "INCREMENTAL_BY_TIME_RANGE", "state": "missing", "start": "2024-01-03",
    ...      "end": "2024-01-04", "intervals": 1, "table": "db.m"}])
    >>> (c.built, c.missing, c.gaps)
    (2, 1, 1)
    >>> coverages([{"model": "v", "kind": "VIEW", "state": "view", "start": None, "end": None,
    ...             "intervals": 0, "table": "db.v"}])[0].note
    'view'
    """
    grouped: dict[str, dict[str, Any]] = {}
    for raw in rows:
        row = raw.asDict() if hasattr(raw, "asDict") else raw
        entry = grouped.setdefault(row["model"], {"kind": row["kind"], "table": row.get("table"), "spans": [],
                                                  "note": None})
        if row["state"] in (BUILT, MISSING, WAITING) and row["start"] is not None and row["end"] is not None:
            entry["spans"].append(Span(row["state"], _ms(row["start"]), _ms(row["end"]), int(row["intervals"] or 0)))
        elif row["state"] != BUILDING:  # a range in progress elsewhere: the timeline shows it as missing still
            entry["note"] = row["state"]
    return [
        Coverage(name, e["kind"], e["table"], tuple(sorted(e["spans"], key=lambda s: s.start)),
                 None if e["spans"] else (e["note"] or "no intervals"))
        for name, e in grouped.items()
    ]


def cells(coverage: Coverage, until_ms: int, width: int) -> list[str]:
    """The state of each of ``width`` character cells of ``coverage``'s line.

    >>> c = coverages([
    ...     {"model": "m", "kind": "K", "state": "covered", "start": "2024-01-01", "end": "2024-01-05",
    ...      "intervals": 4, "table": None},
    ...     {"model": "m", "kind": "K", "state": "missing", "start": "2024-01-05", "end": "2024-01-06",
    ...      "intervals": 1, "table": None}])[0]
    >>> "".join(GLYPHS[s][0] for s in cells(c, to_ms("2024-01-08"), 7))
    '████░··'
    """
    lo, hi = coverage.edges(until_ms)
    states = []
    for k in range(width):
        a, b = lo + (hi - lo) * k // width, lo + (hi - lo) * (k + 1) // width
        b = max(b, a + 1)  # a line shorter than its cells still gives every cell a moment
        touching = {s.state for s in coverage.spans if s.start < b and a < s.end}
        states.append(next((s for s in (MISSING, WAITING, BUILT) if s in touching), PENDING))
    return states


def lines(coverage_list: list[Coverage], until_ms: int, width: int) -> list[list[tuple[str, str]]]:
    """The timeline as lines of ``(text, rich style)`` pieces, each line at most ``width`` characters.

    A header names the execution time; then one line per model (name, first date,
    bar, last date, counts; the counts go on a line of their own when the terminal
    is too narrow for a useful bar beside them); then the legend.
    """
    rows = []
    for c in coverage_list:
        if c.note is not None:
            rows.append((c, "", "", f"{c.kind.lower()}: no intervals"))
            continue
        lo, hi = c.edges(until_ms)
        rows.append((c, short_time(lo), short_time(hi), f"{c.built}/{c.built + c.missing + c.waiting} built, "
                                                        f"{gap_count(c.gaps)}{waiting_count(c.waiting)}"))
    name_w = max([len(c.model) for c in coverage_list] + [5])
    left_w = max([len(r[1]) for r in rows] + [0])
    right_w = max([len(r[2]) for r in rows if r[2]] + [0])
    summary_w = max([len(r[3]) for r in rows if r[2]] + [0])
    fixed = name_w + 2 + left_w + 1 + 1 + right_w
    beside = width - fixed - 2 - summary_w >= 2 * _MIN_BAR
    bar_w = max(_MIN_BAR, width - fixed - (2 + summary_w if beside else 0))

    out: list[list[tuple[str, str]]] = [_crop([(f"Interval coverage at {short_time(until_ms)} UTC", "bold")], width), []]
    for c, left, right, summary in rows:
        line = [(c.model.ljust(name_w), "bold"), ("  ", "")]
        if c.note is not None:
            line.append((" " * (left_w + 1) + summary, "dim"))
            out.append(_crop(line, width))
            continue
        line.append((left.rjust(left_w) + " ", ""))
        for state, run in _runs(cells(c, until_ms, bar_w)):
            glyph, style = GLYPHS[state]
            line.append((glyph * run, style))
        line.append((" " + right.ljust(right_w), ""))
        gaps, waits = gap_count(c.gaps), waiting_count(c.waiting)
        counts = [(summary[:-len(gaps + waits)], ""), (gaps, GAP_STYLE if c.gaps else ""), (waits, WAITING_STYLE)]
        if beside:
            out.append(_crop([*line, ("  ", ""), *counts], width))
        else:
            out += [_crop(line, width), _crop([(" " * (name_w + 2 + left_w + 1), ""), *counts], width)]
    legend: list[tuple[str, str]] = []
    shown = LEGEND + ((WAITING_LEGEND,) if any(c.waiting for c in coverage_list) else ())
    for label, state in shown:
        glyph, style = GLYPHS[state]
        legend += [(glyph, style), (f" {label}   ", "")]
    out += [[], _crop(legend, width)]
    return out


def render_text(coverage_list: list[Coverage], until_ms: int, width: int) -> str:
    """The timeline as plain text, trailing blanks stripped: what a terminal of ``width`` columns shows.

    >>> rows = [{"model": "db.daily", "kind": "K", "state": s, "start": a, "end": b, "intervals": n, "table": None}
    ...         for s, a, b, n in (("covered", "2024-01-01", "2024-01-05", 4), ("missing", "2024-01-05", "2024-01-07", 2),
    ...                            ("covered", "2024-01-07", "2024-01-10", 3))]
    >>> print(render_text(coverages(rows), to_ms("2024-01-10"), 72))
    Interval coverage at 2024-01-10 UTC
    <BLANKLINE>
    db.daily  2024-01-01 █████████░░░░░░███████ 2024-01-10  7/9 built, 1 gap
    <BLANKLINE>
    █ built   ░ missing   · not complete yet
    """
    return "\n".join("".join(text for text, _ in line).rstrip() for line in lines(coverage_list, until_ms, width))


def gap_count(gaps: int) -> str:
    """How many gaps, in words.

    >>> gap_count(0), gap_count(1), gap_count(3)
    ('no gaps', '1 gap', '3 gaps')
    """
    return "no gaps" if not gaps else f"{gaps} gap{'s' if gaps > 1 else ''}"


def waiting_count(intervals: int) -> str:
    """The summary's tail for intervals waiting for a signal (nothing when none wait).

    >>> waiting_count(0), waiting_count(2)
    ('', ', 2 waiting')
    """
    return f", {intervals} waiting" if intervals else ""


def short_time(ms: int) -> str:
    """A line edge: the date, with hours and minutes when not midnight (UTC).

    >>> short_time(to_ms("2024-01-25")), short_time(to_ms("2024-01-25 06:30:10"))
    ('2024-01-25', '2024-01-25 06:30')
    """
    dt = to_datetime(ms)
    return dt.strftime("%Y-%m-%d" if (dt.hour, dt.minute) == (0, 0) else "%Y-%m-%d %H:%M")


def _ms(value: Any) -> int:
    if isinstance(value, (datetime, date, str)):
        return to_ms(value)
    raise TypeError(f"coverage: {value!r} is not a timestamp")


def _runs(states: list[str]) -> list[tuple[str, int]]:
    runs: list[tuple[str, int]] = []
    for s in states:
        if runs and runs[-1][0] == s:
            runs[-1] = (s, runs[-1][1] + 1)
        else:
            runs.append((s, 1))
    return runs


def _crop(line: list[tuple[str, str]], width: int) -> list[tuple[str, str]]:
    """Cut a line at ``width`` characters, so the terminal never wraps it."""
    out, left = [], width
    for text, style in line:
        if left <= 0:
            break
        out.append((text[:left], style))
        left -= len(text[:left])
    return out
