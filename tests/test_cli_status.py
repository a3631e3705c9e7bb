"""CLI feedback: the progress bar follows the executor, and `pyspark-incr status` draws coverage (terminal, PNG).

The docs capture (docs/img/status.txt, made in tmux by scripts/docs-captures.sh) is checked against what the
renderer draws today from the rows saved beside it, so the picture in docs/cli.md cannot go stale.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import struct
from pathlib import Path

import pytest
from conftest import call as _call

from pyspark_incr.coverage import coverages, render_text
from pyspark_incr.intervals.times import to_ms

DOCS = Path(__file__).resolve().parents[1] / "docs"
AT = "2024-01-10 06:00:00"


def _rows(*spans: tuple[str, str, str, int], model: str = "db.daily") -> list[dict]:
    return [{"model": model, "kind": "INCREMENTAL_BY_TIME_RANGE", "state": s, "start": a, "end": b, "intervals": n,
             "table": model} for s, a, b, n in spans]


FIXED = [
    *_rows(("covered", "2024-01-01", "2024-01-05", 4), ("missing", "2024-01-05", "2024-01-07", 2),
           ("covered", "2024-01-07", "2024-01-10", 3)),
    *_rows(("covered", "2024-01-03", "2024-01-04", 1), ("missing", "2024-01-04", "2024-01-10", 6), model="db.full"),
    {"model": "db.v", "kind": "VIEW", "state": "view", "start": None, "end": None, "intervals": 0, "table": "db.v"},
]


# --- the docs capture -------------------------------------------------------------------------------------------


def test_committed_status_capture_is_what_the_renderer_draws_from_its_rows():
    from pyspark_incr.cli_status import redraw

    captured = (DOCS / "img" / "status.txt").read_text(encoding="utf-8")

    assert [line.rstrip() for line in captured.rstrip("\n").splitlines()] == redraw(DOCS / "img" / "status.json").splitlines(), (
        "docs/img/status.txt is stale: bash scripts/docs-captures.sh")


def test_committed_capture_shows_a_gap_and_was_taken_at_full_width():
    doc = json.loads((DOCS / "img" / "status.json").read_text(encoding="utf-8"))
    text = (DOCS / "img" / "status.txt").read_text(encoding="utf-8")

    assert doc["width"] == 120, "the capture is taken in a 120-column tmux pane"
    assert "░" in text and "█" in text and "gap" in text


def test_cli_page_shows_the_committed_capture_in_a_code_block():
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    capture = (DOCS / "img" / "status.txt").read_text(encoding="utf-8").rstrip("\n")
    blocks = re.findall(r"```text\n(.*?)\n```", page, re.S)

    assert capture in blocks, "docs/cli.md must show docs/img/status.txt as is: paste it into the text block"
    assert "![coverage](img/coverage.png)" in page


def test_committed_coverage_png_is_a_png():
    width, height = _png_size((DOCS / "img" / "coverage.png").read_bytes())

    assert 600 <= width <= 2000 and 100 <= height <= 1200


# --- drawing ----------------------------------------------------------------------------------------------------


def test_timeline_marks_each_gap_and_counts_intervals_per_model():
    text = render_text(coverages(FIXED), to_ms(AT), 100)
    daily, full, view = (line for line in text.splitlines() if line.startswith("db."))

    assert re.search(r"2024-01-01 █+░+█+·* 2024-01-10 06:00 +7/9 built, 1 gap$", daily)
    assert re.search(r"2024-01-03 █+░+·* 2024-01-10 06:00 +1/7 built, 1 gap$", full)
    assert view.split() == ["db.v", "view:", "no", "intervals"]


def test_timeline_never_grows_wider_than_the_terminal():
    for width in (40, 60, 80, 120, 200):
        lines = render_text(coverages(FIXED), to_ms(AT), width).splitlines()

        assert max(len(line) for line in lines) <= width


def test_one_day_gap_in_a_long_history_still_shows():
    rows = _rows(("covered", "2020-01-01", "2023-06-01", 1247), ("missing", "2023-06-01", "2023-06-02", 1),
                 ("covered", "2023-06-02", "2024-01-01", 213))

    [line] = [line for line in render_text(coverages(rows), to_ms("2024-01-01"), 100).splitlines()
              if line.startswith("db.")]

    assert line.count("░") >= 1


def test_png_from_fixed_rows_is_a_valid_png_of_plausible_size(tmp_path):
    from pyspark_incr.coverage_plot import write_png

    path = write_png(coverages(FIXED), to_ms(AT), tmp_path / "sub" / "coverage.png")
    width, height = _png_size(path.read_bytes())

    assert path == tmp_path / "sub" / "coverage.png"
    assert (width, height) == (1000, 230)
    assert path.stat().st_size > 10_000, "a picture with bars, labels and a date axis, not an empty canvas"


def test_png_without_matplotlib_names_the_extra_to_install(monkeypatch, tmp_path):
    import sys

    from pyspark_incr.coverage_plot import PlotUnavailable, write_png
    from pyspark_incr.errors import IncrError

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what an absent package looks like to import

    with pytest.raises(PlotUnavailable, match=re.escape("pip install 'pyspark-incr[plot]'")) as raised:
        write_png(coverages(FIXED), to_ms(AT), tmp_path / "c.png")
    assert isinstance(raised.value, IncrError)
    assert not (tmp_path / "c.png").exists()


def test_status_png_flag_without_matplotlib_fails_before_starting_spark(monkeypatch, tmp_path, capsys):
    import sys

    from pyspark_incr import cli

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setattr(cli, "_session", lambda args: pytest.fail("Spark started although --png cannot work"))

    code = cli.main(["--home", str(tmp_path), "status", "--png", str(tmp_path / "c.png")])

    assert code == 2
    assert "pip install 'pyspark-incr[plot]'" in capsys.readouterr().err


def test_status_with_a_malformed_execution_time_fails_before_starting_spark(monkeypatch, tmp_path, capsys):
    from pyspark_incr import cli

    monkeypatch.setattr(cli, "_session", lambda args: pytest.fail("Spark started for a time it cannot read"))

    code = cli.main(["--home", str(tmp_path), "status", "--execution-time", "next tuesday"])

    assert code == 2
    assert "--execution-time: 'next tuesday' is not a date or timestamp" in capsys.readouterr().err


def test_status_subcommand_takes_the_picture_flags():
    from pyspark_incr import cli

    args = cli._parser().parse_args(["status", "--model", "db.x", "--png", "c.png", "--json", "r.json", "--table"])

    assert args.handler is cli._status
    assert (args.model, args.png, args.json, args.table) == ("db.x", Path("c.png"), Path("r.json"), True)
    assert cli._parser().parse_args(["run"]).handler is cli._procedure


# --- every model, colour only on gaps ---------------------------------------------------------------------------


def _many(n: int = 64) -> list[dict]:
    """``n`` models: every third has a gap, every tenth is a view, the rest are complete."""
    rows: list[dict] = []
    for i in range(n):
        name = f"db.model_{i:02d}"
        if i % 10 == 9:
            rows.append({"model": name, "kind": "VIEW", "state": "view", "start": None, "end": None, "intervals": 0,
                         "table": name})
        elif i % 3 == 0:
            rows += _rows(("covered", "2024-01-01", "2024-01-05", 4), ("missing", "2024-01-05", "2024-01-07", 2),
                          ("covered", "2024-01-07", "2024-01-10", 3), model=name)
        else:
            rows += _rows(("covered", "2024-01-01", "2024-01-10", 9), model=name)
    return rows


_SGR = re.compile(r"\x1b\[([0-9;]*)m")


def _coloured(text: str) -> list[str]:
    """The pieces of ``text`` an ANSI colour (foreground or background) applies to; bold and dim are not colours."""
    pieces, colour = [], False
    for k, part in enumerate(_SGR.split(text)):
        if k % 2:  # an SGR's parameters: a reset clears, a colour code sets
            codes = [int(c) for c in part.split(";") if c] or [0]
            colour = (colour and 0 not in codes) or any(30 <= c <= 49 or 90 <= c <= 107 for c in codes)
        elif colour and part.strip():
            pieces.append(part)
    return pieces


def _status_via_cli(monkeypatch, capsys, tmp_path, rows: list[dict], *flags: str) -> str:
    """``pyspark-incr status`` printing ``rows``, as a user runs it, without starting Spark; its stdout."""
    from pyspark_incr import cli, cli_status

    monkeypatch.setattr(cli, "_session", lambda args: object())
    monkeypatch.setattr(cli_status, "status_rows", lambda spark, model, env, until: rows)
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("TERM", "xterm-256color")

    assert cli.main(["--home", str(tmp_path), "status", "--execution-time", AT, *flags]) == 0
    return capsys.readouterr().out


def test_status_prints_every_model_of_a_long_list(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    rows = _many(64)

    out = _status_via_cli(monkeypatch, capsys, tmp_path, rows)
    shown = [line.split()[0] for line in out.splitlines() if line.startswith("db.model_")]

    assert shown == [f"db.model_{i:02d}" for i in range(64)]
    assert sum("1 gap" in line for line in out.splitlines()) == sum(1 for r in rows if r["state"] == "missing")


def test_status_table_keeps_every_model_name_whole_in_a_narrow_terminal():
    from rich.console import Console

    from pyspark_incr.cli_status import rows_table

    rows = _many(64)
    rows = [{**r, "model": r["model"] + "_with_a_rather_long_name", "table": "physical." + r["model"]} for r in rows]
    console = Console(file=io.StringIO(), width=80, force_terminal=False, color_system=None)

    console.print(rows_table(rows))
    folded = "".join(line.split("│")[1].strip() for line in console.file.getvalue().splitlines() if "│" in line)

    assert "…" not in console.file.getvalue()
    for i in range(64):
        assert f"db.model_{i:02d}_with_a_rather_long_name" in folded


def test_status_not_on_a_terminal_has_no_escape_codes(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("FORCE_COLOR", raising=False)

    out = _status_via_cli(monkeypatch, capsys, tmp_path, _many(12), "--table")

    assert "\x1b[" not in out and "░" in out


def test_forced_colour_falls_only_on_gaps(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)

    out = _status_via_cli(monkeypatch, capsys, tmp_path, _many(12))
    coloured = _coloured(out)

    assert coloured, "FORCE_COLOR draws the gaps in colour"
    assert all(re.fullmatch(r"░+|\d+ gaps?", piece) for piece in coloured), coloured
    gapped = sum(1 for r in _many(12) if r["state"] == "missing")
    assert sum(piece == "1 gap" for piece in coloured) == gapped, "each gapped model's count, and no complete one's"


def test_no_color_turns_colour_off_even_on_a_terminal(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("NO_COLOR", "1")

    out = _status_via_cli(monkeypatch, capsys, tmp_path, _many(12), "--table")

    assert _coloured(out) == [] and "░" in out


def test_status_table_colours_only_the_rows_of_gaps():
    from rich.console import Console

    from pyspark_incr.cli_status import rows_table

    console = Console(file=io.StringIO(), width=160, force_terminal=True, color_system="standard")

    console.print(rows_table(FIXED))
    lines = console.file.getvalue().splitlines()

    assert [_SGR.sub("", line).split("│")[3].strip() for line in lines if _coloured(line)] == ["missing", "missing"]


# --- through Spark ----------------------------------------------------------------------------------------------


def _daily_counts(spark, prefix: str, days: int, rows: int, kind_extra: str = "") -> str:
    """A daily model counting ``rows`` raw events spread over ``days`` days from 2024-01-01; its name."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.sql(f"DROP TABLE IF EXISTS {prefix}_raw.events")
    spark.sql(f"CREATE TABLE {prefix}_raw.events USING parquet AS "
              f"SELECT id, DATE_ADD(DATE'2024-01-01', CAST(id % {days} AS INT)) AS ds FROM range({rows})")
    name = f"{prefix}.daily"
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds{kind_extra}), start '2024-01-01'); "
        f"SELECT ds, COUNT(*) AS n FROM {prefix}_raw.events WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds"))
    return name


