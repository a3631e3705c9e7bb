"""Typed readers for MODEL property values; each error names the property and its line."""

from __future__ import annotations

from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.block import Property


def as_string(prop: Property, where: str) -> str:
    """A string literal (or a bare word) as text.

    >>> from pyspark_incr.model.block import parse_block
    >>> as_string(parse_block("MODEL (cron '@daily'); SELECT 1").properties["cron"], "m")
    '@daily'
    """
    v = prop.value
    if isinstance(v, exp.Literal):
        return v.this
    if isinstance(v, (exp.Column, exp.Identifier, exp.Var)) and "." not in v.sql():
        return v.name
    raise _bad(prop, where, "a quoted string")


def as_int(prop: Property, where: str) -> int:
    """A non-negative integer literal."""
    v = prop.value
    if isinstance(v, exp.Literal) and not v.is_string and v.this.isdigit():
        return int(v.this)
    raise _bad(prop, where, "a whole number")


def as_bool(prop: Property, where: str) -> bool:
    """``true`` / ``false``."""
    v = prop.value
    if isinstance(v, exp.Boolean):
        return bool(v.this)
    if isinstance(v, (exp.Column, exp.Literal)) and v.name.lower() in ("true", "false"):
        return v.name.lower() == "true"
    raise _bad(prop, where, "true or false")


def as_names(prop: Property, where: str) -> tuple[str, ...]:
    """One column, or a tuple/array of columns: ``a``, ``(a, b)``, ``[a, b]``."""
    v = prop.value
    items = v.expressions if isinstance(v, (exp.Tuple, exp.Array)) else [v]
    if isinstance(v, exp.Paren):
        items = [v.this]
    names = []
    for item in items:
        if not isinstance(item, exp.Column):
            raise _bad(prop, where, "a column name or a list of column names like (a, b)")
        names.append(item.name)
    return tuple(names)


def _bad(prop: Property, where: str, expected: str) -> ModelDefinitionError:
    return ModelDefinitionError(
        f"{where}: line {prop.line}: {prop.key} must be {expected}, got {prop.text!r}"
    )
