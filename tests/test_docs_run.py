"""Docs that run: the quickstart's shell and Python blocks, pasted in page order into fresh processes.

Each ```bash block runs with ``bash -euo pipefail -c``, each ```python block with
this venv's python, from the repository root as the page tells a reader, with
``$PYSPARK_INCR_HOME`` on a temporary directory so the checkout's ``./.incr``
stays untouched. The ```sql blocks run in ``tests/test_docs_site.py``, in the
test session, which checks their result tables. A block that is not meant to run
carries ``<!-- not run: why -->`` right before it; any other block in a language
with no runner is refused, unless it is data (``services.docblocks.DATA``).

Every other page's unmarked shell and Python blocks are run the same way by
``bench/docs_run.py`` (a JVM per command: too slow for CI); here every page is
held to the same rule, and its blocks are checked cheaply: Python compiles, SQL
parses (Spark dialect; model and audit definitions with the model parser), shell
passes ``bash -n``. The extractor lives in ``tests/services/docblocks.py``.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlglot

from pyspark_incr.sqltext import split_statements
from services.docblocks import (
    DATA, PAGES, QUICKSTART, REPO, RUNNERS, CodeBlock, code_blocks, fresh_env, marker_problems, page_blocks, to_run)


# --- what the quickstart's blocks print --------------------------------------------------------


def rich_rows(out: str) -> list[tuple[str, ...]]:
    """Body rows of the tables the CLI prints (rich: cells between ``│``)."""
    return [tuple(c.strip() for c in line.strip().strip("│").split("│")) for line in out.splitlines()
            if line.lstrip().startswith("│")]


def show_rows(out: str) -> list[tuple[str, ...]]:
    """Rows of ``DataFrame.show()`` tables, the header included."""
    return [tuple(c.strip() for c in line.strip().strip("|").split("|")) for line in out.splitlines()
            if line.startswith("|")]


def tsv_rows(out: str) -> list[tuple[str, ...]]:
    """Rows spark-sql prints (tab-separated), headers included."""
    return [tuple(line.split("\t")) for line in out.splitlines() if "\t" in line]


def build_row(rows: list[tuple[str, ...]], model: str, start: str, end: str) -> tuple[str, ...] | None:
    """model, kind, action, start, end, intervals, rows and status of the build of ``model`` over [start, end)."""
    return next((r[:8] for r in rows if r[0] == model and r[2:5] == ("build", start, end)), None)


DAILY = ("quickstart.daily_revenue", "INCREMENTAL_BY_TIME_RANGE")


def demo_prints_the_backfill_the_next_day_and_the_result(out: str) -> None:
    rows = rich_rows(out)
    assert build_row(rows, DAILY[0], "2024-01-01 00:00:00", "2024-01-08 00:00:00") == (
        *DAILY, "build", "2024-01-01 00:00:00", "2024-01-08 00:00:00", "7", "49", "ok"), "apply builds 7 days"
    assert build_row(rows, DAILY[0], "2024-01-08 00:00:00", "2024-01-09 00:00:00") == (
        *DAILY, "build", "2024-01-08 00:00:00", "2024-01-09 00:00:00", "1", "7", "ok"), "the next day's run builds 1"
    assert ("4", "2627.30") in rows, "the demo ends with the top customers of the page"


def run_builds_one_more_day_and_status_shows_no_gap(out: str) -> None:
    rows = rich_rows(out)
    assert build_row(rows, DAILY[0], "2024-01-09 00:00:00", "2024-01-10 00:00:00") == (
        *DAILY, "build", "2024-01-09 00:00:00", "2024-01-10 00:00:00", "1", "7", "ok"), "the run builds the new day"
    assert build_row(rows, "quickstart.customer_totals", "2024-01-07 00:00:00", "2024-01-10 00:00:00") is not None, (
        "the run rebuilds the FULL model")
    assert re.search(r"quickstart\.daily_revenue .*\n\s+9/9 built, no gaps", out), "status shows 9 days, no gap"


def spark_sql_finds_the_demos_work_done(out: str) -> None:
    rows = tsv_rows(out)
    models = ("quickstart.daily_revenue", "quickstart.customer_totals", "quickstart.top_customers")
    assert [(r[0], r[2]) for r in rows if r[0] in models and r[2] not in ("covered", "view")] == [
        (m, "unchanged") for m in models
    ], "on the demo's home the plan finds every model unchanged and apply and run build nothing"
    assert (*DAILY, "covered", "2024-01-01 00:00:00", "2024-01-10 00:00:00", "9") in [r[:6] for r in rows], (
        "status sees the 9 days that section 1 built")


def pyspark_builds_seven_days_of_its_own_model(out: str) -> None:
    rows = show_rows(out)
    header, *applied = [r for r in rows if len(r) == 10]  # incr.apply's ten columns
    assert header[:3] == ("model", "kind", "action")
    assert [r[:1] + r[2:8] for r in applied] == [
        ("sales.daily", "build", "2024-01-01 00:00:00", "2024-01-08 00:00:00", "7", "7", "ok")
    ], "apply without project builds the registered model's 7 complete days and leaves the quickstart's alone"
    days = [r for r in rows if len(r) == 2 and re.fullmatch(r"\d{4}-\d\d-\d\d", r[0])]
    assert days == [(f"2024-01-0{d + 1}", f"{450 + 10 * d}.00") for d in range(7)], "the query shows the 7 days"


#: What each runnable quickstart block must print, keyed by a command line only that block holds.
QUICKSTART_FACTS: dict[str, Callable[[str], None]] = {
    "./scripts/demo.sh": demo_prints_the_backfill_the_next_day_and_the_result,
    "./scripts/demo.sh run --execution-time '2024-01-10 06:00:00'": run_builds_one_more_day_and_status_shows_no_gap,
    ".venv/bin/pyspark-incr spark-sql -f sql/quickstart.sql": spark_sql_finds_the_demos_work_done,
    "from pyspark_incr.bridge.session import embedded_session": pyspark_builds_seven_days_of_its_own_model,
}


def _commands(block: CodeBlock) -> set[str]:
    return {line.split(" #")[0].strip() for line in block.source.splitlines()} - {""}


def facts_of(block: CodeBlock) -> Callable[[str], None]:
    """The one fact check whose key is a command line of ``block``."""
    checks = [check for key, check in QUICKSTART_FACTS.items() if key in _commands(block)]
    assert len(checks) == 1, f"{block.where}: add what this block must print to QUICKSTART_FACTS (found {len(checks)})"
    return checks[0]


QUICKSTART_BLOCKS = page_blocks(QUICKSTART)
QUICKSTART_RUNNABLE, QUICKSTART_REFUSED = to_run(QUICKSTART_BLOCKS, run_elsewhere=frozenset({"sql"}))


def test_every_block_of_the_quickstart_runs_or_says_why_not():
    assert [b.where for b in QUICKSTART_REFUSED] == [], (
        "these blocks have no runner: make them ```bash/```python/```sql or mark them <!-- not run: why -->"
    )
    assert [b.lang for b in QUICKSTART_RUNNABLE] == ["bash", "bash", "bash", "python"]
    checks = [facts_of(b) for b in QUICKSTART_RUNNABLE]
    assert len(set(checks)) == len(QUICKSTART_FACTS), "every entry of QUICKSTART_FACTS names a block of the page"


@dataclass(frozen=True)
class Ran:
    """One block's process: None when an earlier block failed, so this one was not run."""

    proc: subprocess.CompletedProcess | None
    seconds: float


