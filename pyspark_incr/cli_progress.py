"""The CLI's progress bar for long applies and runs, fed by ``pyspark_incr.run.progress`` events.

The executor publishes an event when the call and each batch start, one per
finished step (batch, view, drop), and one for the steps a model will never run
(skipped after a failure, or nothing to do), in the process whose handler serves
the CALL: the CLI's own, since it runs Spark embedded. So the bar ends at its
total: failed and skipped steps count as done, and the bar says how many there
were. It shows steps done of the plan's total, the batch that started last, the
failed and skipped steps so far, elapsed time and an estimate of the time left.
Each failed step is also printed above the bar, so it stays on screen after the
bar goes.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from rich.progress import (
    BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
)
from rich.text import Text

from pyspark_incr.run import progress


class OutcomeColumn(ProgressColumn):
    """The failed and skipped steps so far ("1 failed 2 skipped"), each in its colour; nothing while none."""

    def render(self, task: Any) -> Text:
        parts = [(task.fields[key], style) for key, style in (("failed", "red"), ("skipped", "yellow"))]
        return Text(" ").join(Text(text, style) for text, style in parts if text)


class ProgressFeed:
    """Turns progress events into updates of one rich ``Progress`` task; subscribe it with ``progress.subscribe``."""

    def __init__(self, console: Any = None) -> None:
        self.progress = Progress(
            TextColumn("{task.description}", style="bold"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TextColumn("steps"),
            OutcomeColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[last]}", style="dim"),
            console=console,
            transient=True,
        )
        # "planning" until the executor's first event says how many steps the plan has
        self.task = self.progress.add_task("planning", total=None, failed="", skipped="", last="")
        self._failed = self._skipped = 0

    def __call__(self, event: progress.Event | progress.Started | progress.Settled) -> None:
        """Advance to ``event``: the call or a batch started, step ``done`` of ``total`` finished, or a model's
        steps that will never run were counted done."""
        if isinstance(event, progress.Started):
            now = f"now: {event.model}{_span(event)}" if event.model else ""
            self._update(event, **({"last": now} if now else {}))
            return
        if isinstance(event, progress.Settled):
            self._skipped += event.steps if event.status == "skipped" else 0
            self._update(event)
            return
        r = event.result
        if r.status == "failed":
            self._failed += 1
            self._print_failure(r)
        elif r.status == "skipped":
            self._skipped += 1
        self._update(event, last=f"last: {r.model}{_span(r)} {r.status}")

    def _update(self, event: Any, **fields: str) -> None:
        self.progress.update(
            self.task, total=event.total, completed=event.done, description="building",
            failed=f"{self._failed} failed" if self._failed else "",
            skipped=f"{self._skipped} skipped" if self._skipped else "", **fields,
        )

    def _print_failure(self, r: Any) -> None:
        # Text, not markup: Spark's message opens with its error class in brackets, which markup would eat
        line = Text.assemble(("failed", "red"), f" {r.model}{_span(r)}: {r.message}")
        self.progress.console.print(line, highlight=False)


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