@pytest.fixture(scope="module")
def gapped(spark, module_isolated):
    """A daily model built for 2024-01-01..04 and 2024-01-07..08, seen on 2024-01-10 06:00."""
    name = _daily_counts(spark, module_isolated, days=9, rows=90)
    _call(spark, "apply", execution_time="2024-01-05 00:00:00")
    _call(spark, "run", start="2024-01-07", end="2024-01-08", execution_time=AT)
    return name


def test_status_rows_are_the_procedure_rows_with_utc_times(spark, gapped):
    from pyspark_incr.cli_status import status_rows

    rows = status_rows(spark, gapped, None, to_ms(AT))

    assert [(r["state"], r["start"], r["end"], r["intervals"]) for r in rows] == [
        ("covered", "2024-01-01", "2024-01-05", 4), ("missing", "2024-01-05", "2024-01-07", 2),
        ("covered", "2024-01-07", "2024-01-09", 2), ("missing", "2024-01-09", "2024-01-10", 1)]


def test_status_command_prints_the_timeline_and_saves_rows_that_redraw_it(spark, gapped, tmp_path):
    from rich.console import Console

    from pyspark_incr.cli_status import redraw, status_command

    console = Console(file=io.StringIO(), width=100, force_terminal=False, color_system=None)
    args = argparse.Namespace(model=gapped, env=None, execution_time=AT, table=False, json=tmp_path / "rows.json",
                              png=tmp_path / "coverage.png")

    code = status_command(spark, args, console=console)
    printed = console.file.getvalue().splitlines()

    assert code == 0
    assert [line.rstrip() for line in printed[:-1]] == redraw(tmp_path / "rows.json").splitlines()
    assert re.search(rf"^{re.escape(gapped)}  2024-01-01 █+░+█+░+·* 2024-01-10 06:00  6/9 built, 2 gaps", printed[2])
    assert printed[-1] == f"wrote {tmp_path / 'coverage.png'}"
    assert _png_size((tmp_path / "coverage.png").read_bytes())[0] == 1000


