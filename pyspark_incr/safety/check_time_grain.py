"""The coarse_time rule: the model's time column written at a grain coarser than its interval.

``DATE_TRUNC('MONTH', ds) AS ds`` in a daily model computes a partial month on every daily slice, and the
output filter keeps that row only on the slice holding the month's first day: the table ends up with one
day's figures labelled as the month. The other rules judge what a slice computes, which is right here: it is
the label that spans slices.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark_incr.safety.context import _Context
from pyspark_incr.safety.grains import CRON_OF, grain_of
from pyspark_incr.safety.rules import WHY, Finding


def _coarse_times(ctx: _Context) -> Iterable[Finding]:
    for writer in ctx.time_writers:
        grain = grain_of(writer.unalias())
        if grain is None or grain.fits(ctx.interval_ms):
            continue
        # A cron ticking more often than the unit is refused at load, so the fix names both.
        cron = f" (cron {CRON_OF[grain.unit]} alone sets both)" if grain.unit in CRON_OF else ""
        fix = (f"set interval_unit to {grain.unit} and a cron no more frequent{cron}, or write the time column "
               f"{ctx.time_column} at its own grain")
        yield ctx.finding("coarse_time", writer, ctx.source.start(writer), why=f"{WHY['coarse_time']}; {fix}")
