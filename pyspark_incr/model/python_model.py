"""Python models: ``models/**/*.py`` files declaring ``@model("db.name", columns={...}, ...)`` over
``def execute(context, start, end, execution_time, **kwargs)`` returning (or yielding) DataFrames, as in SQLMesh.

The decorator's arguments are written out as a ``MODEL (...)`` block and read by :func:`parse_model`
like a SQL model's, so every property means the same in both. The record has no query: its rows
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
import re
from dataclasses import replace
from datetime import date, datetime
from enum import Enum
from functools import lru_cache
from typing import Any, Callable, Iterable

from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model import blueprints, pyfiles
from pyspark_incr.model.macro_values import to_expression
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS

#: The key of a Python model's context JSON (value: the name its ``@model`` gives): how :func:`reparse` knows it.
MARK = "python"
#: What the incremental safety check says of a Python model (shown by incr.explain).
UNCHECKED = ("not checked: a Python model's code is not analysed (SQLMesh does not check it either); each batch "
             "runs execute() for its own start and end, and rows outside the batch are dropped")


class ModelKindName(str, Enum):
    """The kind names ``@model(kind=dict(name=ModelKindName.FULL))`` takes (``from sqlmesh.core.model.kind``)."""

    VIEW = "VIEW"
    FULL = "FULL"
    SEED = "SEED"
    INCREMENTAL_BY_TIME_RANGE = "INCREMENTAL_BY_TIME_RANGE"
    INCREMENTAL_BY_UNIQUE_KEY = "INCREMENTAL_BY_UNIQUE_KEY"
    INCREMENTAL_BY_PARTITION = "INCREMENTAL_BY_PARTITION"
    INCREMENTAL_UNMANAGED = "INCREMENTAL_UNMANAGED"
    INCREMENTAL_BY_CURSOR = "INCREMENTAL_BY_CURSOR"
    SCD_TYPE_2 = "SCD_TYPE_2"
    SCD_TYPE_2_BY_TIME = "SCD_TYPE_2_BY_TIME"
    SCD_TYPE_2_BY_COLUMN = "SCD_TYPE_2_BY_COLUMN"
    EMBEDDED = "EMBEDDED"
    CUSTOM = "CUSTOM"
    MANAGED = "MANAGED"
    EXTERNAL = "EXTERNAL"

    def __str__(self) -> str:
        return self.value


#: Kinds whose rows a Python model can give: not those without stored rows, nor a cursor its code cannot read.
PYTHON_KINDS = ("FULL", "INCREMENTAL_BY_TIME_RANGE", "INCREMENTAL_BY_UNIQUE_KEY", "INCREMENTAL_BY_PARTITION",
                "INCREMENTAL_UNMANAGED", "SCD_TYPE_2", "SCD_TYPE_2_BY_TIME", "SCD_TYPE_2_BY_COLUMN")


class _Kind:
    """SQLMesh's kind classes (``IncrementalByTimeRangeKind(time_column="ds")``): a name and its properties."""

    name = ""

    def __init__(self, **properties: Any):
        self.properties = properties


def _kind_class(class_name: str, kind: str) -> type:
    return type(class_name, (_Kind,), {"name": kind, "__doc__": f"``kind={class_name}(...)``: kind {kind}."})


KIND_CLASSES = {n: _kind_class(n, k) for n, k in (
    ("FullKind", "FULL"), ("ViewKind", "VIEW"), ("SeedKind", "SEED"), ("EmbeddedKind", "EMBEDDED"),
    ("ExternalKind", "EXTERNAL"), ("IncrementalByTimeRangeKind", "INCREMENTAL_BY_TIME_RANGE"),
    ("IncrementalByUniqueKeyKind", "INCREMENTAL_BY_UNIQUE_KEY"), ("IncrementalByPartitionKind", "INCREMENTAL_BY_PARTITION"),
    ("IncrementalUnmanagedKind", "INCREMENTAL_UNMANAGED"), ("SCDType2Kind", "SCD_TYPE_2"),
    ("SCDType2ByTimeKind", "SCD_TYPE_2_BY_TIME"), ("SCDType2ByColumnKind", "SCD_TYPE_2_BY_COLUMN"),
)}


