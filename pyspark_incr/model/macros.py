"""SQLMesh macros in a model query: how they are hidden from the SQL parser, located and named in errors.

A model's query is evaluated by :mod:`pyspark_incr.model.macro_eval` (macro functions, Python
macros); :func:`resolve_variables` is the variables-only substitution of statements that take
no macro functions (``on_virtual_update``).

Two stages. At parse time, ``@DEF(name, value)`` statements and project
variables (``@name``, ``@VAR('name'[, default])``) are substituted, because they
never change between runs (and so belong to the data fingerprint). What remains
are the runtime macros: the time macros (``@start_ds``, ...) and ``@this_model``,
substituted by :mod:`pyspark_incr.model.render` for each interval, and the macros
only some kinds offer (INCREMENTAL_BY_CURSOR's ``@last_value`` and ``@is_backfill``).

>>> import sqlglot
>>> stmts = sqlglot.parse(hide_macros("@DEF(n, 3); SELECT @n AS n, @VAR('region', 'eu') AS r, @start_ds AS d"), read="duckdb")
>>> resolve_variables(stmts, {}, "model m").sql("spark")
"SELECT 3 AS n, 'eu' AS r, ${start_ds} AS d"
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from pyspark_incr.errors import ModelDefinitionError, UnknownMacroError

#: Prefix of the identifiers that stand in for ``@macro`` while a query is parsed in its own dialect.
PREFIX = "__incr_macro__"
#: What ``@{`` and ``}`` of an interpolation ``@{name}`` become while a query is parsed.
BRACE, BRACE_END = "__incr_brace__", "__incr_close__"
THIS_MODEL = "this_model"
_SUFFIXES = ("ds", "ts", "tstz", "date", "dt", "dtntz", "millis", "epoch", "hour")
#: Macros only INCREMENTAL_BY_CURSOR offers: its high-water mark and whether this load starts from scratch.
CURSOR = frozenset({"last_value", "is_backfill"})
#: Names of the macros substituted at run time (those of :data:`CURSOR` only in the kinds offering them).
RUNTIME = frozenset({f"{p}_{s}" for p in ("start", "end", "execution") for s in _SUFFIXES}
                    | {THIS_MODEL, "runtime_stage"} | CURSOR)


def hide_macros(text: str) -> str:
    """``@name`` -> a plain identifier, so dialects where ``@`` is an operator (DuckDB's abs) keep macros.

    ``@{name}`` (interpolation into an identifier) becomes :data:`BRACE` ``name`` :data:`BRACE_END`,
    so ``col_@{x}_sum`` stays one identifier token; :func:`unhide` maps the text back.

    >>> hide_macros("SELECT '@x', @start_ds -- @y")
    "SELECT '@x', __incr_macro__start_ds -- @y"
    >>> unhide(hide_macros("SELECT a_@{x}_b"))
    'SELECT a_@{x}_b'
    """
    tokens = Dialect.get_or_raise("spark").tokenize(text)
    out, last = [], 0
    for i, at in enumerate(tokens[:-1]):
        name = tokens[i + 1]
        if at.text != "@" or name.start != at.end + 1:
            continue
        if name.text.isidentifier():
            out += [text[last : at.start], PREFIX]
            last = at.end + 1
        elif name.text == "{" and i + 3 < len(tokens) and tokens[i + 2].text.isidentifier() \
                and tokens[i + 3].text == "}" and tokens[i + 2].start == name.end + 1:
            out += [text[last : at.start], BRACE, tokens[i + 2].text, BRACE_END]
            last = tokens[i + 3].end + 1
    return "".join(out) + text[last:]


def unhide(hidden: str) -> str:
    """The text :func:`hide_macros` was given, from its output."""
    return hidden.replace(BRACE_END, "}").replace(BRACE, "@{").replace(PREFIX, "@")


def resolve_variables(
    statements: list[exp.Expression], project_vars: dict[str, Any], where: str,
    locate: Callable[[exp.Expression], str] | None = None, kind_macros: frozenset[str] = frozenset(),
    blueprint: dict[str, Any] | None = None,
) -> exp.Expression:
    """The one query of ``statements`` with ``@DEF`` and project variables substituted.

    Statements before the query must be ``@DEF(name, value)``; any macro left that is
    not a runtime macro is an error naming it (and, with ``locate``, saying where it stands).
    A kind's own macros (``@last_value``) are runtime macros only when ``kind_macros`` names them,
    so a time-range query using one is refused here rather than rendered with a meaningless value.
    ``blueprint`` (the model's blueprint entry) wins over project variables for ``@name``; ``@VAR`` reads
    project variables only, as in SQLMesh.

    >>> import sqlglot
    >>> q = sqlglot.parse(hide_macros("SELECT * FROM t WHERE c > @last_value"), read="spark")
    >>> resolve_variables(q, {}, "model m", kind_macros=CURSOR).sql("spark")
    'SELECT * FROM t WHERE c > ${last_value}'
    >>> resolve_variables(q, {}, "model m")
    Traceback (most recent call last):
    ...
    pyspark_incr.errors.ModelDefinitionError: model m: @last_value is only available in INCREMENTAL_BY_CURSOR models
    """
    *defs, query = statements
    project = {k.lower(): _literal(v) for k, v in project_vars.items()}
    variables = {**project, **{k.lower(): _literal(v) for k, v in (blueprint or {}).items()}}
    for statement in defs:
        name, value = _definition(statement, where)
        variables[name] = project[name] = value  # @VAR reads @DEF's names too

    def substitute(node: exp.Expression) -> exp.Expression:
        macro = macro_name(node)
        if macro is None:
            return node
        at = locate(node) if locate else ""
        if isinstance(node, exp.Anonymous):
            if macro != "var":
                raise unknown(macro, variables, where, at, kind_macros)
            return _var_call(node, project, where)
        if macro in variables:
            return variables[macro].copy()
        if macro in RUNTIME - CURSOR or macro in kind_macros:
            return exp.Parameter(this=exp.var(macro)) if not isinstance(node, exp.Table) else node
        if macro in CURSOR:
            raise ModelDefinitionError(f"{where}: {at + ': ' if at else ''}@{macro} is only available in "
                                       "INCREMENTAL_BY_CURSOR models")
        raise unknown(macro, variables, where, at, kind_macros)

    return query.transform(substitute)


def is_definition(statement: exp.Expression) -> bool:
    """True for an ``@DEF(...)`` statement."""
    return isinstance(statement, exp.Anonymous) and macro_name(statement) == "def"


def macro_table(node: exp.Expression) -> str | None:
    """The macro a table reference stands for (``FROM @this_model``), else None."""
    return macro_name(node) if isinstance(node, exp.Table) else None


def macro_name(node: exp.Expression) -> str | None:
    """The macro ``node`` stands for (a call, a bare column or an unqualified table named ``@name``), lowercased."""
    if isinstance(node, exp.Anonymous):
        name = node.name
    elif isinstance(node, exp.Column) and not node.table:
        name = node.name
    elif isinstance(node, exp.Table) and not node.db:
        name = node.name
    else:
        return None
    return name[len(PREFIX) :].lower() if name.lower().startswith(PREFIX) else None


def _definition(statement: exp.Expression, where: str) -> tuple[str, exp.Expression]:
    args = statement.expressions if isinstance(statement, exp.Anonymous) else []
    if not is_definition(statement) or len(args) != 2 or not isinstance(args[0], exp.Column):
        raise ModelDefinitionError(
            f"{where}: only @DEF(name, value) statements may come before the query, found {statement.sql()[:60]!r}"
        )
    return args[0].name.lower(), args[1]


def _var_call(node: exp.Anonymous, variables: dict[str, exp.Expression], where: str) -> exp.Expression:
    args = node.expressions
    if not args or not isinstance(args[0], exp.Literal) or not args[0].is_string or len(args) > 2:
        raise ModelDefinitionError(f"{where}: @VAR takes a quoted variable name and an optional default, e.g. @VAR('region', 'eu')")
    name = args[0].this.lower()
    if name in variables:
        return variables[name].copy()
    if len(args) == 2:
        return args[1].copy()
    raise ModelDefinitionError(
        f"{where}: variable {name!r} is not defined; define it under variables: in config.yaml, "
        "with @DEF, or give @VAR a default"
    )


def _literal(value: Any) -> exp.Expression:
    if isinstance(value, exp.Expression):  # a blueprint's value, SQL as written
        return value
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        return exp.Literal.number(value)
    if value is None:
        return exp.Null()
    return exp.Literal.string(str(value))


def locator(hidden: str, first_line: int) -> Callable[..., str]:
    """``(node, offset=0) -> 'line L, column C'`` in the original text, for a query parsed from ``hide_macros``
    output that starts on line ``first_line`` of its definition (``offset``: characters into the node's name)."""

    def at(node: exp.Expression, offset: int = 0) -> str:
        ident = node if isinstance(node, exp.Identifier) else node.this if isinstance(node.this, exp.Identifier) else None
        start = (ident.meta if ident is not None else {}).get("start")
        if start is None and isinstance(node, exp.Anonymous):
            call = re.search(rf"{re.escape(node.name)}\s*\(", hidden, re.IGNORECASE)
            start = call.start() if call else None
        return "" if start is None else at_offset(hidden, start + offset, first_line)

    return at


#: A macro function call (``@EACH(``) or string interpolation (``@{x}``) in ``hide_macros`` output.
_CALL = re.compile(rf"{PREFIX}(\w+)\s*\(|{BRACE}(\w+){BRACE_END}")
#: ``@DEF(name, ...)``: a name the query may call or read.
_DEFINED = re.compile(rf"{PREFIX}DEF\s*\(\s*(\w+)", re.IGNORECASE)


def calls_macro_functions(hidden: str) -> bool:
    """True when ``hidden`` calls a macro function other than @DEF/@VAR, or interpolates ``@{x}``: the text
    as written is then not the SQL that runs, so analysis must read the compiled query.

    >>> calls_macro_functions(hide_macros("SELECT @EACH([a], x -> x) FROM t")), calls_macro_functions(hide_macros(
    ...     "@DEF(n, 1); SELECT @VAR('a', 1), @n, @start_ds FROM t"))
    (True, False)
    """
    return any((m.group(1) or "").lower() not in ("def", "var") for m in _CALL.finditer(hidden))


def unsupported_call(hidden: str, first_line: int, variables: dict[str, Any], where: str,
                     kind_macros: frozenset[str] = frozenset(), known: Iterable[str] = ()) -> UnknownMacroError | None:
    """The refusal of the first call of a macro function in ``hidden`` that is not ``known`` (nor @DEF/@VAR,
    nor a name the text defines with @DEF); for a query that does not parse. Without ``known`` (text that
    takes no macro functions), every ``@{x}`` interpolation is refused too.

    SQLMesh's macro functions may hold syntax no SQL dialect parses, so a query that fails to parse
    is searched for unknown ones first: their name says more than the parser's error.

    >>> unsupported_call(hide_macros("SELECT @NOPE([1], x -> x AS y)"), 3, {}, "model m").args[0][:46]
    'model m: line 3, column 8: unknown macro @NOPE'
    """
    names = {n.lower() for n in (*known, *variables, *_DEFINED.findall(hidden), "def", "var")}
    for match in _CALL.finditer(hidden):
        name = match.group(1) or match.group(2)
        # Where macro functions are evaluated (``known`` given), ``@{x}`` may name a lambda's parameter.
        if match.group(2) and known:
            continue
        if match.group(2) or name.lower() not in names:
            shown = name if match.group(1) else "{" + name + "}"
            return unknown(shown, variables, where, at_offset(hidden, match.start(), first_line), kind_macros,
                            known)
    return None


def at_offset(hidden: str, start: int, first_line: int) -> str:
    """``line L, column C`` of offset ``start`` of ``hidden``, in the text as the user wrote it."""
    line_start = hidden.rfind("\n", 0, start) + 1
    return f"line {first_line + hidden.count(chr(10), 0, start)}, column {len(unhide(hidden[line_start:start])) + 1}"


def unknown(name: str, variables: dict[str, Any], where: str, at: str = "",
            kind_macros: frozenset[str] = frozenset(), known: Iterable[str] = ()) -> UnknownMacroError:
    """The refusal of macro ``name``, listing the macros and variables a query may use there."""
    names = sorted({*(RUNTIME - CURSOR), *kind_macros, *variables, "DEF", "VAR", *known})
    return UnknownMacroError(
        f"{where}: {at + ': ' if at else ''}unknown macro @{name}; known macros and variables: "
        f"{', '.join('@' + k for k in names)}"
    )
