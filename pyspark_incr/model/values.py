"""Typed readers for MODEL and kind property values.

Each reader takes the parsed :class:`Property` and a ``where`` prefix and
returns a plain, hashable Python value, or raises a :class:`ModelDefinitionError`
naming the property, its line and column, what was expected and what was found.

>>> from pyspark_incr.model.block import parse_block
>>> props = parse_block('''MODEL (cron '@daily', tags ('silver', sales),
...   column_descriptions (a = 'the a', b = 'the b'), columns (id INT, name TEXT)); SELECT 1''').properties
>>> as_string(props["cron"], "m"), as_words(props["tags"], "m")
('@daily', ('silver', 'sales'))
>>> as_text_mapping(props["column_descriptions"], "m")
(('a', 'the a'), ('b', 'the b'))
>>> as_column_types(props["columns"], "m")
(('id', 'INT'), ('name', 'STRING'))
"""

from __future__ import annotations

from typing import Any, Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.block import Property

Reader = Callable[[Property, str], Any]


def as_string(prop: Property, where: str) -> str:
    """A string literal (or a bare word) as text."""
    v = _value(prop, where)
    if isinstance(v, exp.Literal) and v.is_string:
        return v.this
    if isinstance(v, (exp.Column, exp.Identifier, exp.Var)) and not isinstance(v.this, exp.Star) and "." not in v.sql():
        return v.name
    raise _bad(prop, where, "a quoted string")


def as_int(minimum: int = 0) -> Reader:
    """A whole number of at least ``minimum``."""

    def read(prop: Property, where: str) -> int:
        v = _value(prop, where)
        negative = isinstance(v, exp.Neg)
        digits = v.this if negative else v
        if not (isinstance(digits, exp.Literal) and not digits.is_string and digits.this.isdigit()):
            raise _bad(prop, where, "a whole number")
        if len(digits.this) > 12:
            raise _bad(prop, where, "a whole number below 10^12")
        value = -int(digits.this) if negative else int(digits.this)
        if value < minimum:
            raise ModelDefinitionError(f"{where}: {prop.at}: {prop.key} must be at least {minimum}, got {value}")
        return value

    return read


def as_bool(prop: Property, where: str) -> bool:
    """``true`` / ``false`` (quoted or not)."""
    v = _value(prop, where)
    if isinstance(v, exp.Boolean):
        return bool(v.this)
    if isinstance(v, (exp.Column, exp.Literal)) and v.name.lower() in ("true", "false"):
        return v.name.lower() == "true"
    raise _bad(prop, where, "true or false")


def as_choice(*choices: str) -> Reader:
    """One word out of ``choices`` (case-insensitive), returned lowercase."""

    def read(prop: Property, where: str) -> str:
        value = _word(_value(prop, where))
        if value is None or value.lower() not in choices:
            raise _bad(prop, where, "one of " + "|".join(choices))
        return value.lower()

    return read


def as_names(prop: Property, where: str) -> tuple[str, ...]:
    """One column, or a tuple/array of columns: ``a``, ``(a, b)``, ``[a, b]``."""
    names = []
    for item in _items(_value(prop, where)):
        if not isinstance(item, exp.Column) or item.table:
            raise _bad(prop, where, "a column name or a list of column names like (a, b)")
        names.append(item.name)
    return tuple(names)


def as_words(prop: Property, where: str) -> tuple[str, ...]:
    """Names or strings, one or a list: ``(silver, 'sales')``."""
    words = []
    for item in _items(_value(prop, where)):
        word = _word(item)
        if word is None:
            raise _bad(prop, where, "a word or a list of words like ('a', 'b')")
        words.append(word)
    return tuple(words)


def as_model_names(prop: Property, where: str) -> tuple[str, ...]:
    """Table or model names (``db.t``, ``(a.b, c.d)``), lowercased."""
    names = []
    for item in _items(_value(prop, where)):
        if isinstance(item, exp.Column) and all(isinstance(p, exp.Identifier) for p in item.parts):
            names.append(".".join(p.name.lower() for p in item.parts))
        elif isinstance(item, exp.Literal) and item.is_string:
            names.append(item.this.lower())
        else:
            raise _bad(prop, where, "a table name or a list of them like (db.a, db.b)")
    return tuple(names)


def as_text_mapping(prop: Property, where: str) -> tuple[tuple[str, str], ...]:
    """``(col = 'text', ...)`` as ``((col, text), ...)``."""
    return tuple((key, _text(value, prop, where)) for key, value in _pairs(prop, where))