class ExecutionContext:
    """What ``execute(context, ...)`` gets: the session, the tables this environment reads models from, variables.

    As SQLMesh's: ``context.spark``, ``resolve_table(name)``, ``fetchdf(sql)`` (pandas),
    ``fetch_pyspark_df(sql)``, ``var(name, default)``, ``blueprint_var(name, default)``.
    """

    def __init__(self, spark: Any, tables: dict[str, Any] | None = None, variables: dict[str, Any] | None = None,
                 blueprint: dict[str, Any] | None = None):
        self.spark = spark
        self._tables = tables or {}
        self._variables = {k.lower(): v for k, v in (variables or {}).items()}
        self._blueprint = {k.lower(): v for k, v in (blueprint or {}).items()}
        self.engine_adapter = _Adapter(self)
        self.snowpark = self.bigframe = self.default_catalog = self.gateway = None

    def resolve_table(self, model_name: str) -> str:
        """The table this environment reads ``model_name`` from (a table that is no model: its own name)."""
        name = str(model_name).lower()
        table = self._tables.get(name)
        return table.sql("spark", identify=True) if table is not None else exp.to_table(name).sql("spark", identify=True)

    def table(self, model_name: str) -> str:
        """SQLMesh's older name of :meth:`resolve_table`."""
        return self.resolve_table(model_name)

    def fetch_pyspark_df(self, query: str | exp.Expression) -> Any:
        """A Spark DataFrame of ``query`` (SQL text or a sqlglot expression)."""
        return self.spark.sql(query.sql("spark") if isinstance(query, exp.Expression) else query)

    def fetchdf(self, query: str | exp.Expression) -> Any:
        """A pandas DataFrame of ``query``: collected to the driver, as SQLMesh does on Spark."""
        return self.fetch_pyspark_df(query).toPandas()

    def var(self, name: str, default: Any = None) -> Any:
        """The project variable ``name`` (config.yaml ``variables:``), ``default`` when it is not set."""
        return self._variables.get(name.lower(), default)

    def blueprint_var(self, name: str, default: Any = None) -> Any:
        """The variable ``name`` of the model's blueprint (``@model(blueprints=[...])``), else ``default``."""
        return self._blueprint.get(name.lower(), default)


class _Adapter:
    """``context.engine_adapter``: what SQLMesh's pre/post-statements in Python code call."""

    def __init__(self, context: ExecutionContext):
        self.spark = context.spark
        self.fetchdf = context.fetchdf

    def execute(self, sql: str | exp.Expression) -> None:
        """Run one statement for its effect."""
        self.spark.sql(sql.sql("spark") if isinstance(sql, exp.Expression) else sql).collect()


def _offer() -> None:
    """The names a SQLMesh Python model imports from ``sqlmesh`` (its project files load unedited)."""
    for name, value in {"ExecutionContext": ExecutionContext, "ModelKindName": ModelKindName, **KIND_CLASSES}.items():
        pyfiles.stand_in(name, value)


