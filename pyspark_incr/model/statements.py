"""Pre- and post-statements of SQL models, as SQLMesh has them.

Statements before a model's query (other than ``@DEF``) are its pre-statements, statements
after it its post-statements (the ON_VIRTUAL_UPDATE section aside, :mod:`pyspark_incr.model.extras`).
They are kept like the query: Spark SQL with the parse-time macros evaluated and the runtime
ones (``@start_ds``, ``@this_model``, ``@runtime_stage``, ...) left for :func:`render`, which a
build calls for each batch (stage ``evaluating``) and once around the creation of a new
version's table (stage ``creating``), as SQLMesh does.

A statement-level ``@IF(condition, statement)`` guards a statement: sqlglot cannot read a
statement as a function argument, so such a piece is swapped for a placeholder before the
model text is parsed (:func:`guard`) and its two halves are parsed apart.

>>> from pyspark_incr.model.definition import parse_model
>>> m = parse_model('''MODEL (name a.b, kind FULL);
... CREATE TEMPORARY VIEW v AS SELECT 1 AS x;
... SELECT x FROM v;
... @IF(@runtime_stage = 'evaluating', ANALYZE TABLE @this_model COMPUTE STATISTICS);''')
>>> [s.sql for s in m.pre_statements], [(s.when, s.sql) for s in m.post_statements], m.depends_on
(['CREATE TEMPORARY VIEW v AS SELECT 1 AS x'], [("${runtime_stage} = 'evaluating'", \
'ANALYZE TABLE __incr_macro__this_model COMPUTE STATISTICS')], ())
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from pyspark_incr.errors import ModelDefinitionError, ModelSyntaxError
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.model import macro_parse, macros
from pyspark_incr.model.extras import _pieces
from pyspark_incr.model.macro_eval import MacroEvaluator, NeedsRuntime
from pyspark_incr.model.render import macro_values, render_query
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS

#: The name of the placeholder call standing for the n-th statement kept apart (:func:`guard`) in the parsed text.
_GUARD = "_incr_s"
#: ``@name`` or ``@{name}`` in the text of a statement sqlglot does not parse (kept as written).
_MACRO_WORD = re.compile(r"@\{(\w+)\}|@(\w+)")
#: Statements that change the table they name: on the model's own table they would falsify its intervals.
_WRITES = (exp.Insert, exp.Merge, exp.Delete, exp.Update, exp.TruncateTable, exp.Drop, exp.Alter)
#: The runtime stages statements are rendered for (SQLMesh's names).
CREATING, EVALUATING = "creating", "evaluating"
#: What a statement of the creating stage renders its time macros with: SQLMesh's epoch day.
CREATION_INTERVAL = Interval(0, 86_400_000)


@dataclass(frozen=True)
class Statement:
    """One pre- or post-statement as stored: ``sql`` (Spark SQL, runtime macros left as in a stored query;
    for text sqlglot does not parse, the text as written), run only when ``when`` (Spark SQL of a
    statement-level ``@IF`` condition, '' for always) holds."""

    sql: str
    when: str = ""
    #: True when ``sql`` is kept as written (``ADD JAR ...``, ``SET k = v``): macros are replaced in the text.
    command: bool = False
    #: The statement's first line as written, for errors.
    shown: str = field(default="", compare=False)

    def fingerprint(self) -> list[str]:
        """What of the statement decides a build (the data fingerprint)."""
        return [self.when, self.sql] if self.when else [self.sql]


@dataclass(frozen=True)
class Split:
    """A model's text after the MODEL block, evaluated: the query and the statements around it."""

    query: exp.Expression
    pre: tuple[Statement, ...] = ()
    post: tuple[Statement, ...] = ()
    #: Names pre-statements create for the session (temporary views, cached tables): not tables the query reads.
    local_names: frozenset[str] = frozenset()
    #: The queries of those views and cached tables: what the query reads through them.
    sources: tuple[exp.Expression, ...] = ()


