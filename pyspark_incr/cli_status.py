"""``pyspark-incr status``: ``CALL incr.status`` drawn as a coverage timeline, optionally saved as PNG and JSON.

The picture is drawn from the procedure's own rows (one per built range and per
gap), so what the CLI shows is exactly what a SQL user can SELECT. Every model
gets its line, however many there are (a terminal scrolls; nothing is cut), and
only gaps (and, in a colour of their own, intervals a signal holds back) are
coloured, so they stand out; rich leaves colour out when stdout is not a
terminal or ``NO_COLOR`` is set.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pyspark_incr.coverage import GAP_STYLE, MISSING, WAITING, WAITING_STYLE, coverages, lines, render_text
from pyspark_incr.intervals.times import format_ms, to_ms
from pyspark_incr.sqltext import call_sql


def status_rows(spark: Any, model: str | None, env: str | None, execution_ms: int) -> list[dict]:
    """``CALL incr.status`` at ``execution_ms``, rows as dicts with ``start``/``end`` as UTC strings.

    The times go through ``unix_millis`` so they read the same whatever the
    session's or this machine's time zone.
    """
    df = spark.sql(call_sql("status", model=model, env=env, execution_time=format_ms(execution_ms)))
    df = df.selectExpr("model", "kind", "state", "unix_millis(`start`) AS start_ms", "unix_millis(`end`) AS end_ms",
                       "intervals", "`table`", "reason")
    return [
        {"model": r.model, "kind": r.kind, "state": r.state,
         "start": None if r.start_ms is None else format_ms(r.start_ms),
         "end": None if r.end_ms is None else format_ms(r.end_ms),
         "intervals": r.intervals, "table": r.table, "reason": r.reason}
        for r in df.collect()
    ]


def execution_ms(value: str | None) -> int:
    """The status moment: ``--execution-time`` (UTC), else now, to the second."""
    if value:
        return to_ms(value, "--execution-time")
    return to_ms(datetime.now(timezone.utc).replace(microsecond=0))


def precheck(args: Any) -> None:
    """Raise the ``IncrError`` that flags would cause, before the seconds a Spark start costs."""
    execution_ms(args.execution_time)
    if getattr(args, "png", None) is not None:
        from pyspark_incr.coverage_plot import require_matplotlib

        require_matplotlib()


def status_command(spark: Any, args: Any, console: Any = None) -> int:
    """Print the timeline of ``args.model`` (default: every model of ``args.env``); write ``--png``/``--json``."""
    from rich.console import Console

    # no highlighter: it would colour every number and date, and only gaps are to stand out
    console = console or Console(highlight=False)
    until = execution_ms(args.execution_time)
    show_status(console, status_rows(spark, args.model, args.env, until), until, args)
    return 0


def show_status(console: Any, rows: list[dict], until: int, args: Any) -> None:
    """Print ``rows`` (as :func:`status_rows` returns them) as the timeline, one line per model, every model;
    ``args`` says whether to add the table and where to save JSON and PNG."""
    from rich.text import Text

    if getattr(args, "table", False):
        console.print(rows_table(rows))
    covered = coverages(rows)
    if not covered:
        console.print(f"No models in environment {args.env or 'prod'}: apply a project or create a model first.",
                      highlight=False)
    else:
        for line in lines(covered, until, console.width):
            console.print(Text.assemble(*line), no_wrap=True, overflow="crop", crop=True)
    if getattr(args, "json", None):
        save_rows(Path(args.json), rows, until, console.width)
    if getattr(args, "png", None):
        from pyspark_incr.coverage_plot import write_png

        console.print(f"wrote {write_png(covered, until, args.png)}", highlight=False)


def rows_table(rows: list[dict]) -> Any:
    """The status rows as a rich table, as ``CALL incr.status`` returns them."""
    from rich.table import Table

    columns = ("model", "kind", "state", "start", "end", "intervals", "table")
    columns += ("reason",) if any(row.get("reason") for row in rows) else ()  # an empty column only squeezes others
    styles = {MISSING: GAP_STYLE, WAITING: WAITING_STYLE}
    table = Table(title="incr.status", title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")  # a narrow terminal wraps a long name, never cuts it
    for row in rows:
        table.add_row(*("" if row.get(c) is None else str(row[c]) for c in columns), style=styles.get(row["state"]))
    return table


def save_rows(path: Path, rows: list[dict], until_ms: int, width: int) -> None:
    """Keep what a timeline was drawn from, so it can be drawn again (the docs capture test does)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"execution_time": format_ms(until_ms), "width": width, "rows": rows}
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def redraw(path: Path) -> str:
    """The plain-text timeline of rows saved by :func:`save_rows`, at the width they were drawn with."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return render_text(coverages(doc["rows"]), to_ms(doc["execution_time"]), doc["width"])


def _main(argv: list[str]) -> int:
    """``python -m pyspark_incr.cli_status STATUS_JSON PNG``: draw saved rows as a PNG, without Spark."""
    if len(argv) != 2:
        print("usage: python -m pyspark_incr.cli_status STATUS_JSON PNG", file=sys.stderr)
        return 2
    from pyspark_incr.coverage_plot import write_png

    doc = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    write_png(coverages(doc["rows"]), to_ms(doc["execution_time"]), argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
