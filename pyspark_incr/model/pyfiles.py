"""Running a project's Python files (``macros/``, ``models/``, ``signals/``) and collecting what they declare.

A file declares with the decorators here: ``@macro()``, ``@model("db.name", ...)``, ``@signal()``.
Projects written for SQLMesh import them from ``sqlmesh`` (``from sqlmesh import macro``,
``from sqlmesh.core.macros import macro``, ``from sqlmesh import ExecutionContext, model``); while a
file runs, those module names resolve to this module's stand-ins, so such files load unedited
whether or not SQLMesh is installed (and SQLMesh's own modules, if imported before, are put back after).

>>> regs = run_source("from sqlmesh import macro\\n@macro()\\ndef twice(evaluator, x):\\n    return x\\n", "m.py")
>>> [(r.what, r.name, r.func.__name__) for r in regs]
[('macro', 'twice', 'twice')]
"""

from __future__ import annotations

import sys
import threading
import types
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from pyspark_incr.errors import ModelDefinitionError

#: What a decorator declares.
MACRO, MODEL, SIGNAL = "macro", "model", "signal"


@dataclass(frozen=True)
class Registration:
    """One decorated function: what it declares, under which name, with the decorator's options."""

    what: str
    name: str
    func: Callable[..., Any]
    options: Mapping[str, Any] = field(default_factory=dict)
    #: The file it was declared in.
    source: str = ""


_collecting = threading.local()


def _collect(registration: Registration) -> None:
    found = getattr(_collecting, "found", None)
    if found is not None:
        found.append(registration)


class _Decorator:
    """``@decorator(name=None, **options)``: records the function while a project file runs; returns it unchanged."""

    what = ""

    def __init__(self, name: str | None = None, **options: Any):
        self.name = name
        self.options = options

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        name = (self.name or func.__name__)
        _collect(Registration(self.what, name, func, dict(self.options), getattr(_collecting, "source", "")))
        return func


class macro(_Decorator):  # noqa: N801 - spelled as SQLMesh spells it, so its projects load unedited
    """Declares a Python macro: ``@macro()`` over ``def name(evaluator, *args)``; called as ``@NAME(...)``."""

    what = MACRO


class model(_Decorator):  # noqa: N801
    """Declares a Python model: ``@model("db.name", kind=..., columns={...})`` over ``def execute(context, ...)``."""

    what = MODEL

    def __init__(self, name: str | None = None, **options: Any):
        if not name:
            raise ModelDefinitionError("@model needs the model's name first, e.g. @model(\"shop.daily\", columns={...})")
        super().__init__(name, **options)


class signal(_Decorator):  # noqa: N801
    """Declares a signal: ``@signal()`` over ``def name(batch, **kwargs)`` returning a bool or the ready intervals."""

    what = SIGNAL


def run_file(path: Path) -> list[Registration]:
    """Run one project file and return what it declared, in order."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ModelDefinitionError(f"{path}: cannot be read ({e.strerror})") from None
    return run_source(text, str(path))


def run_source(text: str, source: str) -> list[Registration]:
    """Run Python ``text`` (the file ``source``) as a fresh module and return what it declared.

    Errors in the file are a :class:`ModelDefinitionError` naming it and the line.
    """
    module = types.ModuleType(f"__incr_project__.{Path(source).stem}")
    module.__file__ = source
    _collecting.found, _collecting.source = [], source
    try:
        with _sqlmesh_names():
            code = compile(text, source, "exec")
            exec(code, module.__dict__)  # noqa: S102 - the project's own code, as SQLMesh runs it
        return list(_collecting.found)
    except ModelDefinitionError:
        raise
    except SyntaxError as e:
        raise ModelDefinitionError(f"{source}: line {e.lineno}: {e.msg}; fix the Python syntax") from None
    except Exception as e:  # noqa: BLE001 - anything the user's file raises while it loads
        raise ModelDefinitionError(f"{source}: {_where(e, source)}{type(e).__name__}: {e}") from None
    finally:
        _collecting.found = None
        _collecting.source = ""


def _where(error: BaseException, source: str) -> str:
    tb = error.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == source:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f"line {line}: " if line else ""


#: Module names a SQLMesh project imports, mapped to the names each must offer (filled by :func:`stand_in`).
_SQLMESH_MODULES = ("sqlmesh", "sqlmesh.core", "sqlmesh.core.macros", "sqlmesh.core.model", "sqlmesh.core.model.kind",
                    "sqlmesh.core.context", "sqlmesh.core.signal", "sqlmesh.core.execution_context",
                    "sqlmesh.utils", "sqlmesh.utils.date",  # signals: to_datetime("1 week ago")
                    "sqlmesh.core.linter", "sqlmesh.core.linter.rule")  # lint rules: linter/*.py
_extra: dict[str, Any] = {}
_lock = threading.RLock()


def stand_in(name: str, value: Any, *, unless_offered: bool = False) -> None:
    """Offer ``value`` as ``name`` in every stand-in ``sqlmesh`` module (``ExecutionContext``, ``ModelKindName``, ...).

    The rooms that give those names meaning (macros, Python models, signals) register them here; with
    ``unless_offered`` a room offering a fallback leaves a richer one another room offered in place.
    """
    if not (unless_offered and name in _extra):
        _extra[name] = value


@contextmanager
def _sqlmesh_names() -> Iterator[None]:
    """While a project file runs, ``sqlmesh`` and its submodules are the stand-ins; whatever was there is put back."""
    with _lock:
        saved = {n: sys.modules[n] for n in _SQLMESH_MODULES if n in sys.modules}
        for name in _SQLMESH_MODULES:
            mod = types.ModuleType(name)
            mod.__path__ = []  # a package, so submodule imports resolve through sys.modules
            mod.macro, mod.model, mod.signal = macro, model, signal
            mod.__dict__.update(_extra)
            sys.modules[name] = mod
        for name in _SQLMESH_MODULES:
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(sys.modules[parent], child, sys.modules[name])
        try:
            yield
        finally:
            for name in _SQLMESH_MODULES:
                sys.modules.pop(name, None)
            sys.modules.update(saved)