def guard(hidden: str) -> tuple[str, dict[str, tuple[str, str, str]]]:
    """``hidden`` (``hide_macros`` output) with each statement-level ``@IF(condition, statement)`` and each ``SET``
    statement replaced by a placeholder call of the same length; the placeholders' (condition, statement, text as
    written). A SET's value is text to Spark (``SET k = a/b``), which parsing it as SQL would change.

    >>> text, guarded = guard(macros.hide_macros("SELECT 1; @IF(@runtime_stage = 'evaluating', UNCACHE TABLE c);"))
    >>> text.split(";")[1].strip(), guarded["_incr_s0"][:2]
    ('_incr_s0()', ("__incr_macro__runtime_stage = 'evaluating'", 'UNCACHE TABLE c'))
    """
    if f"{macros.PREFIX}if" not in hidden.lower() and not re.search(r"\bset\b", hidden, re.IGNORECASE):
        return hidden, {}
    guarded: dict[str, tuple[str, str, str]] = {}
    out = hidden
    for start, piece in _pieces(hidden):
        args = _if_arguments(piece) or (("", piece) if re.match(r"set\s", piece, re.IGNORECASE) else None)
        name = f"{_GUARD}{len(guarded)}"
        if args is None or len(name) + 2 > len(piece):
            continue
        guarded[name] = (*args, macros.unhide(piece))
        # same length, newlines kept: offsets and lines of the rest of the text do not move
        blank = re.sub(r"[^\n]", " ", piece[len(name) + 2:])
        out = out[:start] + name + "()" + blank + out[start + len(piece):]
    return out, guarded


def _if_arguments(piece: str) -> tuple[str, str] | None:
    """(condition, statement) of ``@IF(condition, statement)`` when the statement is no expression; else None."""
    tokens = Dialect.get_or_raise("spark").tokenize(piece)
    if len(tokens) < 4 or tokens[0].text.lower() != f"{macros.PREFIX}if" or tokens[1].token_type != TokenType.L_PAREN \
            or tokens[-1].token_type != TokenType.R_PAREN:
        return None
    depth, commas = 0, []
    for i, token in enumerate(tokens[1:-1], start=1):
        depth += token.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET)
        depth -= token.token_type in (TokenType.R_PAREN, TokenType.R_BRACKET)
        if depth == 1 and token.token_type == TokenType.COMMA:
            commas.append(i)
        if depth == 0:  # the call closes before the piece ends: @IF(...) is part of a larger expression
            return None
    # the statement runs from the first comma to the end: its own commas (a SELECT list) are its own
    if not commas or tokens[commas[0] + 1].token_type in (TokenType.SELECT, TokenType.WITH, TokenType.L_PAREN):
        return None
    comma, last = tokens[commas[0]], tokens[-1]
    return piece[tokens[1].end + 1:comma.start].strip(), piece[comma.end + 1:last.start].strip()


def split(statements: list[exp.Expression], guarded: dict[str, tuple[str, str, str]], evaluator: MacroEvaluator,
          where: str) -> Split:
    """The query (the one ``SELECT``-like statement, or the only statement) evaluated after the ``@DEF``
    statements before it, and the statements before and after it evaluated in order."""
    candidates = [i for i, s in enumerate(statements) if not macros.is_definition(s) and _call_name(s) not in guarded]
    # as SQLMesh: the query is the SELECT (or @UNION call), or else the only statement besides @DEF
    positions = [i for i in candidates if isinstance(statements[i], exp.Query)
                 or _call_name(statements[i]) == f"{macros.PREFIX}union"]
    if not positions and len(candidates) == 1 and not guarded:
        positions = candidates
    if len(positions) != 1:
        raise ModelDefinitionError(
            f"{where}: after the MODEL block there must be exactly one query (SELECT ...), optionally with @DEF(...) "
            f"statements and pre- or post-statements around it; found {len(positions)} queries among "
            f"{len(candidates) + len(guarded)} statement(s)")
    at = positions[0]
    defs: list[exp.Expression] = []
    pre: list[Statement] = []
    post: list[Statement] = []
    query: exp.Expression | None = None
    for i, statement in enumerate(statements):
        if macros.is_definition(statement):
            defs.append(statement)
        elif i == at:
            query = evaluator.evaluate_statements([*(d.copy() for d in defs), statement])
        else:
            kept = _statement(statement, guarded, defs, evaluator, where)
            (pre if i < at else post).extend(kept)
    assert query is not None
    made = [m for m in map(_made, pre) if m is not None]
    return Split(query, tuple(pre), tuple(post), frozenset(name for name, _ in made),
                 tuple(source for _, source in made if source is not None))


