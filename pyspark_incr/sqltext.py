"""SQL text: the one place names and values are quoted, CALL statements built, scripts split.

Every name or value that reaches SQL text goes through :func:`ident` or :func:`literal` (or is a
sqlglot expression rendered whole), so none is ever read as something else.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType


def ident(name: str) -> str:
    """One name (column, schema, table part) as Spark SQL, backquoted whatever it holds (dots, spaces, backquotes).

    >>> ident("a`b"), ident("x.y")
    ('`a``b`', '`x.y`')
    """
    return exp.to_identifier(name, quoted=True).sql("spark")


def table_sql(table: exp.Table) -> str:
    """``table.sql("spark")``, written here when each part is a backquoted name (how the tables and views of
    models are named): sqlglot's generator takes a tenth of a millisecond a name, many times a model per run.

    >>> t = exp.table_("a`b", db="s", quoted=True)
    >>> table_sql(t) == t.sql("spark") == "`s`.`a``b`"
    True
    >>> table_sql(exp.to_table("s.t", dialect="spark"))  # not backquoted: sqlglot writes it
    's.t'
    """
    names = {}
    for key, value in table.args.items():
        if value is None:
            continue
        if key not in _TABLE_PARTS or type(value) is not exp.Identifier or not value.args.get("quoted"):
            return table.sql("spark")
        names[key] = value.this
    return ".".join("`" + names[k].replace("`", "``") + "`" for k in _TABLE_PARTS if k in names)


_TABLE_PARTS = ("catalog", "db", "this")


_QUOTED_PAIR = re.compile(r"`([^`]+)`\.`([^`]+)`")


def stored_table(name: str) -> exp.Table:
    """A table name as state rows hold it; two backquoted parts (as sqlglot writes a table) are taken apart
    without parsing, which would cost every model of a large environment a fraction of a millisecond a run.

    >>> stored_table("`p`.`s__t__01`") == exp.to_table("`p`.`s__t__01`", dialect="spark")
    True
    >>> stored_table("`p`.`a``b`").name  # a backtick in a name: parsed
    'a`b'
    """
    found = _QUOTED_PAIR.fullmatch(name)
    if found:
        return exp.table_(found[2], db=found[1], quoted=True)
    return exp.to_table(name, dialect="spark")


def stored_schema(name: str) -> str:
    """The schema of a table name as state rows hold it (:func:`stored_table`), without building the table.

    >>> stored_schema("`p`.`s__t__01`"), stored_schema("`p``q`.`t`")
    ('p', 'p`q')
    """
    found = _QUOTED_PAIR.fullmatch(name)
    return found[1] if found else exp.to_table(name, dialect="spark").db


def literal(text: str) -> str:
    """A Spark SQL string literal, ``${`` written ``$\\{`` so Spark's variable substitution leaves it alone.

    (Spark replaces ``${name}``, ``${env:NAME}`` even inside quotes before parsing: a description holding one
    would otherwise be stored with a setting or an environment variable in its place.)

    >>> literal("it's ${env:HOME}")
    "'it\\\\'s $\\\\{env:HOME}'"
    """
    return render(exp.Literal.string(text))


def render(expression: exp.Expression) -> str:
    """``expression`` as Spark SQL, ``${`` written ``$\\{`` (in a string literal that reads back as ``${``).

    >>> render(exp.select(exp.Literal.string("${x}")))
    "SELECT '$\\\\{x}'"
    """
    # written as is, Spark's variable substitution would replace it before the parser sees the quotes
    return expression.sql("spark").replace("${", "$\\{")


def call_sql(procedure: str, **args: Any) -> str:
    """``CALL incr.<procedure>(name => value, ...)`` for the non-None ``args``.

    >>> call_sql("run", execution_time="2024-01-02", select="a'; DROP TABLE x --", ignore_cron=True)
    "CALL incr.run(execution_time => '2024-01-02', select => 'a\\\\'; DROP TABLE x --', ignore_cron => TRUE)"
    >>> call_sql("plan", env="${env:HOME}")
    "CALL incr.plan(env => '$\\\\{env:HOME}')"
    """
    parts = []
    for name, value in args.items():
        if value is None:
            continue
        if isinstance(value, bool):
            given: exp.Expression = exp.Boolean(this=value)
        elif isinstance(value, (int, float)):
            given = exp.Literal.number(value)
        else:
            given = exp.Literal.string(str(value))
        parts.append(f"{name} => {render(given)}")
    return f"CALL incr.{procedure}({', '.join(parts)})"


def split_statements(text: str) -> list[str]:
    """Statements of a SQL script, split on ``;`` outside strings and comments (as spark-sql does).

    >>> split_statements("SELECT 'a;b'; -- x;\\nCALL incr.run();\\n-- done")
    ["SELECT 'a;b'", '-- x;\\nCALL incr.run()']
    """
    statements: list[str] = []
    start, tokens = 0, 0
    for token in Dialect.get_or_raise("spark").tokenize(text):
        if token.token_type == TokenType.SEMICOLON:
            if tokens:
                statements.append(text[start : token.start].strip())
            start, tokens = token.end + 1, 0
        else:
            tokens += 1
    if tokens:
        statements.append(text[start:].strip())
    return statements