if __name__ == "pyspark_incr.model.python_model":  # not a second copy (pytest's doctests import this file alone)
    _offer()


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
    typed = _columns(columns, dialect, where)
    lines = _block_lines(name, options, typed, where, frozenset({*variables, *(blueprint or {})}))
    try:
        # the entry as SQL values: @model arguments such as owner="@customer" are rendered with it, as in SQLMesh
        entry = None if blueprint is None else {k: to_expression(v).sql("spark") for k, v in blueprint.items()}
        model = parse(_definition(lines, typed), source, defaults, variables, *more, python_macros=python_macros,
                      blueprint=entry)
    except ModelDefinitionError as e:
        raise type(e)(_placed(str(e), [key for key, _ in lines])) from None
    reads = _depends_on(reg, text, depends_on, variables, where, model.name, blueprint)
    context = {**(json.loads(model.context) if model.context else {}), MARK: reg.name}
    if blueprint is not None:  # only then: it picks this model out of the @model's blueprints
        context[blueprints.KEY] = blueprint
    return replace(model, query=None, depends_on=reads, definition=text, source=source,
                   content_hash=_code_hash(text, reg, variables, blueprint),
                   context=json.dumps(context, sort_keys=True, default=str),
                   located=f"{source}: line {reg.func.__code__.co_firstlineno}")


def _definition(lines: list[tuple[str, str]], typed: list[tuple[str, str]]) -> str:
    """The SQL definition ``lines`` make: their MODEL block, then a query of the declared shape, which stands in
    for the one parse_model wants (the record keeps none)."""
    stub = exp.select(*[exp.alias_(exp.cast(exp.null(), exp.DataType.build(t, dialect="spark")), c, quoted=True)
                        for c, t in typed])
    return "MODEL (\n" + ",\n".join(text for _, text in lines) + "\n);\n" + stub.sql("spark")


def _columns(columns: dict[str, Any], dialect: str, where: str) -> list[tuple[str, str]]:
    """The declared columns with Spark types (``text`` is STRING, as SQLMesh reads it in the model's dialect)."""
    out = []
    for name, type_ in columns.items():
        try:
            spark_type = (type_ if isinstance(type_, exp.DataType)
                          else exp.DataType.build(str(type_), dialect=dialect)).sql("spark")
        except (ValueError, *SQLGLOT_ERRORS):
            raise ModelDefinitionError(f"{where}: column {name!r} has type {type_!r}, which is no SQL type; "
                                       "write one like 'int', 'text', 'decimal(10, 2)'") from None
        out.append((str(name), spark_type))
    return out


