"""How ``pyspark-incr plan`` shows the change, below its table, as ``sqlmesh plan`` does.

The rows' ``diff`` column (:mod:`pyspark_incr.plan.diff`) is printed per directly modified model:
the models it affects downstream, then its SQL and property diffs, ``+`` lines green, ``-`` lines
red, headers bold. New and removed models are listed by name only (their whole definition would
bury the changes). Colour follows the terminal: none when stdout is not one, or with ``--no-color``
(or ``NO_COLOR``); ``--color`` (or ``FORCE_COLOR``) forces it.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.text import Text

#: A diff's file headers (told apart from a removed line that starts with "--").
_HEADER = re.compile(r"(---|\+\+\+) \S+ (sql|code|properties) \(")
#: The style of any other line of the diff column, by how it starts.
_STYLES = (("@@", "cyan"), ("+", "green"), ("-", "red"), ("affects ", "yellow"))


def console(color: bool | None, width: int = 200) -> Console:
    """A console for the CLI's output: colour when ``color`` is True, none when False, else as the terminal says."""
    if color is False:
        return Console(width=width, color_system=None)
    return Console(width=width, force_terminal=True if color else None)


def print_changes(out: Console, rows: list[Any]) -> None:
    """Print what the plan's ``diff`` column says: added and removed models by name, then each directly
    modified model with what it affects and its diffs; nothing when the plan changes no definition."""
    shown = [r for r in rows if r["diff"]]
    if not shown:
        return
    out.print()
    out.print(Text("Changes", style="bold underline"))
    for change, label in (("added", "Added models"), ("removed", "Removed models")):
        names = [r["model"] for r in shown if r["change"] == change]
        if names:
            out.print(Text.assemble((f"{label}: ", "bold"), ", ".join(names)))
    for row in shown:
        if row["change"] in ("added", "removed"):
            continue
        what = row["category"] if row["change"] == "changed" else "metadata only"
        out.print(Text.assemble(("Directly modified: ", "bold"), (row["model"], "bold"), f" ({what})"))
        for line in row["diff"].splitlines():
            out.print(_styled(line))


def _styled(line: str) -> Text:
    style = "bold" if _HEADER.match(line) else next((s for start, s in _STYLES if line.startswith(start)), "")
    return Text("  " + line, style=style)
