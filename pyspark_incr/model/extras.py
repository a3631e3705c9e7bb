"""What SQLMesh models carry besides their query and kind: ``session_properties``,
``virtual_properties`` and the ``ON_VIRTUAL_UPDATE_BEGIN; ...; ON_VIRTUAL_UPDATE_END;`` statements.

None of them changes a row, so all three are metadata (``fingerprint``).

>>> from pyspark_incr.model.block import parse_block
>>> props = parse_block("MODEL (name a.b, session_properties (spark.sql.shuffle.partitions = 4, "
...                     "'spark.sql.ansi.enabled' = false))").properties
>>> as_settings(props["session_properties"], "model a.b")
(('spark.sql.shuffle.partitions', '4'), ('spark.sql.ansi.enabled', 'false'))
"""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from pyspark_incr.errors import ModelDefinitionError, ModelSyntaxError
from pyspark_incr.model import macros
from pyspark_incr.model.block import Property
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS
from pyspark_incr.model.values import _bad, _items, _value

#: A configuration or property key: ``spark.sql.shuffle.partitions``, ``delta.appendOnly``, ``team``.
_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
#: virtual_properties keys Spark keeps for itself on a view (CREATE VIEW refuses them in TBLPROPERTIES).
_RESERVED = ("location", "owner", "provider", "external", "is_managed_location")
#: virtual_properties' key for the view's COMMENT (Spark keeps ``comment`` out of TBLPROPERTIES).
VIEW_COMMENT = "comment"
BEGIN, END = "ON_VIRTUAL_UPDATE_BEGIN", "ON_VIRTUAL_UPDATE_END"
#: How ``@this_model`` stands in a stored on_virtual_update statement, as a table and as a value.
THIS_MODEL_MARKS = (macros.PREFIX + macros.THIS_MODEL, "${" + macros.THIS_MODEL + "}")


def as_settings(prop: Property, where: str) -> tuple[tuple[str, str], ...]:
    """``(key = value, ...)``: dotted keys bare or quoted, literal values (a bare word counts), each key once."""
    out: dict[str, str] = {}
    expected = "(key = value, ...) with literal values, like (spark.sql.shuffle.partitions = 4)"
    for item in _items(_value(prop, where)):
        if not isinstance(item, (exp.EQ, exp.PropertyEQ)):
            raise _bad(prop, where, expected)
        key, value = _key(item.this), _literal(item.expression)
        if key is None or value is None:
            raise _bad(prop, where, expected)
        if key in out:
            raise ModelDefinitionError(f"{where}: {prop.at}: {prop.key} sets {key} twice; keep one")
        out[key] = value
    return tuple(out.items())


def as_view_properties(prop: Property, where: str) -> tuple[tuple[str, str], ...]:
    """``virtual_properties``: TBLPROPERTIES of the environment's view (``comment`` becomes its COMMENT)."""
    settings = as_settings(prop, where)
    for key, _ in settings:
        if key.lower() == "creatable_type":
            raise ModelDefinitionError(f"{where}: {prop.at}: virtual_properties creatable_type: Spark views have no "
                                       "creatable type (SECURE, MATERIALIZED ...); remove it")
        if key.lower() in _RESERVED:
            raise ModelDefinitionError(f"{where}: {prop.at}: virtual_properties {key} is reserved by Spark and cannot "
                                       "be set on a view; remove it")
    return settings


def view_properties(model: Any) -> tuple[str | None, dict[str, str]]:
    """The environment view's comment (None: the model's description) and TBLPROPERTIES from virtual_properties."""
    props = dict(getattr(model, "virtual_properties", ()))
    comment = next((props.pop(k) for k in list(props) if k.lower() == VIEW_COMMENT), None)
    return comment, props


def _key(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Literal) and node.is_string:
        text = node.this
    elif isinstance(node, (exp.Column, exp.Dot, exp.Identifier, exp.Var)):
        text = node.sql("spark")
    else:
        return None
    return text if _KEY.fullmatch(text) else None


def _literal(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Literal):
        return node.this
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return "-" + node.this.this
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, (exp.Column, exp.Identifier, exp.Var)) and "." not in node.sql("spark"):
        return node.name
    return None


# --------------------------------------------------------------------------- ON_VIRTUAL_UPDATE


def split_virtual_update(text: str, first_line: int, where: str) -> tuple[str, str, int]:
    """``text`` (what follows the MODEL block) without its ON_VIRTUAL_UPDATE section; the section's statements
    (blank-padded to their column); the line they start on (0 without a section).

    >>> query, section, line = split_virtual_update("SELECT 1 AS x;\\nON_VIRTUAL_UPDATE_BEGIN; GRANT SELECT ON "
    ...                                             "@this_model TO r;\\nON_VIRTUAL_UPDATE_END;", 3, "model m")
    >>> query, virtual_update_statements(section, line, {}, "model m")
    ('SELECT 1 AS x;', (('GRANT SELECT ON __incr_macro__this_model TO r', 'line 4, column 26'),))
    """
    tokens = Dialect.get_or_raise("spark").tokenize(text) if BEGIN.lower() in text.lower() else []
    marks = [t for t in tokens if t.token_type == TokenType.VAR and t.text.upper() in (BEGIN, END)]
    if not marks:
        return text, "", 0
    begin = marks[0]
    at = macros.at_offset(text, begin.start, first_line)
    if begin.text.upper() != BEGIN or len(marks) != 2 or marks[1].text.upper() != END:
        raise ModelDefinitionError(f"{where}: {at}: write the statements run on virtual update as "
                                   f"{BEGIN}; <statements>; {END}; once, after the query")
    end = marks[1]
    after = tokens[tokens.index(end) + 1:]
    if any(t.token_type != TokenType.SEMICOLON for t in after):
        raise ModelDefinitionError(f"{where}: {macros.at_offset(text, end.start, first_line)}: nothing may follow "
                                   f"{END}; move the statements inside the section or before the query")
    following = tokens[tokens.index(begin) + 1]
    body_start = following.end + 1 if following.token_type == TokenType.SEMICOLON else begin.end + 1
    line = first_line + text.count("\n", 0, body_start)
    column = body_start - (text.rfind("\n", 0, body_start) + 1)
    return text[:begin.start].rstrip(), " " * column + text[body_start:end.start], line


