"""Macro values between SQL and Python, as SQLMesh converts them: what a Python macro's annotated parameters
receive (:func:`coerce`), what its Python results become in the query (:func:`to_expression`), and how a value
reads inside an identifier (``col_@{x}``).

>>> coerce(exp.Literal.number(3), int), coerce(exp.column("a"), str), to_expression([1, "x"]).sql("spark")
(3, 'a', "ARRAY(1, 'x')")
"""

from __future__ import annotations

import inspect
import types
import typing
from datetime import date, datetime
from typing import Any, Callable, Iterable

import sqlglot
from sqlglot import exp


class SQL(str):
    """A macro argument as its SQL text: annotate a Python macro's parameter ``: SQL`` (as in SQLMesh)."""


def to_expression(value: Any) -> exp.Expression:
    """A Python or SQL value as a SQL expression (a copy: each use gets its own node)."""
    if isinstance(value, exp.Expression):
        return value.copy()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        return exp.Literal.number(value)
    if value is None:
        return exp.Null()
    if isinstance(value, (list, tuple)):
        return exp.Array(expressions=[to_expression(v) for v in value])
    if isinstance(value, datetime):
        return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), "TIMESTAMP")
    if isinstance(value, date):
        return exp.cast(exp.Literal.string(value.isoformat()), "DATE")
    return exp.Literal.string(str(value))


def python_value(node: Any) -> Any:
    """A literal, boolean or NULL as its Python value; any other expression unchanged."""
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        number = float(node.this)
        return int(number) if number.is_integer() and "." not in node.this else number
    if isinstance(node, exp.Boolean):
        return node.this
    if isinstance(node, exp.Null):
        return None
    return node


def as_text(value: Any, dialect: str) -> str:
    """A value as it reads inside an identifier: a string's text, a column's name."""
    if isinstance(value, exp.Literal):
        return str(value.this)
    if isinstance(value, (exp.Column, exp.Identifier, exp.Table)) and not (isinstance(value, exp.Column) and value.table):
        return value.name
    if isinstance(value, exp.Expression):
        return value.sql(dialect)
    return str(value)


def hints(func: Callable[..., Any]) -> dict[str, Any]:
    """The type hints of a Python macro's parameters (those that resolve)."""
    try:
        return typing.get_type_hints(func)
    except Exception:  # noqa: BLE001 - unresolvable annotations: coerce by what can be read
        return {k: v for k, v in getattr(func, "__annotations__", {}).items() if not isinstance(v, str)}


def coerce(value: Any, hint: Any, dialect: str = "spark") -> Any:
    """A macro argument converted to its parameter's annotation, as SQLMesh does; unchanged when it cannot be."""
    if hint is None or hint is inspect.Parameter.empty or hint is Any or not isinstance(value, exp.Expression):
        return value
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for arm in typing.get_args(hint):
            got = coerce(value, arm, dialect)
            if got is not value or (isinstance(arm, type) and isinstance(value, arm)):
                return got
        return value
    if origin in (list, tuple, Iterable) or hint in (list, tuple):
        inner = (typing.get_args(hint) or (None,))[0]
        items = value.expressions if isinstance(value, (exp.Array, exp.Tuple)) else [value]
        got = [coerce(v, inner, dialect) for v in items]
        return tuple(got) if origin is tuple or hint is tuple else got
    try:
        return _scalar(value, hint, dialect)
    except (ValueError, TypeError, sqlglot.errors.ParseError):
        return value


def _scalar(value: exp.Expression, hint: Any, dialect: str) -> Any:
    if hint is SQL:
        return SQL(value.sql(dialect))
    if hint is bool:
        if isinstance(value, exp.Boolean):
            return value.this
        if isinstance(value, (exp.Literal, exp.Column)) and value.name.lower() in ("true", "false"):
            return value.name.lower() == "true"
        return value
    if hint in (int, float):
        if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal):
            number = -float(value.this.this)
        elif isinstance(value, exp.Literal):
            number = float(value.this)
        else:
            return value
        return int(number) if hint is int else number
    if hint is str:
        if isinstance(value, (exp.Literal, exp.Identifier)) or (isinstance(value, exp.Column) and not value.table):
            return value.name
        return value.sql(dialect)
    if hint in (datetime, date):
        text = value.name if isinstance(value, exp.Literal) else None
        parsed = datetime.fromisoformat(text) if text else None
        return value if parsed is None else (parsed if hint is datetime else parsed.date())
    if isinstance(hint, type) and issubclass(hint, exp.Expression):
        if isinstance(value, hint):
            return value
        if isinstance(value, exp.Literal) and value.is_string:
            return sqlglot.parse_one(value.this, read=dialect, into=hint)
        if hint is exp.Table and isinstance(value, (exp.Column, exp.Identifier)):
            return exp.to_table(value.sql(dialect), dialect=dialect)
        if hint is exp.Identifier and isinstance(value, exp.Column) and not value.table:
            return value.this
        if hint is exp.Column and isinstance(value, exp.Identifier):
            return exp.column(value)
    return value