@pytest.fixture(scope="module")
def quickstart_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("quickstart_home")


#: What a session with the wrong home leaves in its working directory.
STRAYS = ("spark-warehouse", "metastore_db", "derby.log")


@dataclass(frozen=True)
class PageRun:
    """The page's blocks by ``where``, and what they left in the checkout that was not there before."""

    runs: dict[str, Ran]
    strays: set[str]


@pytest.fixture(scope="module")
def quickstart_runs(quickstart_home) -> PageRun:
    """Every runnable quickstart block, in page order, each in a fresh process; stops at the first failure."""
    strays_before = {name for name in STRAYS if (REPO / name).exists()}
    runs: dict[str, Ran] = {}
    failed = False
    for block in QUICKSTART_RUNNABLE:
        if failed:
            runs[block.where] = Ran(None, 0.0)
            continue
        started = time.monotonic()
        proc = subprocess.run(RUNNERS[block.lang](block.source), cwd=REPO, env=fresh_env(quickstart_home),
                              capture_output=True, text=True, timeout=900)
        runs[block.where] = Ran(proc, time.monotonic() - started)
        failed = proc.returncode != 0
    return PageRun(runs, {name for name in STRAYS if (REPO / name).exists()} - strays_before)


@pytest.mark.slow
@pytest.mark.parametrize("block", QUICKSTART_RUNNABLE, ids=[b.where for b in QUICKSTART_RUNNABLE])
def test_the_quickstart_block_runs_in_a_fresh_process_and_prints_what_the_page_says(block, quickstart_runs):
    ran = quickstart_runs.runs[block.where]
    assert ran.proc is not None, f"{block.where} was not run: an earlier block of the page failed"
    assert ran.proc.returncode == 0, (f"{block.where} failed after {ran.seconds:.0f} s:\n"
                                      f"{ran.proc.stdout[-2000:]}\n{ran.proc.stderr[-4000:]}")
    facts_of(block)(ran.proc.stdout)