def virtual_update_statements(section: str, line: int, variables: dict[str, Any], where: str,
                              blueprint: dict[str, Any] | None = None) -> tuple[tuple[str, str], ...]:
    """Each statement of an ON_VIRTUAL_UPDATE section as ``(Spark SQL, 'line L, column C')``, project
    variables and those of the model's ``blueprint`` entry substituted and ``@this_model`` kept for
    :func:`render_statement`.

    Only parse-time macros (variables, @VAR) and ``@this_model`` are allowed: the statements run when a
    view is swapped, outside any interval.
    """
    hidden = macros.hide_macros(section)
    scope = {**variables, **(blueprint or {})}
    refusal = macros.unsupported_call(hidden, line, scope, where)
    if refusal is not None:
        raise refusal
    out = []
    for start, piece in _pieces(hidden):
        at = macros.at_offset(hidden, start, line)
        # blanks in place of the statements before it: parsed offsets stay those of ``hidden`` (for locator)
        padded = re.sub(r"[^\n]", " ", hidden[:start]) + piece
        try:
            statement = sqlglot.parse_one(padded, read="spark")
        except SQLGLOT_ERRORS as e:
            raise ModelSyntaxError(f"{where}: {at}: on_virtual_update statement {macros.unhide(piece)!r} does not "
                                   f"parse: {str(e).splitlines()[0]}") from None
        if not isinstance(statement, exp.Command):
            statement = macros.resolve_variables([statement], variables, where, macros.locator(hidden, line),
                                                 blueprint=blueprint).transform(_words(scope))
        _only_this_model(statement, piece, where, at)
        out.append((statement.sql("spark") if not isinstance(statement, exp.Command) else piece, at))
    return tuple(out)


def render_statement(statement: str, view: exp.Table) -> str:
    """A stored on_virtual_update statement with ``@this_model`` as the environment's view."""
    name = view.sql("spark")
    table_mark, value_mark = THIS_MODEL_MARKS
    parsed = sqlglot.parse_one(statement, read="spark")
    if isinstance(parsed, exp.Command):  # text Spark parses but sqlglot does not: only the name to put in
        return statement.replace(table_mark, name)

    def put(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and node.name == table_mark and not node.db:
            return exp.to_table(name, dialect="spark").copy() if not node.alias else \
                exp.alias_(exp.to_table(name, dialect="spark"), node.alias, table=True)
        if isinstance(node, exp.Parameter) and node.name == macros.THIS_MODEL:
            return exp.Literal.string(name)
        return node

    return parsed.transform(put).sql("spark")


def _words(variables: dict[str, Any]) -> Any:
    """A transform putting variables where sqlglot reads ``@name`` as a bare word (a TBLPROPERTIES value) or as
    a name (``GRANT ... TO ROLE @owner``, ``@schema.table``)."""
    values = {k.lower(): v for k, v in variables.items()}

    def put(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.Var, exp.Identifier)) and node.name.startswith(macros.PREFIX):
            name = node.name[len(macros.PREFIX):].lower()
            if name in values and isinstance(node, exp.Identifier):
                value = values[name]
                return exp.to_identifier(value.name if isinstance(value, exp.Expression) else str(value))
            if name in values:
                return exp.convert(values[name])
        return node

    return put


def _pieces(hidden: str) -> list[tuple[int, str]]:
    """The statements of ``hidden`` split at top-level semicolons, each with its offset."""
    tokens = Dialect.get_or_raise("spark").tokenize(hidden)
    pieces, start = [], None
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if start is not None:
                pieces.append((start, hidden[start:token.start]))
            start = None
        elif start is None:
            start = token.start
    if start is not None:
        pieces.append((start, hidden[start:]))
    return [(s, p.strip()) for s, p in pieces if p.strip()]


def _only_this_model(statement: exp.Expression, piece: str, where: str, at: str) -> None:
    """Refuse a runtime macro other than @this_model: a view swap has no interval to give it."""
    used = set(re.findall(rf"{macros.PREFIX}(\w+)", piece)) if isinstance(statement, exp.Command) else (
        {p.name for p in statement.find_all(exp.Parameter)}
        | {n for t in statement.find_all(exp.Table) if (n := macros.macro_table(t))}
        | {v.name[len(macros.PREFIX):] for v in statement.find_all(exp.Var) if v.name.startswith(macros.PREFIX)})
    others = sorted(u for u in used if u.lower() != macros.THIS_MODEL)
    if others:
        raise ModelDefinitionError(f"{where}: {at}: on_virtual_update statements may use project variables and "
                                   f"@this_model only, not @{others[0]} (they run when the view is updated, "
                                   "outside any interval)")
