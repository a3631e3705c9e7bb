"""Docs that run, every page: each page's shell and Python blocks pasted in page order into fresh processes.

    .venv/bin/python bench/docs_run.py [--page docs/cli.md ...] [--timeout 1800]

Every unmarked ```bash and ```python block of docs/*.md and README.md except the quickstart
(tests/test_docs_run.py runs that one in CI), as a reader pastes them: from the repository root,
in a shell with ``.venv`` activated, ``$PYSPARK_INCR_HOME`` on a temporary directory of the
page's own (so the checkout's ``./.incr`` is untouched and one page's blocks share a home).
Blocks marked ``<!-- not run: why -->`` are left out. A block that fails stops its page: the
rest of it is reported as skipped. A block that leaves something new at the top of the checkout,
other than what its page says it writes there (``LEAVES``, removed after the page), fails.

Prints one line per block (page:line, seconds, ok or FAILED and the tail of its output), then
"N/M blocks of P pages passed"; exit status 1 if any block did not pass.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from services.docblocks import (  # noqa: E402
    PAGES, QUICKSTART, REPO, RUNNERS, CodeBlock, fresh_env, page_blocks, to_run)

VENV = REPO / ".venv"

#: What a page's blocks write into the directory they run from, as the page says (top-level names).
LEAVES: dict[str, tuple[str, ...]] = {
    "docs/cli.md": ("my_project",),  # pyspark-incr init my_project
}

TAIL_LINES = 25


def planned(pages: list[Path]) -> list[tuple[Path, list[CodeBlock]]]:
    """The pages to run, in order, each with its runnable blocks; the quickstart and pages with none left out."""
    plan = [(page, to_run(page_blocks(page))[0]) for page in pages if page != QUICKSTART]
    return [(page, blocks) for page, blocks in plan if blocks]


@dataclass(frozen=True)
class Outcome:
    """One block's result: passed, seconds, and what to show when it did not pass."""

    where: str
    passed: bool
    seconds: float
    note: str = ""


def _tail(text: str) -> str:
    return "\n".join("    | " + line for line in text.rstrip().splitlines()[-TAIL_LINES:])


def _run(argv: list[str], home: Path, timeout: float) -> tuple[int | None, str]:
    """Exit status (None on a timeout) and output of one process, its children killed with it on a timeout."""
    # a session of its own: a timed-out block's JVM would otherwise outlive it and hold the output pipe open
    proc = subprocess.Popen(argv, cwd=REPO, env=fresh_env(home, VENV), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
        return proc.returncode, output
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        return None, output


def run_block(block: CodeBlock, home: Path, allowed: set[str], timeout: float) -> Outcome:
    """Run one block in a fresh process; it fails on a non-zero exit, a timeout, or a stray in the checkout."""
    before = {p.name for p in REPO.iterdir()}
    started = time.monotonic()
    status, output = _run(RUNNERS[block.lang](block.source), home, timeout)
    seconds = time.monotonic() - started
    if status is None:
        return Outcome(block.where, False, seconds, f"timed out after {timeout:.0f} s\n{_tail(output)}")
    if status != 0:
        return Outcome(block.where, False, seconds, f"exit status {status}\n{_tail(output)}")
    strays = sorted({p.name for p in REPO.iterdir()} - before - allowed)
    if strays:
        return Outcome(block.where, False, seconds,
                       f"left {', '.join(strays)} in the checkout (add them to LEAVES if the page says so)")
    return Outcome(block.where, True, seconds)


def _remove(names: set[str]) -> None:
    for name in names:
        path = REPO / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


def run_page(page: Path, blocks: list[CodeBlock], timeout: float) -> list[Outcome]:
    """The page's blocks in order on a home of its own; after a failure the rest are skipped."""
    name = str(page.relative_to(REPO))
    leaves = set(LEAVES.get(name, ()))
    already_there = {leaf for leaf in leaves if (REPO / leaf).exists()}
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="docs_run_") as home:
        try:
            for block in blocks:
                if outcomes and not outcomes[-1].passed:
                    outcome = Outcome(block.where, False, 0.0, "skipped: an earlier block of the page failed")
                else:
                    outcome = run_block(block, Path(home), leaves, timeout)
                report(outcome)
                outcomes.append(outcome)
        finally:
            _remove(leaves - already_there)
    return outcomes


def report(outcome: Outcome) -> None:
    """One line per block, and the tail of its output when it did not pass."""
    verdict = "ok" if outcome.passed else "FAILED"
    print(f"{outcome.where:<28} {outcome.seconds:7.1f} s  {verdict}", flush=True)
    if outcome.note:
        print(outcome.note, flush=True)


def _pages(names: list[str] | None) -> list[Path]:
    if not names:
        return PAGES
    pages = [(REPO / name).resolve() for name in names]
    unknown = [name for name, page in zip(names, pages) if page not in PAGES]
    if unknown:
        raise SystemExit(f"not a page of the docs: {', '.join(unknown)} (pages: docs/*.md, README.md)")
    return pages


def main(argv: list[str] | None = None) -> int:
    """Run the planned blocks page by page; 0 when every block passed, else 1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", action="append", help="run only this page (repeatable), e.g. docs/cli.md")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds a block may take (default 1800)")
    args = parser.parse_args(argv)

    plan = planned(_pages(args.page))
    if not plan:
        print("nothing to run: these pages have no unmarked shell or Python block "
              "(the quickstart's run in tests/test_docs_run.py)")
        return 1
    outcomes = [outcome for page, blocks in plan for outcome in run_page(page, blocks, args.timeout)]
    passed = sum(o.passed for o in outcomes)
    print(f"{passed}/{len(outcomes)} blocks of {len(plan)} pages passed "
          f"({sum(o.seconds for o in outcomes):.0f} s)")
    return 0 if passed == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