def test_status_table_flag_also_prints_the_procedure_rows(spark, gapped):
    from rich.console import Console

    from pyspark_incr.cli_status import status_command

    console = Console(file=io.StringIO(), width=160, force_terminal=False, color_system=None)
    args = argparse.Namespace(model=gapped, env=None, execution_time=AT, table=True, json=None, png=None)

    status_command(spark, args, console=console)
    out = console.file.getvalue()

    assert out.index("incr.status") < out.index("Interval coverage at 2024-01-10 06:00 UTC")
    assert re.search(r"│ missing\s+│ 2024-01-05\s+│ 2024-01-07\s+│ 2\s+│", out)


# --- the progress bar -------------------------------------------------------------------------------------------


def test_progress_bar_shows_the_running_batch_advances_with_every_finished_step_and_reports_failures():
    from rich.console import Console

    from pyspark_incr.cli_progress import progress_bar
    from pyspark_incr.intervals.ranges import Interval
    from pyspark_incr.run import progress
    from pyspark_incr.run.executor import BatchResult

    def step(done: int, day: int, status: str = "ok", message: str = "") -> progress.Event:
        interval = Interval(to_ms(f"2024-01-0{day}"), to_ms(f"2024-01-0{day + 1}"))
        return progress.Event(done, 4, BatchResult("db.daily", "INCREMENTAL_BY_TIME_RANGE", "build", interval, 1,
                                                   status, 0.5, message, 7))

    console = Console(file=io.StringIO(), width=160, force_terminal=False)
    with progress_bar(console=console) as feed:
        [task] = feed.progress.tasks
        before = (task.description, task.total, task.completed)
        progress.publish(progress.Started(0, 4))
        progress.publish(progress.Started(0, 4, "db.daily", Interval(to_ms("2024-01-01"), to_ms("2024-01-02"))))
        running = (task.description, task.total, task.fields["last"])
        progress.publish(step(1, 1))
        progress.publish(step(2, 2, "failed", "Table not found"))
        progress.publish(step(3, 3))
    progress.publish(step(4, 4))  # after the call: the bar no longer listens

    assert before == ("planning", None, 0)
    assert running == ("building", 4, "now: db.daily [2024-01-01, 2024-01-02)")
    assert (task.total, task.completed, task.fields["failed"]) == (4, 3, "1 failed")
    assert task.fields["last"] == "last: db.daily [2024-01-03, 2024-01-04) ok"
    assert "failed db.daily [2024-01-02, 2024-01-03): Table not found" in console.file.getvalue()
    shown = io.StringIO()
    Console(file=shown, width=200, force_terminal=False).print(feed.progress.make_tasks_table([task]))
    assert re.search(r"building .* 3/4 steps 1 failed \d:\d\d:\d\d eta \S+ last: db.daily", shown.getvalue())


def test_progress_bar_counts_every_batch_of_a_real_apply(spark, isolated):
    from rich.console import Console

    from pyspark_incr.cli_progress import progress_bar

    name = _daily_counts(spark, isolated, days=4, rows=20, kind_extra=", batch_size 1")

    with progress_bar(console=Console(file=io.StringIO(), force_terminal=False)) as feed:
        rows = _call(spark, "apply", execution_time="2024-01-05 00:00:00")
    [task] = feed.progress.tasks

    assert len(rows) == 4
    assert (task.completed, task.total, task.fields["failed"]) == (4, 4, "")
    assert task.fields["last"].startswith(f"last: {name} [2024-01-0")


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    assert data[12:16] == b"IHDR"
    assert data[-8:-4] == b"IEND", "a truncated PNG"
    return struct.unpack(">II", data[16:24])
