"""Building CALL statements and splitting SQL scripts, with values always escaped by sqlglot."""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType


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
            literal = exp.Boolean(this=value)
        elif isinstance(value, (int, float)):
            literal = exp.Literal.number(value)
        else:
            literal = exp.Literal.string(str(value))
        # ``$\{`` reads back as ``${``; written as is, Spark's variable substitution would replace it first
        text = literal.sql("spark").replace("${", "$\\{")
        parts.append(f"{name} => {text}")
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
