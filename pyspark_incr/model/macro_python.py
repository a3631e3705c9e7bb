"""A project's Python macros: ``macros/**/*.py`` files declaring ``@macro()`` functions (SQLMesh's convention).

Files written for SQLMesh load unedited: while one runs, ``from sqlmesh import macro, SQL`` and
``from sqlmesh.core.macros import MacroEvaluator`` resolve to this package's stand-ins
(:mod:`pyspark_incr.model.pyfiles`). A model that calls one carries the text of the file defining it
in its context, so another Spark application re-parses it without the project directory.

>>> found = from_sources((("m.py", "from sqlmesh import macro, SQL\\n@macro()\\ndef two(evaluator):\\n    return 2\\n"),))
>>> sorted(found.functions), found.files_of({"two"})
(['two'], (('m.py', 'from sqlmesh import macro, SQL\\n@macro()\\ndef two(evaluator):\\n    return 2\\n'),))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model import pyfiles
from pyspark_incr.model.macro_eval import SQL, MacroEvaluator

pyfiles.stand_in("SQL", SQL)
pyfiles.stand_in("MacroEvaluator", MacroEvaluator)


@dataclass(frozen=True)
class ProjectMacros:
    """The Python macros of a project: the files (path, text) and their functions by lowercase name."""

    files: tuple[tuple[str, str], ...] = ()
    functions: dict[str, Callable[..., Any]] = field(default_factory=dict, compare=False)
    #: The file each macro is declared in.
    declared_in: dict[str, str] = field(default_factory=dict, compare=False)

    def files_of(self, names: Iterable[str]) -> tuple[tuple[str, str], ...]:
        """The files declaring the macros ``names`` (what a model calling them must carry), in project order."""
        wanted = {self.declared_in[n] for n in names if n in self.declared_in}
        return tuple(f for f in self.files if f[0] in wanted)


def load_dir(root: Path) -> ProjectMacros:
    """The macros of ``root/macros`` (subfolders too; hidden folders and ``__init__.py`` skipped)."""
    folder = root / "macros"
    if not folder.is_dir():
        return ProjectMacros()
    paths = [f for f in sorted(folder.rglob("*.py")) if f.name != "__init__.py"
             and not any(part.startswith(".") for part in f.relative_to(folder).parts)]
    return from_sources(tuple((str(p), _read(p)) for p in paths))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise ModelDefinitionError(f"{path}: cannot be read ({e.strerror})") from None


def from_sources(files: tuple[tuple[str, str], ...]) -> ProjectMacros:
    """The macros the files ``(path, text)`` declare (each file run once per text)."""
    functions: dict[str, Callable[..., Any]] = {}
    declared: dict[str, str] = {}
    for source, text in files:
        for name, func in _run(text, source):
            functions[name] = func
            declared[name] = source
    return ProjectMacros(tuple(files), functions, declared)


@lru_cache(maxsize=256)
def _run(text: str, source: str) -> tuple[tuple[str, Callable[..., Any]], ...]:
    return tuple((r.name.lower(), r.func) for r in pyfiles.run_source(text, source) if r.what == pyfiles.MACRO)
