"""Python models: ``models/**/*.py`` files declaring ``@model("db.name", columns={...}, ...)`` over
``def execute(context, start, end, execution_time, **kwargs)`` returning (or yielding) DataFrames, as in SQLMesh.

The decorator's arguments are written out as a ``MODEL (...)`` block (:mod:`pyspark_incr.model.python_block`)
and read by :func:`parse_model` like a SQL model's, so every property means the same in both; what a file
imports from ``sqlmesh`` is in :mod:`pyspark_incr.model.python_api`. The record has no query: its rows
come from running ``execute`` for each batch (:func:`pyspark_incr.model.python_run.rows`). Its definition is the file's source,
so another Spark application rebuilds and runs it from state alone (:func:`reparse`); its
``content_hash`` is a hash of that code, so a code change is a data change.

>>> text = '''from sqlmesh import model
... @model("Shop.Totals", kind="full", columns={"id": "int", "name": "text"}, grain="id")
... def execute(context, start, end, execution_time, **kwargs):
...     return context.spark.range(1)'''
>>> from pyspark_incr.model.definition import parse_python_models
>>> [(m.name, m.kind.name, m.columns, m.grains, m.query) for m in parse_python_models(text, "totals.py")]
[('shop.totals', 'FULL', (('id', 'INT'), ('name', 'STRING')), ('id',), None)]
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
from dataclasses import replace
from functools import lru_cache
from typing import Any, Callable

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model import blueprints, pyfiles, python_block
from pyspark_incr.model.macro_values import to_expression
from pyspark_incr.model.python_api import ExecutionContext

#: The key of a Python model's context JSON (value: the name its ``@model`` gives): how :func:`reparse` knows it.
MARK = "python"
#: What the incremental safety check says of a Python model (shown by incr.explain).
UNCHECKED = ("not checked: a Python model's code is not analysed (SQLMesh does not check it either); each batch "
             "runs execute() for its own start and end, and rows outside the batch are dropped")


# --- reading a file ------------------------------------------------------------------------------------------------

def models_in(text: str, source: str, parse: Callable[..., Any], defaults: dict[str, Any] | None = None,
              variables: dict[str, Any] | None = None, *more: Any, python_macros: Any = None) -> list[Any]:
    """The models a Python file declares, each parsed by ``parse`` (:func:`parse_model`) from its ``@model``;
    ``more``: parse_model's further arguments (the project's custom audits, signals); ``python_macros``: the
    project's (``blueprints="@gen_blueprints()"`` and ``@model`` arguments may call them)."""
    found = registrations(text, source)
    if not found:
        raise ModelDefinitionError(
            f"{source}: no @model(...) in this Python file of models/; declare one over def execute(context, ...) "
            "(from sqlmesh import model), or move helper code out of models/")
    seen: set[str] = set()
    models = []
    for reg in found:
        entries = _blueprints(reg, source, variables or {}, python_macros)
        for entry in entries:
            model = _model(reg, text, source, parse, defaults or {}, variables or {}, more, entry, python_macros)
            if model.name in seen:
                said = "; the name must use a blueprint variable, e.g. \"@{customer}.some_table\"" if entry else ""
                raise ModelDefinitionError(f"{model.located if entry else source}: two @model(...) are named "
                                           f"{model.name}; rename one{said}")
            seen.add(model.name)
            models.append(model)
    return models


def _blueprints(reg: pyfiles.Registration, source: str, variables: dict[str, Any],
                python_macros: Any = None) -> list[dict[str, Any] | None]:
    """The entries of ``@model(blueprints=...)``, one model each; ``[None]`` without blueprints."""
    given = reg.options.get("blueprints")
    if given is None:
        return [None]
    python = python_macros.functions if python_macros is not None else None
    return blueprints.python_entries(given, f"model {reg.name} ({source})", variables, python)


def reparse(definition: str, source: str, extra: dict[str, Any], parse: Callable[..., Any], *more: Any,
            python_macros: Any = None) -> Any:
    """A Python model stored in state (``extra``: its context): its file's source run again, the ``@model`` it
    names read as :func:`models_in` read it."""
    for reg in registrations(definition, source):
        if reg.name == extra[MARK]:
            return _model(reg, definition, source, parse, extra.get("defaults") or {}, extra.get("variables") or {},
                          more, extra.get(blueprints.KEY), python_macros)
    raise ModelDefinitionError(f"{source}: the stored Python source no longer declares @model({extra[MARK]!r})")


def is_python(model: Any) -> bool:
    """True for a model declared in a Python file."""
    return bool(model.context) and MARK in stored(model.context)


@lru_cache(maxsize=4096)
def stored(text: str) -> dict[str, Any]:
    """A model's stored context JSON as a dict (empty when it has none)."""
    return json.loads(text) if text.startswith("{") else {}


