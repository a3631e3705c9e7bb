"""A model's interval coverage as static SVG: the spans of ``incr.status``, coloured as ``status --png`` colours them.

The timeline is drawn here, not in the browser: its rectangles are in the file, so a
page shows coverage even with scripts off, and a test counts them without a browser.
Each status row is one ``<rect class="span">``; the stretch from the last row to the
execution time (not complete yet) is one more, in the pending colour.
"""

from __future__ import annotations

from pyspark_incr.coverage import BUILT, MISSING, PENDING, WAITING, Coverage, gap_count, short_time, waiting_count
from pyspark_incr.coverage_plot import COLOURS
from pyspark_incr.site.markup import esc

_WORDS = {BUILT: "built", MISSING: "missing", PENDING: "not complete yet", WAITING: "waiting for a signal"}
#: The narrowest span drawn, in SVG units: a one-day gap in years of history stays visible.
_MIN_W = 1.0


def spans(coverage: Coverage, until_ms: int) -> list[tuple[str, int, int, int]]:
    """``(state, start, end, intervals)`` of each span to draw, the pending stretch last."""
    drawn = [(s.state, s.start, s.end, s.intervals) for s in coverage.spans]
    lo, hi = coverage.edges(until_ms)
    last = max(s.end for s in coverage.spans)
    if last < hi:
        drawn.append((PENDING, last, hi, 0))
    return drawn


def summary(coverage: Coverage) -> str:
    """``7/9 built, 1 gap`` (as the terminal timeline says it), or the note of a kind without intervals."""
    if coverage.note is not None:
        return f"{coverage.kind.lower()}: no intervals ({coverage.note})"
    total = coverage.built + coverage.missing + coverage.waiting
    return f"{coverage.built}/{total} built, {gap_count(coverage.gaps)}{waiting_count(coverage.waiting)}"


def svg(coverage: Coverage, until_ms: int, width: int = 600, height: int = 18) -> str:
    """The timeline of a model with spans, from its first status row to the execution time (or its last row)."""
    lo, hi = coverage.edges(until_ms)
    scale = width / max(1, hi - lo)
    rects = []
    for state, start, end, intervals in spans(coverage, until_ms):
        x = (start - lo) * scale
        w = max(_MIN_W, (end - start) * scale)
        tip = f"{_WORDS[state]}: {short_time(start)} to {short_time(end)}"
        tip += f", {intervals} intervals" if intervals else ""
        rects.append(f'<rect class="span" data-state="{esc(state)}" x="{x:.2f}" y="0" width="{w:.2f}" '
                     f'height="{height}" fill="{COLOURS[state]}"><title>{esc(tip)}</title></rect>')
    label = f"coverage of {coverage.model}: {summary(coverage)}"
    return (f'<svg class="incr-coverage" data-spans="{len(rects)}" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" preserveAspectRatio="none" role="img" aria-label="{esc(label)}">'
            + "".join(rects) + "</svg>")


def block(coverage: Coverage | None, until_ms: int | None, *, read: bool, env: str, small: bool = False) -> str:
    """A model's coverage for a page: the timeline with its edges and counts, or a sentence saying why there is none."""
    if not read:
        return _note("coverage not read", "coverage not read (the site was built with --no-coverage)", small)
    if coverage is None:
        return _note(f"not in environment {env}",
                     f"not in environment {env}: apply the project to it, then build the site again", small)
    if coverage.note is not None or until_ms is None:
        return _note(summary(coverage), summary(coverage), small)
    lo, hi = coverage.edges(until_ms)
    picture = svg(coverage, until_ms, *((160, 10) if small else (600, 18)))
    if small:
        return f'<div class="coverage small">{picture}<span>{esc(summary(coverage))}</span></div>'
    return (f'<div class="coverage">{picture}<div class="axis"><span>{esc(short_time(lo))}</span>'
            f"<span>{esc(short_time(hi))}</span></div><p>{esc(summary(coverage))}</p></div>")


def _note(short: str, long: str, small: bool) -> str:
    """Why a model has no timeline: the short words in the project's table, the sentence on its page."""
    return f'<span class="coverage-note">{esc(short)}</span>' if small else f'<p class="coverage-note">{esc(long)}</p>'


def legend() -> str:
    """The colours of the timeline's states."""
    keys = "".join(f'<span class="key"><i style="background:{COLOURS[s]}"></i>{esc(_WORDS[s])}</span>'
                   for s in (BUILT, MISSING, PENDING, WAITING))
    return f'<p class="legend">{keys}</p>'