@pytest.mark.slow
def test_the_quickstart_blocks_write_into_pyspark_incr_home(quickstart_runs, quickstart_home):
    assert all(r.proc is not None and r.proc.returncode == 0 for r in quickstart_runs.runs.values())
    warehouse = quickstart_home / "warehouse"

    # quickstart_raw is written by the CLI (demo, spark-sql), raw by the Python block
    assert (warehouse / "quickstart_raw.db").is_dir() and (warehouse / "raw.db").is_dir()
    assert quickstart_runs.strays == set(), "a block wrote a catalog or warehouse into the checkout"


# --- the extractor itself ----------------------------------------------------------------------


def test_a_marked_block_is_not_run_and_an_unmarked_one_without_a_runner_is_refused():
    page = "\n".join([
        "<!-- not run: needs your own project -->", "", "```bash", "pyspark-incr apply --project /yours", "```",
        "```sh", "pyspark-incr demo", "```",
        "- a list:", "", "  ```python", "  print(1)", "  ```",
        "```sql", "SELECT 1", "```",
        "```text", "output", "```",
        "```", "a bare fence", "```",
    ])
    blocks = code_blocks(page, "p.md")
    runnable, refused = to_run(blocks, run_elsewhere=frozenset({"sql"}))

    assert [(b.lang, b.not_run) for b in blocks] == [
        ("bash", "needs your own project"), ("sh", None), ("python", None), ("sql", None), ("text", None), ("", None)]
    assert [(b.where, b.source) for b in runnable] == [("p.md:11", "print(1)")]
    assert [b.where for b in refused] == ["p.md:6", "p.md:20"], "sh and a bare fence are refused, text is data"


def test_a_marker_without_a_reason_misspelt_or_away_from_its_block_is_a_problem():
    page = "\n".join([
        "<!-- not run: -->", "```bash", "ls", "```",
        "<!-- not-run: typo -->", "```bash", "ls", "```",
        "<!-- not run: a paragraph follows -->", "", "Some prose.", "```bash", "ls", "```",
        "<!-- not run: fine -->", "", "```bash", "ls", "```",
    ])

    assert marker_problems(page, "p.md") == [
        "p.md:1: write the marker alone on its line as <!-- not run: <reason> -->",
        "p.md:5: write the marker alone on its line as <!-- not run: <reason> -->",
        "p.md:9: a not-run marker must stand right before the block it is about",
    ]
    assert [b.not_run for b in code_blocks(page, "p.md")] == [None, None, None, "fine"]


def test_an_unclosed_block_is_reported_with_its_line():
    with pytest.raises(AssertionError, match=r"p\.md:2: the block opened here is never closed"):
        code_blocks("text\n```bash\nls\n", "p.md")


# --- every page, cheaply -----------------------------------------------------------------------

