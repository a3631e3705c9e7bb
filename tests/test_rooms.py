"""The package's rooms import in one direction (docs/architecture.md#rooms).

Every module's imports are read with ``ast`` (imports inside functions too, which
run later but tie the rooms together all the same). A room may import its own
modules and any lower room, never a higher one; and no modules import one
another in a circle, inside a room or across rooms.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pyspark_incr"

#: Lowest first. ``ground`` is what every room may use: intervals, errors, config, JVM access, SQL text.
ORDER = ("ground", "model", "safety", "project", "state", "writers", "plan", "run", "procedures", "bridge", "cli")

#: First-level modules and folders that are not named after their room.
PLACED = {
    "intervals": "ground", "errors": "ground", "config": "ground", "runtime": "ground", "sqltext": "ground",
    "stalls": "ground", "commits": "ground", "version": "ground", "ddl": "ground", "timings": "ground",
    "trips": "ground", "collector": "ground", "managed": "ground", "spark_errors": "ground",
    # What a project's Python files import (``from pyspark_incr.decorators import macro``): the model room's.
    "decorators": "model",
    # The package's facade (attach, configure_spark_with_incr) and the command line's helpers sit on top.
    "__init__": "cli", "cli_progress": "cli", "cli_status": "cli", "coverage": "cli", "coverage_plot": "cli",
    "cli_args": "cli", "cli_init": "cli", "cli_validate": "cli", "cli_plan": "cli",
    # The static model site (``pyspark-incr docs build``) draws the command line's coverage records.
    "site": "cli", "cli_docs": "cli",
    # Table diff reads what environments hold (state, plan) and compares it: the plan room's.
    "diff": "plan",
}


@dataclass(frozen=True)
class Import:
    """One import statement's target module, and where it is written."""

    source: str
    target: str
    file: Path
    line: int

    root: Path = PACKAGE

    @property
    def at(self) -> str:
        return f"{self.file.relative_to(self.root.parent)}:{self.line}"


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a folder's ``__init__`` under the folder's name)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def room(module: str) -> str:
    """The room a module of the package belongs to."""
    first = module.split(".")[1] if "." in module else "__init__"
    return PLACED.get(first, first)


def _targets(node: ast.AST, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
    # ``from pkg import name`` names a module when pkg.name is one, else something pkg defines.
    return [f"{base}.{alias.name}" for alias in node.names] + [base]


def imports(root: Path = PACKAGE) -> list[Import]:
    """Every import of one of the package's modules by another, with file and line."""
    known = modules(root)
    found = []
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = set()
            for target in _targets(node, package):
                while target and target not in known:
                    target = target.rpartition(".")[0]
                # Importing a submodule runs its package's __init__ too; within the package that is not a tie.
                if target and target != name and not name.startswith(target + "."):
                    targets.add(target)
            found += [Import(name, t, path, node.lineno, root) for t in sorted(targets)]
    return found


def upward(found: list[Import]) -> list[str]:
    """Each import of a higher room, as ``file:line: room imports module (higher room)``."""
    return [f"{i.at}: {room(i.source)} imports {i.target} (room {room(i.target)} is above it)"
            for i in found if ORDER.index(room(i.target)) > ORDER.index(room(i.source))]


def circles(found: list[Import]) -> list[list[str]]:
    """Sets of modules that import one another in a circle (Tarjan's strongly connected components)."""
    edges: dict[str, set[str]] = {}
    for i in found:
        edges.setdefault(i.source, set()).add(i.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    result = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while not members or members[-1] != node:
                members.append(stack.pop())
            if len(members) > 1:
                result.append(sorted(members))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return result


def test_every_module_belongs_to_a_known_room():
    unknown = sorted({f"{m} (room {room(m)!r})" for m in modules() if room(m) not in ORDER})
    assert not unknown, "place these in ORDER or PLACED: " + ", ".join(unknown)


def test_no_room_imports_a_higher_room():
    wrong = upward(imports())
    assert not wrong, "\n".join(wrong)


def test_no_modules_import_one_another_in_a_circle():
    found = imports()
    where = {(i.source, i.target): i.at for i in found}
    described = []
    for members in circles(found):
        ties = [f"{where[(a, b)]} ({a} -> {b})" for a in members for b in members if (a, b) in where]
        described.append("; ".join(ties))
    assert not described, "\n".join(described)


@pytest.mark.parametrize("source, expected", [
    ("from pyspark_incr.run import audits\n", ["pyspark_incr.run.audits"]),
    ("def later():\n    from pyspark_incr.bridge.session import attach\n", ["pyspark_incr.bridge.session"]),
    ("from .. import runtime\n", ["pyspark_incr.runtime"]),
    ("import pyspark_incr.plan.planner\n", ["pyspark_incr.plan.planner"]),
])
def test_imports_are_found_however_they_are_written(tmp_path, source, expected):
    root = tmp_path / "pyspark_incr"
    for name in ("__init__.py", "model/__init__.py", "run/audits.py", "bridge/session.py", "runtime.py", "plan/planner.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    (root / "model" / "probe.py").write_text(source)
    found = [i for i in imports(root) if i.source == "pyspark_incr.model.probe"]
    assert [i.target for i in found] == expected
    assert all(i.at.startswith("pyspark_incr/model/probe.py:") for i in found)


def test_an_import_of_a_higher_room_is_reported_with_its_file_and_line():
    probe = Import("pyspark_incr.model.definition", "pyspark_incr.safety.rules", PACKAGE / "model" / "definition.py", 37)
    assert upward([probe]) == ["pyspark_incr/model/definition.py:37: model imports pyspark_incr.safety.rules "
                               "(room safety is above it)"]
