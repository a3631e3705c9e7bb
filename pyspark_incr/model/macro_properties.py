"""Macros in MODEL properties, rendered as SQLMesh renders a MODEL block: ``cron @cron``, ``owner @owner``,
``kind ... (time_column @tcol)``, ``audits (not_null(columns := [@key]))``, ``physical_properties (x = @v)``.

A property is rendered with the project's variables and the model's blueprint entry (its variables win),
macro functions and the project's Python macros, before its reader sees it. Properties naming only runtime
macros (``merge_filter target.ds >= @start_ds``) keep their text: they are rendered when a batch runs.
Positions in errors are the definition's own.

>>> from pyspark_incr.model.block import parse_block
>>> text = "MODEL (name @c.t, cron @every, owner @IF(1 > 0, 'ann', 'bob'))"
>>> props, _ = render(dict(parse_block(text).properties), text, {"every": "@hourly"}, {"c": exp.column("s")},
...                   {}, "m.sql")
>>> [(p.key, p.text) for p in props.values()]
[('name', 's.t'), ('cron', "'@hourly'"), ('owner', "'ann'")]
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model import macro_parse, macros
from pyspark_incr.model.block import KindSpec, Property
from pyspark_incr.model.macro_eval import MacroEvaluator, NeedsRuntime
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS

#: Properties whose macros may be left for the run (SQLMesh renders them when a batch runs): the MERGE's.
RUN_TIME = frozenset({"merge_filter", "when_matched"})
#: The cron shortcuts (SQLMesh's): ``cron @daily`` unquoted is a cron to quote, not a variable.
CRON_SHORTCUTS = frozenset({"@midnight", "@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@annually"})
#: MERGE clauses (``when_matched``) are no expression: they are rendered inside a MERGE statement.
_MERGE = "MERGE INTO target USING source ON TRUE"
_NAMES = re.compile(rf"{macros.PREFIX}(\w+)|{macros.BRACE}(\w+){macros.BRACE_END}", re.IGNORECASE)


def render(props: dict[str, Any], text: str, variables: Mapping[str, Any], blueprint: Mapping[str, Any],
           python: Mapping[str, Callable[..., Any]], where: str) -> tuple[dict[str, Any], set[str]]:
    """``props`` (a MODEL block's, ``text`` its definition) with their macros rendered; and the names of the
    Python macros they called (their files travel with the model). A property rendered to nothing
    (``owner @IF(false, 'x')``) is dropped, as SQLMesh drops it."""
    used: set[str] = set()
    out: dict[str, Any] = {}
    for key, prop in props.items():
        if isinstance(prop, KindSpec):
            inner = {k: _rendered(p, text, variables, blueprint, python, where, used) for k, p in prop.properties.items()}
            prop = KindSpec(prop.name, {k: p for k, p in inner.items() if p is not None}, prop.line, prop.col)
        elif isinstance(prop, Property):
            prop = _rendered(prop, text, variables, blueprint, python, where, used)
        if prop is not None:
            out[key] = prop
    return out, used


def _rendered(prop: Property, text: str, variables: Mapping[str, Any], blueprint: Mapping[str, Any],
              python: Mapping[str, Callable[..., Any]], where: str, used: set[str]) -> Property | None:
    if "@" not in prop.text:  # most properties: no tokenizing
        return prop
    padded = padded_text(prop, text)
    hidden = macros.hide_macros(padded)
    names = {(a or b).lower() for a, b in _NAMES.findall(hidden)}
    if not names - macros.RUNTIME:  # none, or only the runtime macros each reader already knows
        return prop
    if _unquoted_cron(prop.text, {*variables, *blueprint}):  # its reader says to quote it
        return prop
    clauses = prop.key == "when_matched"
    first = prop.line
    if clauses:  # on the line before, so the clauses keep their line and column
        hidden, first = f"{_MERGE}\n{_unwrapped(hidden)}", prop.line - 1
    evaluator = MacroEvaluator(variables=variables, blueprint=blueprint, python=python, where=where,
                               locate=macros.locator(hidden, first))
    try:
        parsed = macro_parse.parse(hidden, "spark")
    except SQLGLOT_ERRORS:  # its reader says why it cannot be read
        return prop
    if len(parsed) != 1 or parsed[0] is None or clauses and not isinstance(parsed[0], exp.Merge):
        return prop
    try:
        value = evaluator.transform(parsed[0])
    except NeedsRuntime as e:
        raise ModelDefinitionError(f"{where}: {prop.at}: {prop.key} cannot use @{e.args[0]}, which is only known "
                                   "when a batch runs; use project or blueprint variables there") from None
    used |= evaluator.used
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else exp.Tuple(expressions=value)
    if value is None:
        return None
    _refuse_deferred(value, prop, where)
    whens = value.args.get("whens") if clauses else None
    if clauses and not whens:
        return prop
    shown = " ".join(w.sql("spark") for w in whens.expressions) if whens else value.sql("spark")
    try:
        parsed_value = None if clauses else sqlglot.parse_one(shown, read="spark")
    except SQLGLOT_ERRORS:
        parsed_value = None
    return Property(prop.key, parsed_value, shown, prop.line, prop.col)


def _unquoted_cron(text: str, known: set[str]) -> bool:
    """``cron @daily``: a cron shortcut left unquoted, not a variable (SQLMesh's shortcuts)."""
    word = text.strip().lower()
    return word in CRON_SHORTCUTS and word[1:] not in {k.lower() for k in known}


def _refuse_deferred(value: exp.Expression, prop: Property, where: str) -> None:
    """A macro call left for the run (it needs ``@start_ds``'s value) only where SQLMesh renders at run time."""
    if prop.key in RUN_TIME:
        return
    for node in value.walk():
        if isinstance(node, exp.Anonymous) and node.name.lower().startswith(macros.PREFIX):
            raise ModelDefinitionError(
                f"{where}: {prop.at}: {prop.key} must be known when the model is parsed, but "
                f"@{node.name[len(macros.PREFIX):]}(...) needs a value known only when a batch runs "
                "(@start_ds, @execution_ds, ...); use project or blueprint variables there")


def _unwrapped(hidden: str) -> str:
    """``(WHEN MATCHED ...)`` without its parentheses (blanks in their place)."""
    inner = hidden.strip()
    if inner.startswith("(") and inner.endswith(")"):
        start, end = hidden.index("("), hidden.rindex(")")
        return hidden[:start] + " " + hidden[start + 1:end] + " " + hidden[end + 1:]
    return hidden


def padded_text(prop: Property, text: str) -> str:
    """The property's value text preceded by as many spaces as stand before it on its line, so positions in
    it are columns of the definition."""
    lines = text.splitlines()
    line = lines[prop.line - 1] if 0 < prop.line <= len(lines) else ""
    col = line.find(prop.text.split("\n", 1)[0], prop.col - 1 + len(prop.key))
    return " " * max(col, 0) + prop.text