def _bench():
    spec = importlib.util.spec_from_file_location("bench_docs_run", REPO / "bench" / "docs_run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_docs_run"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_block_of_every_page_runs_is_data_or_says_why_not(page):
    markdown = page.read_text(encoding="utf-8")
    _, refused = to_run(page_blocks(page), run_elsewhere=frozenset({"sql"}))

    assert marker_problems(markdown, str(page.relative_to(REPO))) == []
    assert [f"{b.where} ```{b.lang}" for b in refused] == [], (
        "make these ```bash/```python (run), ```sql (parsed), data (" + ", ".join(sorted(DATA)) + ")"
        " or mark them <!-- not run: why -->")


def test_the_bench_runs_every_unmarked_shell_and_python_block_of_every_page_but_the_quickstart():
    planned = _bench().planned(PAGES)
    runnable = {page: to_run(page_blocks(page))[0] for page in PAGES if page != QUICKSTART}

    assert [(page, [b.where for b in blocks]) for page, blocks in planned] == [
        (page, [b.where for b in blocks]) for page, blocks in runnable.items() if blocks]


def test_the_bench_fails_a_block_on_its_exit_status_or_timeout_and_skips_the_rest_of_its_page(capsys):
    bench = _bench()
    blocks = code_blocks("\n".join([
        "```bash", "echo about to fail; exit 3", "```",
        "```python", "print('never run')", "```",
    ]), "p.md")
    slow = code_blocks("```bash\nsleep 30 & wait\n```", "q.md")

    outcomes = bench.run_page(REPO / "p.md", blocks, timeout=60)
    timed_out = bench.run_page(REPO / "q.md", slow, timeout=1)

    assert [(o.where, o.passed) for o in outcomes] == [("p.md:1", False), ("p.md:4", False)]
    assert outcomes[0].note.startswith("exit status 3\n") and "about to fail" in outcomes[0].note
    assert outcomes[1].note == "skipped: an earlier block of the page failed"
    assert not timed_out[0].passed and timed_out[0].note.startswith("timed out after 1 s")
    assert timed_out[0].seconds < 20, "the block's children are killed with it"
    assert "p.md:1" in capsys.readouterr().out


def test_a_reason_that_names_a_file_of_the_repository_names_one_that_exists():
    named = [(b.where, path) for page in PAGES for b in page_blocks(page) if b.not_run
             for path in re.findall(r"\b(?:tests|bench|scripts|examples|sql|docs)/[\w./-]+\w", b.not_run)]

    assert [(where, path) for where, path in named if not (REPO / path).exists()] == []


def _blocks_of(lang: str) -> list[CodeBlock]:
    # a sketch that is not real SQL (or Python) is fenced as ```text on its page
    return [b for page in PAGES for b in page_blocks(page) if b.lang == lang]


@pytest.mark.parametrize("block", _blocks_of("python"), ids=lambda b: b.where)
def test_every_python_block_of_the_docs_compiles(block):
    compile(block.source, block.where, "exec")


@pytest.mark.parametrize("block", _blocks_of("bash"), ids=lambda b: b.where)
def test_every_shell_block_of_the_docs_is_valid_bash(block):
    proc = subprocess.run(["bash", "-n", "-c", block.source], capture_output=True, text=True, timeout=30)

    assert proc.returncode == 0, f"{block.where}: {proc.stderr}"


def _code(statement: str) -> str:
    return "\n".join(line for line in statement.splitlines() if not line.strip().startswith("--")).strip()


@pytest.mark.parametrize("block", _blocks_of("sql"), ids=lambda b: b.where)
def test_every_sql_block_of_the_docs_parses(block):
    from pyspark_incr.model.audit_defs import parse_audits
    from pyspark_incr.model.block import parse_block
    from pyspark_incr.model.definition import parse_models

    head = _code(block.source).upper()
    if head.startswith("MODEL"):
        # a MODEL block alone is a fragment showing properties; with its query it is a whole model (or, with
        # blueprints, several)
        if parse_block(block.source, block.where).query_text:
            assert parse_models(block.source, block.where)
    elif head.startswith("AUDIT"):
        parse_audits(block.source, block.where)
    else:
        for statement in filter(_code, split_statements(block.source)):
            sqlglot.parse_one(statement, read="spark")


@pytest.mark.slow
def test_the_cli_pages_project_skeleton_block_runs_as_pasted_in_a_fresh_shell(tmp_path):
    """One block of another page in every CI run (all of them: ``bench/docs_run.py``, figure in docs/index.md)."""
    [block] = [b for b in to_run(page_blocks(REPO / "docs" / "cli.md"))[0] if "pyspark-incr init my_project" in b.source]
    done = subprocess.run(RUNNERS[block.lang](block.source), cwd=tmp_path, env=fresh_env(tmp_path / "home", REPO / ".venv"),
                          capture_output=True, text=True, timeout=900)

    assert done.returncode == 0, f"{block.where}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert f"{tmp_path / 'my_project'}: valid:" in done.stdout or "my_project: valid:" in done.stdout, done.stdout
    # model, kind, action, start, end, intervals, rows, status, ...
    built = {row[0]: row for row in rich_rows(done.stdout) if row[0].startswith("incr_example.")}
    assert {name: row[7] for name, row in built.items()} == {
        "incr_example.seed_orders": "ok", "incr_example.daily_revenue": "ok", "incr_example.customer_totals": "ok"}
    assert built["incr_example.daily_revenue"][2:6] == ("build", "2024-01-01 00:00:00", "2024-01-08 00:00:00", "7")