def _call_name(statement: exp.Expression) -> str:
    return statement.name.lower() if isinstance(statement, exp.Anonymous) else ""


def _statement(statement: exp.Expression, guarded: dict[str, tuple[str, str, str]], defs: list[exp.Expression],
               evaluator: MacroEvaluator, where: str) -> list[Statement]:
    """A statement around the query as stored (none when a guard known at parse time is false)."""
    name = _call_name(statement)
    when, text, shown = "", None, statement.sql("spark")
    if name in guarded:
        condition, text, shown = guarded[name]
        when, keep = _condition(condition, defs, evaluator, where, shown) if condition else ("", True)
        if not keep:
            return []
        statement = _parse(text, evaluator.dialect, where, shown)
    shown = macros.unhide(shown).strip().splitlines()[0][:80]
    if isinstance(statement, exp.Command) or (isinstance(statement, exp.Set) and text is not None):
        raw = macros.unhide(text if text is not None else statement.sql("spark"))
        return [Statement(_command(raw, evaluator, where, shown), when, True, shown)]
    evaluated = evaluator.evaluate_statements([*(d.copy() for d in defs), statement])
    _refuse_own_table(evaluated, where, shown)
    return [Statement(evaluated.sql("spark", comments=False), when, False, shown)]


def _condition(text: str, defs: list[exp.Expression], evaluator: MacroEvaluator, where: str,
               shown: str) -> tuple[str, bool]:
    """A guard's condition: ('', truth) when parse time knows it, else (its Spark SQL, True) for the run."""
    node = _parse(text, evaluator.dialect, where, shown)
    for d in defs:  # the @DEF values the condition may read
        evaluator.evaluate_statements([d.copy(), exp.null()])
    try:
        return "", bool(evaluator.eval_expression(node))
    except NeedsRuntime:
        return evaluator.transform(node).sql("spark", comments=False), True


def _parse(text: str, dialect: str, where: str, shown: str) -> exp.Expression:
    try:
        parsed = [s for s in macro_parse.parse(text, dialect) if s is not None]
    except SQLGLOT_ERRORS as e:
        raise ModelSyntaxError(f"{where}: statement {macros.unhide(shown)[:80]!r} does not parse: "
                               f"{str(e).splitlines()[0]}") from None
    if len(parsed) != 1:
        raise ModelSyntaxError(f"{where}: @IF({macros.unhide(text)[:40]}...) must hold one statement")
    return parsed[0]


def _command(text: str, evaluator: MacroEvaluator, where: str, shown: str) -> str:
    """The text of a statement kept as written, project variables put in (``@x`` as a SQL value, ``@{x}`` as plain
    text, as SQLMesh interpolates); runtime macros are left."""

    def put(match: re.Match) -> str:
        name = (match.group(1) or match.group(2)).lower()
        if name in evaluator.variables:
            return _text(evaluator.literal(evaluator.variables[name]), plain=bool(match.group(1)))
        if name in macros.RUNTIME:
            return match.group(0)
        raise ModelDefinitionError(f"{where}: statement {shown!r}: unknown macro @{name}; a statement Spark SQL "
                                   "parsing does not read may use project variables and runtime macros only")

    return _MACRO_WORD.sub(put, text)