def _model(reg: pyfiles.Registration, text: str, source: str, parse: Callable[..., Any], defaults: dict[str, Any],
           variables: dict[str, Any], more: tuple, blueprint: dict[str, Any] | None = None,
           python_macros: Any = None) -> Any:
    options = dict(reg.options)
    options.pop("blueprints", None)
    name = reg.name if blueprint is None else blueprints.render_name(
        reg.name, {**variables, **blueprint}, f"model {reg.name} ({source}: line {reg.func.__code__.co_firstlineno})")
    where = f"model {name} ({source})"
    columns = options.pop("columns", None)
    if not columns or not isinstance(columns, dict):
        raise ModelDefinitionError(f"{where}: @model needs columns={{name: type, ...}}: a Python model declares the "
                                   "schema of what execute() returns, e.g. columns={'id': 'int', 'name': 'text'}")
    depends_on = options.pop("depends_on", None)
    if "is_sql" in options:
        raise ModelDefinitionError(f"{where}: @model(is_sql=...) is not supported for Python models yet; "
                                   "declare one @model per table")
    dialect = str(options.get("dialect") or defaults.get("dialect") or "spark")
    typed = python_block.declared_columns(columns, dialect, where)
    lines = python_block.block_lines(name, options, typed, where, frozenset({*variables, *(blueprint or {})}))
    try:
        # the entry as SQL values: @model arguments such as owner="@customer" are rendered with it, as in SQLMesh
        entry = None if blueprint is None else {k: to_expression(v).sql("spark") for k, v in blueprint.items()}
        model = parse(python_block.definition(lines, typed), source, defaults, variables, *more, python_macros=python_macros,
                      blueprint=entry)
    except ModelDefinitionError as e:
        raise type(e)(python_block.placed(str(e), [key for key, _ in lines])) from None
    reads = _depends_on(reg, text, depends_on, variables, where, model.name, blueprint)
    context = {**(json.loads(model.context) if model.context else {}), MARK: reg.name}
    if blueprint is not None:  # only then: it picks this model out of the @model's blueprints
        context[blueprints.KEY] = blueprint
    return replace(model, query=None, depends_on=reads, definition=text, source=source,
                   content_hash=_code_hash(text, reg, variables, blueprint),
                   context=json.dumps(context, sort_keys=True, default=str),
                   located=f"{source}: line {reg.func.__code__.co_firstlineno}")


# --- what it reads, and its code ------------------------------------------------------------------------------------

def _depends_on(reg: pyfiles.Registration, text: str, declared: Any, variables: dict[str, Any], where: str,
                name: str, blueprint: dict[str, Any] | None = None) -> tuple[str, ...]:
    """``depends_on`` as declared; else the models its code passes to ``context.resolve_table`` (or ``table``)."""
    if declared is not None:
        items = [declared] if isinstance(declared, str) else list(declared)
        return tuple(sorted({str(d).lower() for d in items} - {name}))
    found = set()
    for call in _context_calls(_own_code(text, reg), ("resolve_table", "table")):
        found.add(str(_argument(call, reg, variables, where, blueprint)).lower())
    return tuple(sorted(found - {name}))


def _own_code(text: str, reg: pyfiles.Registration) -> list[ast.AST]:
    """The file's code but the other ``@model`` functions (whose reads are theirs)."""
    first = reg.func.__code__.co_firstlineno  # the line of its first decorator
    return [node for node in ast.parse(text).body
            if not (isinstance(node, ast.FunctionDef) and any(_decorated_model_call(d) for d in node.decorator_list)
                    and node.decorator_list[0].lineno != first)]


def _context_calls(nodes: list[ast.AST], methods: tuple[str, ...]) -> list[ast.Call]:
    return [n for top in nodes for n in ast.walk(top) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name) and n.func.value.id == "context" and n.func.attr in methods]


def _argument(call: ast.Call, reg: pyfiles.Registration, variables: dict[str, Any], where: str,
              blueprint: dict[str, Any] | None = None) -> Any:
    """The first argument's value, computed now from the file's names and the project's variables."""
    node = call.args[0] if call.args else next((k.value for k in call.keywords), None)
    try:
        return eval(compile(ast.Expression(node), where, "eval"),  # noqa: S307 - the project's own code
                    dict(reg.func.__globals__),
                    {"context": ExecutionContext(None, variables=variables, blueprint=blueprint)})
    except Exception:  # noqa: BLE001 - anything the expression needs that only a run has
        raise ModelDefinitionError(
            f"{where}: line {call.lineno}: cannot tell which model context.{call.func.attr}(...) reads before "
            "running it; list the models it reads in @model(depends_on=[\"db.name\", ...])") from None


def _code_hash(text: str, reg: pyfiles.Registration, variables: dict[str, Any],
               blueprint: dict[str, Any] | None = None) -> str:
    """The file's code without comments, layout or ``@model`` arguments (those are its properties), and the
    variables it uses: what decides the rows beyond the properties."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            node.decorator_list = [d for d in node.decorator_list if not _decorated_model_call(d)]
    used = _used_variables(tree, reg)
    payload = [ast.dump(tree), reg.name, sorted((k, repr(variables[k])) for k in used if k in variables)]
    if blueprint is not None:  # only then, so the hash of a model without blueprints stays as it was
        payload.append(sorted((k, repr(v)) for k, v in blueprint.items()))
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:16]


def _decorated_model_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "model"


def _used_variables(tree: ast.AST, reg: pyfiles.Registration) -> set[str]:
    """Variables the code reads: ``context.var("name")`` with a literal name, and ``execute``'s own parameters."""
    used = {p.lower() for p in inspect.signature(reg.func).parameters}
    for call in _context_calls([tree], ("var", "blueprint_var")):
        if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
            used.add(call.args[0].value.lower())
    return used


@lru_cache(maxsize=256)
def registrations(definition: str, source: str) -> tuple[pyfiles.Registration, ...]:
    """The file run once per process and source text: its functions are kept, as SQLMesh keeps them."""
    return tuple(r for r in pyfiles.run_source(definition, source) if r.what == pyfiles.MODEL)
