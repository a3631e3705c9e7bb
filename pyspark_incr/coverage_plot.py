"""Interval coverage as a PNG (``pyspark-incr status --png``): one row per model on a shared date axis.

matplotlib is an optional dependency (the ``plot`` extra), imported only when a
picture is asked for. The figure is drawn without pyplot (a bare ``Figure``
saved through Agg): no display is needed, and a notebook's backend is left alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark_incr.coverage import BUILT, MISSING, PENDING, WAITING, Coverage, gap_count, short_time, waiting_count
from pyspark_incr.errors import PlotUnavailable
from pyspark_incr.intervals.times import to_datetime

#: Face colour of each state's spans.
COLOURS = {BUILT: "#2e9e4f", MISSING: "#d62728", PENDING: "#d9d9d9", WAITING: "#f0b429"}
_LABELS = {BUILT: "built", MISSING: "missing", PENDING: "not complete yet", WAITING: "waiting for a signal"}


def write_png(coverage_list: list[Coverage], until_ms: int, path: Path | str) -> Path:
    """Draw ``coverage_list`` up to ``until_ms`` into the PNG file ``path``; returns the path written."""
    Figure, Rectangle, mdates = _matplotlib()
    drawn = [c for c in coverage_list if c.note is None]
    others = [c for c in coverage_list if c.note is not None]
    fig = Figure(figsize=(10, 1.2 + 0.55 * max(1, len(drawn))), dpi=100)
    ax = fig.subplots()
    for y, c in enumerate(reversed(drawn)):
        for state, lo, hi in _bars(c, until_ms):
            ax.broken_barh([(to_datetime(lo), to_datetime(hi) - to_datetime(lo))], (y - 0.35, 0.7),
                           facecolors=COLOURS[state], edgecolor="white", linewidth=0.5)
    ax.set_yticks(range(len(drawn)))
    ax.set_yticklabels([f"{c.model}\n{c.built}/{c.built + c.missing + c.waiting} built, {gap_count(c.gaps)}"
                        f"{waiting_count(c.waiting)}" for c in reversed(drawn)], fontsize=8)
    ax.set_ylim(-0.6, max(1, len(drawn)) - 0.4)
    ax.xaxis.set_major_locator(mdates.AutoDateLocator())
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
    ax.axvline(to_datetime(until_ms), color="black", linestyle="--", linewidth=1)
    ax.set_title(f"Interval coverage at {short_time(until_ms)} UTC", fontsize=10, loc="left")
    states = (BUILT, MISSING, PENDING) + ((WAITING,) if any(c.waiting for c in drawn) else ())
    handles = [Rectangle((0, 0), 1, 1, color=COLOURS[s]) for s in states]
    ax.legend(handles, [_LABELS[s] for s in states], loc="lower right",
              bbox_to_anchor=(1.0, 1.0), ncol=len(states), fontsize=8, frameon=False, borderaxespad=0.2)
    if others:
        fig.text(0.01, 0.01, "without intervals: " + ", ".join(f"{c.model} ({c.note})" for c in others),
                 fontsize=7, color="#555555")
    ax.grid(axis="x", color="#eeeeee")
    ax.set_axisbelow(True)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    # no timestamp in the file, so regenerating an unchanged picture changes no bytes
    fig.savefig(out, format="png", metadata={"Software": None})
    return out


def _bars(c: Coverage, until_ms: int) -> list[tuple[str, int, int]]:
    """The model's spans, plus the pending stretch from its last row to the execution time."""
    bars = [(s.state, s.start, s.end) for s in c.spans]
    lo, hi = c.edges(until_ms)
    last = max(s.end for s in c.spans)
    if last < hi:
        bars.append((PENDING, last, hi))
    return bars


def require_matplotlib() -> None:
    """Raise :class:`PlotUnavailable`, naming the extra to install, when matplotlib is missing."""
    _matplotlib()


def _matplotlib() -> tuple[Any, Any, Any]:
    try:
        import matplotlib.dates as mdates
        from matplotlib.figure import Figure
        from matplotlib.patches import Rectangle
    except ImportError:
        raise PlotUnavailable(
            "pyspark-incr status --png: matplotlib is not installed; run pip install 'pyspark-incr[plot]' "
            "(or leave out --png for the terminal timeline)"
        ) from None

    return Figure, Rectangle, mdates
