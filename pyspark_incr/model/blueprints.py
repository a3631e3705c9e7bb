"""Blueprints: one model file standing for several models, as SQLMesh's ``blueprints`` property.

A SQL model's MODEL block may hold ``blueprints ((customer := c1, field_a := x), (customer := c2, ...))``,
or a macro call giving such a list (``@EACH(@values, x -> (customer := schema_@x))``, a Python
macro returning the text). Each entry makes one model: its variables render the name
(``name @customer.some_table``), every other property (:mod:`pyspark_incr.model.macro_properties`),
the query and the statements around it as project variables do, and take precedence over them;
``@BLUEPRINT_VAR`` reads only them, ``@VAR`` only the project's. A Python model passes
``blueprints=[{...}, ...]`` to ``@model`` (see :mod:`pyspark_incr.model.python_model`).

Each expanded model keeps its entry in its context under :data:`KEY` (variable -> SQL text for a
SQL model), so :func:`pyspark_incr.model.definition.reparse` rebuilds that one model from the
stored file alone; models without blueprints keep the context they had.

>>> text = '''MODEL (name @customer.t, kind FULL,
...   blueprints ((customer := c1, field_a := x), (customer := c2, field_a := 'y')));
... SELECT @field_a AS a FROM @customer.src'''
>>> entries(text, "m.sql", {})
[{'customer': 'c1', 'field_a': 'x'}, {'customer': 'c2', 'field_a': "'y'"}]
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Mapping

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model import macro_parse, macros
from pyspark_incr.model.block import Property, parse_block
from pyspark_incr.model.macro_eval import MacroEvaluator, NeedsRuntime
from pyspark_incr.model.macro_properties import padded_text
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS

#: The key of a blueprint model's context JSON: its entry's variables.
KEY = "blueprint"
#: Cheap test before tokenizing a definition a second time.
_MENTIONED = re.compile(r"\bblueprints\b", re.IGNORECASE)
_SHAPE = ("write blueprints ((customer := customer1, field_a := x), (customer := customer2, field_a := z)), "
          "or a macro call giving such a list")


def entries(text: str, source: str, variables: Mapping[str, Any] | None,
            python: Mapping[str, Callable[..., Any]] | None = None,
            dialect: str = "spark") -> list[dict[str, str]] | None:
    """The ``blueprints`` entries of a SQL definition, each ``{variable: SQL text}``; None when it has none.

    ``variables`` and ``python`` (the project's Python macros by name) serve a ``blueprints`` macro call.
    """
    if not _MENTIONED.search(text):
        return None
    where = source if source != "registry" else "model definition"
    prop = parse_block(text, where).properties.get("blueprints")
    if not isinstance(prop, Property):
        return None
    value = _evaluated(prop, text, variables or {}, python or {}, dialect, where)
    if isinstance(value, exp.Paren):
        listed = [value.unnest()]
    elif isinstance(value, (exp.Tuple, exp.Array)):
        listed = list(value.expressions)
    else:
        raise ModelDefinitionError(f"{where}: {prop.at}: blueprints must be a list of entries, got "
                                   f"{_shown(value)}; {_SHAPE}")
    if not listed:
        raise ModelDefinitionError(f"{where}: {prop.at}: blueprints is empty; give one entry per model, or remove it")
    return [_entry(e, i, prop, where) for i, e in enumerate(listed, 1)]


def _evaluated(prop: Property, text: str, variables: Mapping[str, Any], python: Mapping[str, Callable[..., Any]],
               dialect: str, where: str) -> exp.Expression | None:
    """The property's value with its macros evaluated (a macro call giving the entries, ``@x`` inside them)."""
    hidden = macros.hide_macros(padded_text(prop, text))
    try:
        statements = [s for s in macro_parse.parse(hidden, dialect) if s is not None]
    except SQLGLOT_ERRORS:
        raise ModelDefinitionError(f"{where}: {prop.at}: cannot read blueprints {prop.text!r}; {_SHAPE}") from None
    if len(statements) != 1:
        raise ModelDefinitionError(f"{where}: {prop.at}: blueprints must be one list; {_SHAPE}")
    evaluator = MacroEvaluator(dialect=dialect, variables=variables, python=python, where=where,
                               locate=macros.locator(hidden, prop.line))
    try:
        value = evaluator.transform(statements[0])
    except NeedsRuntime as e:
        raise ModelDefinitionError(f"{where}: {prop.at}: blueprints cannot use @{e.args[0]}, which is only known "
                                   "when a batch runs; give the entries as constants") from None
    if isinstance(value, list):  # a macro giving several entries (@EACH)
        value = value[0] if len(value) == 1 else exp.Tuple(expressions=value)
    return value


def _entry(entry: exp.Expression, number: int, prop: Property, where: str) -> dict[str, str]:
    """One entry's variables: ``(name := value, ...)`` or a single ``name := value``."""
    if isinstance(entry, (exp.Paren, exp.PropertyEQ, exp.EQ)):
        pairs = [entry.unnest()]
    elif isinstance(entry, (exp.Tuple, exp.Array)):
        pairs = list(entry.expressions)
    else:
        pairs = [entry]
    out: dict[str, str] = {}
    for pair in pairs:
        key = pair.left if isinstance(pair, (exp.PropertyEQ, exp.EQ)) else None
        if not isinstance(key, (exp.Identifier, exp.Column)) or isinstance(key, exp.Column) and key.table:
            raise ModelDefinitionError(f"{where}: {prop.at}: blueprint {number} ({_shown(entry)}) must be "
                                       f"name := value pairs; {_SHAPE}")
        name = key.name.lower()
        if name in out:
            raise ModelDefinitionError(f"{where}: {prop.at}: blueprint {number} gives {name} twice; give it once")
        out[name] = pair.right.sql("spark")
    return out


def scope(props: dict[str, Any], blueprint: Mapping[str, str] | None, where: str) -> dict[str, exp.Expression]:
    """The variables of ``blueprint`` (a SQL model's entry, from :func:`entries`) as SQL values; takes
    ``blueprints`` out of ``props`` (:mod:`.macro_properties` renders the name and the other properties with them).

    A definition with blueprints parsed without an entry is refused: it stands for several models.
    """
    declared = props.pop("blueprints", None)
    if blueprint is None:
        if declared is not None:
            raise ModelDefinitionError(
                f"{where}: {declared.at}: a definition with blueprints stands for several models, which only a "
                "project's models/ directory can hold; put the file there, or write one definition per model")
        return {}
    return {k: sqlglot.parse_one(v, read="spark") for k, v in blueprint.items()}


def stored_variables(context: Mapping[str, Any]) -> dict[str, exp.Expression]:
    """The blueprint variables a SQL model's stored context keeps, as SQL values (``{}`` without blueprints):
    what its macros left for the run read."""
    return {k: sqlglot.parse_one(v, read="spark") for k, v in (context.get(KEY) or {}).items()}


def _rendered_name(prop: Property, text: str, variables: Mapping[str, Any], where: str) -> Property:
    """``name @customer.some_table`` with the blueprint's variables in it."""
    padded = padded_text(prop, text)
    hidden = macros.hide_macros(padded)
    if hidden == padded:
        return prop
    evaluator = MacroEvaluator(variables=variables, where=where, locate=macros.locator(hidden, prop.line))
    try:
        parsed = macro_parse.parse(hidden, "spark")[0]
        rendered = evaluator.transform(parsed)
    except (NeedsRuntime, *SQLGLOT_ERRORS):
        raise ModelDefinitionError(f"{where}: {prop.at}: cannot render the model name {prop.text!r} with the "
                                   "blueprint's variables; write it like @customer.some_table") from None
    shown = rendered.sql("spark") if isinstance(rendered, exp.Expression) else prop.text
    try:
        value = sqlglot.parse_one(shown, read="spark")
    except SQLGLOT_ERRORS:
        value = None
    return Property(prop.key, value, shown, prop.line, prop.col)


def distinct(models: list[Any]) -> list[Any]:
    """``models`` (one per blueprint) when their names differ; else the refusal, naming the file."""
    seen: dict[str, int] = {}
    for number, model in enumerate(models, 1):
        if model.name in seen:
            raise ModelDefinitionError(
                f"{model.located}: blueprints {seen[model.name]} and {number} both make model {model.name}; the "
                "name must use a blueprint variable whose value differs between entries, e.g. "
                "name @customer.some_table")
        seen[model.name] = number
    return models


def python_entries(given: Any, where: str, variables: Mapping[str, Any],
                   python: Mapping[str, Callable[..., Any]] | None = None) -> list[dict[str, Any]]:
    """A Python model's ``blueprints=``: a list of dicts, or SQL text (``"@EACH(@values, x -> (c := x))"``,
    ``"@gen_blueprints()"`` calling a Python macro of the project: ``python``, by name), as JSON-safe
    ``{variable: value}`` entries (what its context stores)."""
    if isinstance(given, str):
        text = f"MODEL (name a.b, blueprints {given})"
        listed = [{k: _python(sqlglot.parse_one(v, read="spark")) for k, v in e.items()}
                  for e in entries(text, where, variables, python) or []]
    elif isinstance(given, (list, tuple)) and all(isinstance(e, dict) for e in given):
        listed = [{str(k).lower(): v for k, v in e.items()} for e in given]
    else:
        raise ModelDefinitionError(f"{where}: @model(blueprints=...) must be a list of dicts, e.g. "
                                   "blueprints=[{'customer': 'customer1'}, {'customer': 'customer2'}]")
    if not listed:
        raise ModelDefinitionError(f"{where}: @model(blueprints=...) is empty; give one dict per model")
    return json.loads(json.dumps(listed, default=str))


def _python(value: exp.Expression) -> Any:
    """A SQL blueprint value as Python: a string's text, a number, a bare name's text, else its SQL."""
    if isinstance(value, exp.Literal):
        if value.is_string:
            return value.this
        number = float(value.this)
        return int(number) if number.is_integer() and "." not in value.this else number
    if isinstance(value, exp.Boolean):
        return value.this
    if isinstance(value, exp.Column) and not value.table:
        return value.name
    return value.sql("spark")


def render_name(name: str, entry: Mapping[str, Any], where: str) -> str:
    """A Python model's name (``"@{customer}.some_table"``) with a blueprint's variables in it."""
    prop = Property("", None, name, 1, 1)
    try:
        return _rendered_name(prop, name, entry, where).text
    except ModelDefinitionError as e:  # positions are in the name's text, not in the file
        raise type(e)(re.sub(r"line 1, (column \d+)", r"\1 of the name", str(e), count=1)) from None


def _shown(node: Any) -> str:
    text = node.sql("spark") if isinstance(node, exp.Expression) else str(node)
    return repr(text[:60])
