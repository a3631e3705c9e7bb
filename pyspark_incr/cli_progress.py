"""The CLI's progress bar for long applies and runs, fed by ``pyspark_incr.run.progress`` events.

The executor publishes an event when the call and each batch start, and one per
finished step (batch, view, drop), in the process whose handler serves the CALL:
the CLI's own, since it runs Spark embedded. The bar shows steps done of the
plan's total, the batch that started last, the failures so far, elapsed time and
an estimate of the time left. Each failed
step is also printed above the bar, so it stays on screen after the bar goes.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from pyspark_incr.run import progress


class ProgressFeed:
    """Turns progress events into updates of one rich ``Progress`` task; subscribe it with ``progress.subscribe``."""

    def __init__(self, console: Any = None) -> None:
        from rich.progress import (
            BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}", style="bold"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TextColumn("steps"),
            TextColumn("{task.fields[failed]}", style="red"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[last]}", style="dim"),
            console=console,
            transient=True,
        )
        # "planning" until the executor's first event says how many steps the plan has
        self.task = self.progress.add_task("planning", total=None, failed="", last="")
        self._failed = 0

    def __call__(self, event: progress.Event | progress.Started) -> None:
        """Advance to ``event``: the call or a batch started, or step ``done`` of ``total`` finished."""
        if isinstance(event, progress.Started):
            now = f"now: {event.model}{_span(event)}" if event.model else ""
            self.progress.update(self.task, total=event.total, completed=event.done, description="building",
                                 **({"last": now} if now else {}))
            return
        r = event.result
        if r.status == "failed":
            self._failed += 1
            self.progress.console.print(f"[red]failed[/] {r.model}{_span(r)}: {r.message}", markup=True,
                                        highlight=False)
        self.progress.update(
            self.task, total=event.total, completed=event.done, description="building",
            failed=f"{self._failed} failed" if self._failed else "",
            last=f"last: {r.model}{_span(r)} {r.status}",
        )


@contextmanager
def progress_bar(console: Any = None) -> Iterator[ProgressFeed]:
    """Show a progress bar while the body runs a CALL in this process; yields the feed drawing it."""
    feed = ProgressFeed(console)
    unsubscribe = progress.subscribe(feed)
    with feed.progress:
        try:
            yield feed
        finally:
            unsubscribe()


def _span(result: Any) -> str:
    return f" {result.interval}" if result.interval else ""
