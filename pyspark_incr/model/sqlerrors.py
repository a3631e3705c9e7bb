"""What sqlglot may raise on hostile text, besides its own parse errors.

Deeply nested input exhausts the recursion limit, and odd numeric literals reach
``decimal`` (InvalidOperation is an ArithmeticError); each is a user's mistake
to report, never a crash.
"""

import re

from sqlglot.errors import ParseError, TokenError

from pyspark_incr.model.macros import PREFIX

SQLGLOT_ERRORS = (ParseError, TokenError, ValueError, ArithmeticError, RecursionError)


def query_parse_error(error: Exception, where: str, text: str, hidden: str, query_line: int, query_col: int = 1) -> str:
    r"""The message for a query sqlglot cannot parse: where, what, and the line itself with a caret under the column.

    ``text`` is the query as its file holds it (starting at ``query_line``/``query_col``), ``hidden``
    what sqlglot read (``hide_macros``).

    >>> import sqlglot
    >>> text = "SELECT a,\n  b FROM t WHERE ("
    >>> try:
    ...     sqlglot.parse(text, read="spark")
    ... except ParseError as e:
    ...     print(query_parse_error(e, "models/m.sql", text, text, 4))
    models/m.sql: line 5, column 18: the query cannot be parsed: Required keyword: 'this' missing for <class 'sqlglot.expressions.core.Paren'>
          b FROM t WHERE (
                         ^
    """
    at = query_error_at(error, query_line, query_col, hidden)
    message = f"{where}: {at}: the query cannot be parsed: {error_text(error).replace(PREFIX, '@')}"
    spot = _position(error, hidden)
    lines = text.splitlines()
    if spot is None or not 1 <= spot[0] <= len(lines):
        return message
    line, col, width = spot
    source = lines[line - 1].expandtabs(1)
    return f"{message}\n    {source}\n    {' ' * max(min(col, len(source)) - 1, 0)}{'^' * width}"


def _position(error: Exception, hidden: str) -> tuple[int, int, int] | None:
    """(line, column, width) of the token a sqlglot error stopped at, within the query as the user wrote it.

    sqlglot reports the column where that token ends; users (and Spark) point at where it starts.
    """
    details = getattr(error, "errors", None) or [{}]
    line, col = details[0].get("line"), details[0].get("col")
    if not line:
        return None
    token = details[0].get("highlight") or ""
    start = max((col or 1) - len(token) + 1, 1)
    lines = hidden.splitlines()
    if line <= len(lines):
        start -= lines[line - 1][: start - 1].count(PREFIX) * (len(PREFIX) - 1)
    return line, start, max(len(token.replace(PREFIX, "@")), 1)


def query_error_at(error: Exception, query_line: int, query_col: int = 1, hidden: str = "") -> str:
    """``line L, column C`` of a sqlglot error in a query that starts at ``query_line``/``query_col`` of its file.

    ``hidden`` is the text sqlglot read when macros were hidden (``@x`` -> a longer
    identifier): columns after one are shifted back to where the user wrote them.

    >>> import sqlglot
    >>> try:
    ...     sqlglot.parse_one("SELECT * FROM t WHERE (", read="spark")
    ... except ParseError as e:
    ...     query_error_at(e, 3), query_error_at(e, 3, 5), error_text(e)
    ('line 3, column 23', 'line 3, column 27', "Required keyword: 'this' missing for <class 'sqlglot.expressions.core.Paren'>")
    """
    spot = _position(error, hidden)
    if spot is None:
        return f"line {query_line}"
    line, col, _ = spot
    return f"line {query_line + line - 1}, column {col + (query_col - 1 if line == 1 else 0)}"


def error_text(error: Exception) -> str:
    """The first line of a sqlglot error, without its own (line, column) that the caller reports in file terms."""
    return re.sub(r"\.? Line \d+, Col: \d+\.?$", "", str(error).splitlines()[0] if str(error) else type(error).__name__)
