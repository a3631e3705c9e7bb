"""The docs' fenced code blocks, as a reader pastes them: which ones run, how, and in what environment.

Shared by tests/test_docs_run.py (the quickstart's blocks in CI, every page's blocks checked
cheaply) and bench/docs_run.py (every other page's runnable blocks, for real). A block that is
not meant to run carries ``<!-- not run: why -->`` right before it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "docs" / "quickstart.md"
PAGES = sorted(REPO.glob("docs/*.md")) + [REPO / "README.md"]

_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)\s*$")
_NOT_RUN = re.compile(r"^\s*<!--\s*not run:\s*(?P<why>\S.*?)\s*-->\s*$")
# a line that starts like a marker, so one _NOT_RUN does not read (no reason, misspelt) is caught
_MARKER_LIKE = re.compile(r"^\s*<!--\s*not[\s_-]*run", re.IGNORECASE)


@dataclass(frozen=True)
class CodeBlock:
    """One fenced block of a page: its language, its text (dedented to its fence) and why it is not run, if marked."""

    page: str
    line: int
    lang: str
    source: str
    not_run: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def code_blocks(markdown: str, page: str) -> list[CodeBlock]:
    """The page's fenced blocks in order, each with the reason of a ``<!-- not run: ... -->`` line right before it.

    Blank lines may stand between the comment and the fence; fences indented in a
    list are read as the list's reader sees them, without the indentation.
    """
    lines = markdown.splitlines()
    blocks: list[CodeBlock] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent = opening["indent"]
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == f"{indent}```"), None)
        assert end is not None, f"{page}:{i + 1}: the block opened here is never closed"
        source = "\n".join(line[len(indent):] for line in lines[i + 1:end])
        blocks.append(CodeBlock(page, i + 1, opening["lang"], source, _marker_before(lines, i)))
        i = end + 1
    return blocks


def _marker_before(lines: list[str], fence: int) -> str | None:
    above = fence - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    marker = _NOT_RUN.match(lines[above]) if above >= 0 else None
    return marker["why"] if marker else None


def marker_problems(markdown: str, page: str) -> list[str]:
    """Markers that would silently not count: without a reason, misspelt, or with no block right after them."""
    lines = markdown.splitlines()
    problems = []
    for i, line in enumerate(lines):
        if not _MARKER_LIKE.search(line):
            continue
        if not _NOT_RUN.match(line):
            problems.append(f"{page}:{i + 1}: write the marker alone on its line as <!-- not run: <reason> -->")
            continue
        below = next((j for j in range(i + 1, len(lines)) if lines[j].strip()), None)
        if below is None or not _FENCE.match(lines[below]):
            problems.append(f"{page}:{i + 1}: a not-run marker must stand right before the block it is about")
    return problems


#: How a reader runs each language: a fresh process per block.
RUNNERS: dict[str, Callable[[str], list[str]]] = {
    "bash": lambda source: ["bash", "-euo", "pipefail", "-c", source],
    "python": lambda source: [sys.executable, "-c", source],
}

#: What a reader reads or copies into a file, never pastes into a shell: output, files' contents,
#: another tool's templates (dbt's Jinja) and crontab lines. ``sh``/``console``/bare fences are not
#: among them: a command hides there as easily as in ```bash.
DATA = frozenset({"text", "yaml", "json", "csv", "ini", "properties", "toml", "xml", "cron", "jinja"})


def to_run(blocks: list[CodeBlock],
           run_elsewhere: frozenset[str] = frozenset()) -> tuple[list[CodeBlock], list[CodeBlock]]:
    """The blocks to run in page order, and the refused ones: unmarked, neither runnable, data nor run elsewhere."""
    runnable = [b for b in blocks if b.not_run is None and b.lang in RUNNERS]
    refused = [b for b in blocks if b.not_run is None and b.lang not in RUNNERS
               and b.lang not in DATA and b.lang not in run_elsewhere]
    return runnable, refused


def page_blocks(page: Path) -> list[CodeBlock]:
    """``code_blocks`` of a file, named by its path in the repository."""
    return code_blocks(page.read_text(encoding="utf-8"), str(page.relative_to(REPO)))


def fresh_env(home: Path, venv: Path | None = None) -> dict[str, str]:
    """A reader's shell: none of this process's Spark driver, PYSPARK_INCR_HOME on ``home``, ``venv`` activated."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("_PYSPARK", "PYSPARK_GATEWAY"))}
    env["PYSPARK_INCR_HOME"] = str(home)
    if venv is not None:
        # what `source .venv/bin/activate` sets
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
        env.pop("PYTHONHOME", None)
    return env
