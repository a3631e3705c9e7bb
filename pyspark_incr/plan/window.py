"""What a call asks for in time: when "now" is, and which intervals ``start``/``end`` allow."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark_incr.errors import ArgumentError
from pyspark_incr.intervals.ranges import BEGINNING, END, Interval
from pyspark_incr.intervals.times import to_datetime
from pyspark_incr.model.definition import Model


@dataclass(frozen=True)
class Window:
    """What the caller asked for: when "now" is, and an optional range restriction."""

    execution_ms: int
    start_ms: int | None = None
    end_ms: int | None = None
    ignore_cron: bool = False
    #: One interval per job, whatever the models' batch_size (per-partition mode).
    per_partition: bool = False
    #: A model the incremental safety check refuses is rebuilt whole, in one job, instead of failing the call.
    allow_downgrade: bool = False


def restriction(model: Model, window: Window) -> Interval:
    """The range ``start``/``end`` allow for ``model``; a bound off its interval grid is an error."""
    lo = _aligned(model, "start", window.start_ms) if window.start_ms is not None else BEGINNING
    hi = _aligned(model, "end", window.end_ms) if window.end_ms is not None else END
    return Interval(lo, max(lo, hi))


def _aligned(model: Model, what: str, ms: int) -> int:
    """``ms`` when it starts an interval of ``model``, else an error offering the aligned bounds on both sides.

    An end is shown as a user writes it: a midnight end as the bare date it runs through.
    """
    unit = model.schedule.unit
    below = model.schedule.floor(ms)
    if below == ms:
        return ms
    above = unit.add(below, 1)
    dates = all(b % 86_400_000 == 0 for b in (below, above))
    hint = " (a bare date as end means through that day)" if what == "end" and dates else ""
    raise ArgumentError(
        f"{what} {_bound(what, ms)!r} is not aligned to the {unit.value.replace('_', ' ')} intervals of model "
        f"{model.name}; use {_bound(what, below, dates)!r} or {_bound(what, above, dates)!r}{hint}"
    )


def _bound(what: str, ms: int, as_date: bool | None = None) -> str:
    """``ms`` as ``start``/``end`` would be written: a date, or a timestamp; an end date is the day before."""
    day = 86_400_000
    if as_date is None:
        as_date = ms % day == 0
    if as_date:
        return to_datetime(ms - (day if what == "end" else 0)).strftime("%Y-%m-%d")
    text = to_datetime(ms).strftime("%Y-%m-%d %H:%M:%S")
    return f"{text}.{ms % 1000:03d}" if ms % 1000 else text
