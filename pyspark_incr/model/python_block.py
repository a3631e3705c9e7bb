"""A Python model's ``@model(...)`` arguments written out as the ``MODEL (...)`` block of a SQL model.

:func:`pyspark_incr.model.definition.parse_model` reads the block as it reads a SQL model's, so every
property means the same in both; a message about the block names the ``@model`` argument at fault
(:func:`placed`).
"""

from __future__ import annotations

import re
from datetime import date, datetime
from enum import Enum
from typing import Any, Iterable

from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.python_api import PYTHON_KINDS, KindClass, ModelKindName
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS


def definition(lines: list[tuple[str, str]], typed: list[tuple[str, str]]) -> str:
    """The SQL definition ``lines`` make: their MODEL block, then a query of the declared shape, which stands in
    for the one parse_model wants (the record keeps none)."""
    stub = exp.select(*[exp.alias_(exp.cast(exp.null(), exp.DataType.build(t, dialect="spark")), c, quoted=True)
                        for c, t in typed])
    return "MODEL (\n" + ",\n".join(text for _, text in lines) + "\n);\n" + stub.sql("spark")


def declared_columns(columns: dict[str, Any], dialect: str, where: str) -> list[tuple[str, str]]:
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


def block_lines(name: str, options: dict[str, Any], columns: list[tuple[str, str]], where: str,
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
    if isinstance(kind, KindClass):
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


def placed(message: str, keys: list[str]) -> str:
    """A message about the synthesized MODEL block, with its line numbers told as the ``@model`` argument."""
    def argument(m: re.Match) -> str:
        line = int(m.group(1)) - 2  # line 1 is "MODEL ("
        return f"@model argument {keys[line]!r}" if 0 <= line < len(keys) else m.group(0)

    return re.sub(r"line (\d+), column \d+", argument, message)
