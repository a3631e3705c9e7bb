"""What sqlglot may raise on hostile text, besides its own parse errors.

Deeply nested input exhausts the recursion limit, and odd numeric literals reach
``decimal`` (InvalidOperation is an ArithmeticError); each is a user's mistake
to report, never a crash.
"""

from sqlglot.errors import ParseError, TokenError

SQLGLOT_ERRORS = (ParseError, TokenError, ValueError, ArithmeticError, RecursionError)