#: MODEL properties whose text values are column names or expressions, written unquoted.
_NAME_KEYS = frozenset({"grain", "grains", "references", "partitioned_by", "clustered_by"})
#: Kind properties whose text values are SQL written as is (MERGE clauses, a condition).
_RAW_KIND_KEYS = frozenset({"when_matched", "merge_filter", "unique_key"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: ``@name`` alone, and the start of a macro call ``@NAME(``: text of an @model argument that is a macro.
_BARE = re.compile(r"@([A-Za-z_]\w*)")
_CALL = re.compile(r"@[A-Za-z_]\w*\s*\(")


def _block_lines(name: str, options: dict[str, Any], columns: list[tuple[str, str]], where: str,
                 known: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """The MODEL block's properties, one a line: ``(argument, text)``; ``known``: the variables a value such as
    ``"@customer"`` may name (:func:`_is_macro`)."""
    cols = ", ".join(f"{exp.to_identifier(c, quoted=True).sql('spark')} {t}" for c, t in columns)
    lines = [("name", f"name {_name_text(name, where)}"), ("columns", f"columns ({cols})")]
    kind = _kind_text(options.pop("kind", None) or "FULL", where, known)  # FULL by default, as in SQLMesh
    kind_name = kind.split()[0]
    if kind_name in ModelKindName.__members__ and kind_name not in PYTHON_KINDS:  # unknown ones: parse_model says
        raise ModelDefinitionError(f"{where}: kind {kind_name} cannot be a Python model; use a SQL model, "
                                   f"or one of {', '.join(PYTHON_KINDS)}")
    lines.append(("kind", f"kind {kind}"))
    for key, value in options.items():
        if value is None:
            continue
        if key in ("audits", "assertions"):
            text = _tuple(_audit_text(a, where) for a in value)
        else:
            text = _sql(value, key in _NAME_KEYS, key in ("partitioned_by", "clustered_by"), known)
        lines.append((key, f"{key} {text}"))
    return lines


def _name_text(name: str, where: str) -> str:
    parts = name.split(".")
    if len(parts) != 2 or not all(parts):
        raise ModelDefinitionError(f"{where}: the model name {name!r} must be schema.table, e.g. @model(\"shop.daily\")")
    return ".".join(exp.to_identifier(p, quoted=True).sql("spark") for p in parts)


def _kind_text(kind: Any, where: str, known: frozenset[str] = frozenset()) -> str:
    """``kind`` as written in a MODEL block: a name, a dict with ``name``, or a kind class instance."""
    if isinstance(kind, _Kind):
        name, props = kind.name, kind.properties
    elif isinstance(kind, dict):
        props = dict(kind)
        name = props.pop("name", None)
    else:
        name, props = kind, {}
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(str(name)):
        raise ModelDefinitionError(f"{where}: kind {kind!r} is no kind; write kind=\"FULL\" or "
                                   "kind=dict(name=ModelKindName.INCREMENTAL_BY_TIME_RANGE, time_column=\"ds\")")
    inner = ", ".join(f"{k} {_sql(v, True, k in _RAW_KIND_KEYS, known)}" for k, v in props.items() if v is not None)
    return str(name).upper() + (f" ({inner})" if inner else "")


def _audit_text(call: Any, where: str) -> str:
    """An audit call: ``"name"``, ``"name(arg := value)"`` or ``("name", {"arg": value})``."""
    if isinstance(call, str):
        return call
    if isinstance(call, (tuple, list)) and len(call) == 2 and isinstance(call[0], str) and isinstance(call[1], dict):
        args = ", ".join(f"{k} := {exp.convert(tuple(v) if isinstance(v, list) else v).sql('spark')}"
                         for k, v in call[1].items())
        return f"{call[0]}({args})"
    raise ModelDefinitionError(f"{where}: audit {call!r} is not \"name\" or (\"name\", {{argument: value}})")


def _sql(value: Any, names: bool, raw: bool = False, known: frozenset[str] = frozenset()) -> str:
    """A Python value as SQL text: text quoted, unless ``names`` (a plain word), ``raw`` (SQL as written) or a
    macro (:func:`_is_macro`; ``known``: the variables it may name)."""
    if isinstance(value, exp.Expression):
        return value.sql("spark")
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (datetime, date)):
        value = value.isoformat()
    if isinstance(value, str):
        if raw or (names and _IDENTIFIER.fullmatch(value)) or _is_macro(value, known):
            return value
        return exp.Literal.string(value).sql("spark")
    if isinstance(value, dict):
        return _tuple(f"{_sql(k, True)} = {_sql(v, names, raw, known)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return _tuple(_sql(v, names, raw, known) for v in value)
    return exp.Literal.string(str(value)).sql("spark")


def _is_macro(text: str, known: frozenset[str]) -> bool:
    """``"@customer"`` (a ``known`` variable), ``"@{region}_x"``, ``"@IF(...)"``: a value SQLMesh renders as a macro.
    Other text stays text (``"@daily"``, ``"@data-team"``), so its reader judges it (a cron, an owner)."""
    bare = _BARE.fullmatch(text)
    if bare:
        return bare.group(1).lower() in {k.lower() for k in known}
    return text.startswith("@{") or bool(_CALL.match(text))


def _tuple(items: Iterable[str]) -> str:
    return "(" + ", ".join(items) + ")"


def _placed(message: str, keys: list[str]) -> str:
    """A message about the synthesized MODEL block, with its line numbers told as the ``@model`` argument."""
    def argument(m: re.Match) -> str:
        line = int(m.group(1)) - 2  # line 1 is "MODEL ("
        return f"@model argument {keys[line]!r}" if 0 <= line < len(keys) else m.group(0)

    return re.sub(r"line (\d+), column \d+", argument, message)


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