def _refuse_own_table(statement: exp.Expression, where: str, shown: str) -> None:
    """Refuse a statement writing, altering or dropping ``@this_model``: each batch's intervals are recorded
    as what the query wrote, which such a statement would make untrue (properties may be set)."""
    if not isinstance(statement, _WRITES):
        return
    target = statement.find(exp.Table)
    if target is None or macros.macro_table(target) != macros.THIS_MODEL:
        return
    actions = statement.args.get("actions") or []
    if isinstance(statement, exp.Alter) and actions and all(isinstance(a, exp.AlterSet) for a in actions):
        return
    raise ModelDefinitionError(
        f"{where}: statement {shown!r} changes the model's own table (@this_model); pyspark-incr records each "
        "batch's intervals as what the query wrote, which this would make untrue. Put the logic in the query, "
        "or write another table")


def _made(statement: Statement) -> tuple[str, exp.Expression | None] | None:
    """The name a pre-statement makes for the session (``CREATE TEMPORARY VIEW v AS ...``, ``CACHE TABLE c AS
    ...``) and the query it is made of; None for other statements."""
    if statement.command:
        return None
    node = sqlglot.parse_one(statement.sql, read="spark")
    made = isinstance(node, exp.Cache) or (isinstance(node, exp.Create) and str(node.args.get("kind")).upper() == "VIEW")
    target = node.this if made else None
    if isinstance(target, exp.Schema):
        target = target.this
    if not isinstance(target, exp.Table) or target.db:
        return None
    return target.name.lower(), node.args.get("expression")


# --------------------------------------------------------------------------- rendering


def render(statement: Statement, interval: Interval, execution_ms: int, stage: str, *, where: str,
           table_map: dict[str, exp.Table] | None = None, this_table: exp.Table | None = None,
           context: str = "") -> str | None:
    """``statement`` as Spark SQL for ``interval`` at runtime ``stage`` (None when its ``@IF`` guard is false):
    runtime macros substituted, ``@this_model`` the table built, other models the tables this environment reads.

    >>> day = Interval(86_400_000 * 19723, 86_400_000 * 19724)
    >>> s = Statement("INSERT INTO side.marks SELECT ${start_ds}", "${runtime_stage} = 'evaluating'")
    >>> render(s, day, 0, EVALUATING, where="model a.b")
    "INSERT INTO side.marks SELECT '2024-01-01'"
    >>> render(s, day, 0, CREATING, where="model a.b") is None
    True
    """
    stage_value = {"runtime_stage": exp.Literal.string(stage)}
    if statement.when:
        condition = render_query(f"SELECT {statement.when}", interval, execution_ms, where=where, table_map=table_map,
                                 this_table=this_table, macros=stage_value, context=context)
        if not MacroEvaluator(runtime={}, where=where).eval_expression(condition.selects[0]):
            return None
    if statement.command:
        return _render_command(statement.sql, interval, execution_ms, stage, this_table)
    return render_query(statement.sql, interval, execution_ms, where=where, table_map=table_map,
                        this_table=this_table, macros=stage_value, context=context).sql("spark")


def _render_command(text: str, interval: Interval, execution_ms: int, stage: str,
                    this_table: exp.Table | None) -> str:
    values: dict[str, exp.Expression] = {**macro_values(interval, execution_ms),
                                         "runtime_stage": exp.Literal.string(stage)}

    def put(match: re.Match) -> str:
        name = (match.group(1) or match.group(2)).lower()
        if name == macros.THIS_MODEL and this_table is not None:
            return this_table.sql("spark")
        return _text(values[name], plain=bool(match.group(1))) if name in values else match.group(0)

    return _MACRO_WORD.sub(put, text)


def _text(value: exp.Expression, plain: bool) -> str:
    """A value as SQL, or (``@{x}``) as the bare text of a literal."""
    return value.this if plain and isinstance(value, exp.Literal) else value.sql("spark")

