"""What sqlglot may raise on hostile text, besides its own parse errors.

Deeply nested input exhausts the recursion limit, and odd numeric literals reach
``decimal`` (InvalidOperation is an ArithmeticError); each is a user's mistake
to report, never a crash.
"""

import re

from sqlglot.errors import ParseError, TokenError

from pyspark_incr.model.macros import PREFIX

SQLGLOT_ERRORS = (ParseError, TokenError, ValueError, ArithmeticError, RecursionError)


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
    details = getattr(error, "errors", None) or [{}]
    line, col = details[0].get("line"), details[0].get("col")
    if not line:
        return f"line {query_line}"
    lines = hidden.splitlines()
    if line <= len(lines):
        col -= lines[line - 1][:col].count(PREFIX) * (len(PREFIX) - 1)
    return f"line {query_line + line - 1}, column {col + (query_col - 1 if line == 1 else 0)}"


def error_text(error: Exception) -> str:
    """The first line of a sqlglot error, without its own (line, column) that the caller reports in file terms."""
    return re.sub(r"\.? Line \d+, Col: \d+\.?$", "", str(error).splitlines()[0] if str(error) else type(error).__name__)