def as_words_mapping(prop: Property, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(col = ('a', 'b'), ...)`` as ``((col, (a, b)), ...)``."""
    out = []
    for key, value in _pairs(prop, where):
        words = tuple(_word(item) for item in _items(value))
        if any(w is None for w in words):
            raise _bad(prop, where, "(column = ('tag', ...), ...)")
        out.append((key, words))
    return tuple(out)


def as_literal_mapping(prop: Property, where: str) -> tuple[tuple[str, str], ...]:
    """``(key = value, ...)`` with literal values, as ``((key, value-as-text), ...)``."""
    out = []
    for key, value in _pairs(prop, where):
        if isinstance(value, exp.Literal):
            out.append((key, value.this))
        elif isinstance(value, exp.Boolean):
            out.append((key, "true" if value.this else "false"))
        else:
            raise _bad(prop, where, "(key = 'value', ...) with literal values")
    return tuple(out)


def as_column_types(prop: Property, where: str) -> tuple[tuple[str, str], ...]:
    """``(col TYPE, ...)`` as ``((col, SPARK TYPE), ...)``; types are read in ``dialect`` later, Spark here."""
    try:
        schema = sqlglot.parse_one(f"CREATE TABLE t {prop.text}", read="spark").this
    except SQLGLOT_ERRORS:
        schema = None
    defs = schema.expressions if isinstance(schema, exp.Schema) else []
    if not defs or not all(isinstance(d, exp.ColumnDef) and d.args.get("kind") for d in defs):
        raise _bad(prop, where, "a list of columns with types like (id INT, name STRING)")
    return tuple((d.name, d.args["kind"].sql("spark")) for d in defs)


def as_expressions(prop: Property, where: str) -> tuple[str, ...]:
    """Columns or expressions (``(ds, days(ts))``) as Spark SQL text."""
    items = _items(_value(prop, where))
    if not items or any(isinstance(i, (exp.Literal, exp.Tuple)) for i in items):
        raise _bad(prop, where, "a column, an expression, or a list of them like (ds, region)")
    return tuple(i.sql("spark") for i in items)


def as_calls(prop: Property, where: str) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """Audit calls: ``(not_null(columns := (a, b)), unique_values(columns := (id)))``.

    Each call is ``(name, ((argument, value-sql), ...))``; a bare name is a call without arguments.
    """
    calls = []
    for item in _items(_value(prop, where)):
        if isinstance(item, exp.Column) and not item.table:
            calls.append((item.name.lower(), ()))
            continue
        if not isinstance(item, (exp.Anonymous, exp.Func)):
            raise _bad(prop, where, "a list of audit calls like (not_null(columns := (id)))")
        name = item.name if isinstance(item, exp.Anonymous) else item.sql_name()
        args = []
        for arg in item.expressions if isinstance(item, exp.Anonymous) else item.args.values():
            if isinstance(arg, (exp.PropertyEQ, exp.EQ, exp.Kwarg)):
                args.append((arg.this.name.lower(), arg.expression.sql("spark")))
            elif arg is not None:
                raise _bad(prop, where, "audit arguments written name := value")
        calls.append((name.lower(), tuple(args)))
    return tuple(calls)


def as_arguments(prop: Property, where: str) -> tuple[tuple[str, str], ...]:
    """Named values ``(threshold := 0, column := id)`` as ``((name, value-sql), ...)``, as audit calls pass them."""
    return tuple((key.lower(), value.sql("spark")) for key, value in _pairs(prop, where))


def as_dialect(prop: Property, where: str) -> str:
    """A sqlglot dialect name, lowercased."""
    name = as_string(prop, where).lower()
    try:
        Dialect.get_or_raise(name)
    except ValueError:
        raise ModelDefinitionError(
            f"{where}: {prop.at}: dialect {name!r} is unknown; use a sqlglot dialect such as spark, databricks, "
            "duckdb, postgres, snowflake, bigquery or trino"
        ) from None
    return name


def as_timezone(prop: Property, where: str) -> str:
    """An IANA time zone name such as 'Europe/Berlin'."""
    name = as_string(prop, where)
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ModelDefinitionError(
            f"{where}: {prop.at}: {prop.key} {name!r} is not a time zone; use an IANA name like 'America/New_York'"
        ) from None
    return name


def _value(prop: Property, where: str) -> exp.Expression:
    if prop.value is None:
        raise ModelDefinitionError(f"{where}: {prop.at}: cannot parse the value of {prop.key!r} ({prop.text!r}): {prop.error}")
    return prop.value


def _items(v: exp.Expression) -> list[exp.Expression]:
    if isinstance(v, (exp.Tuple, exp.Array)):
        return list(v.expressions)
    if isinstance(v, exp.Paren):
        return [v.this]
    return [v]


def _word(v: exp.Expression) -> str | None:
    if isinstance(v, exp.Literal) and v.is_string:
        return v.this
    if isinstance(v, (exp.Column, exp.Identifier, exp.Var)) and "." not in v.sql():
        return v.name
    return None


def _pairs(prop: Property, where: str) -> list[tuple[str, exp.Expression]]:
    pairs = []
    for item in _items(_value(prop, where)):
        if not isinstance(item, (exp.EQ, exp.PropertyEQ)) or _word(item.this) is None:
            raise _bad(prop, where, "a list of key = value pairs like (a = 'x', b = 'y')")
        pairs.append((_word(item.this), item.expression))
    return pairs


def _text(v: exp.Expression, prop: Property, where: str) -> str:
    if isinstance(v, exp.Literal) and v.is_string:
        return v.this
    raise _bad(prop, where, "(name = 'text', ...) with quoted texts")


def _bad(prop: Property, where: str, expected: str) -> ModelDefinitionError:
    return ModelDefinitionError(f"{where}: {prop.at}: {prop.key} must be {expected}, got {prop.text!r}")
