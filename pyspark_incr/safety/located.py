"""The parsed query with token positions, to report a node's (line, column) in the text."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from pyspark_incr.errors import ModelDefinitionError

_MAX_CONSTRUCT = 80


class _Source:
    """The parsed query with its tokens, to turn nodes into (line, column) of the text."""

    def __init__(self, text: str, dialect: str) -> None:
        self.text = text
        d = Dialect.get_or_raise(dialect)
        try:
            self.tokens: list[Token] = d.tokenize(text)
            trees = _located_parser(d).parse(self.tokens, text)
        except SqlglotError as e:
            raise ModelDefinitionError(f"cannot check incremental safety: query does not parse: {e}") from e
        trees = [t for t in trees if t is not None]
        if len(trees) != 1:
            raise ModelDefinitionError("cannot check incremental safety: expected exactly one query statement")
        self.tree: exp.Expr = trees[0]
        self.dialect = d

    def start(self, node: exp.Expr) -> int | None:
        """Offset of the first positioned token inside ``node`` (keywords carry no position)."""
        starts = [n.meta["start"] for n in node.walk() if "start" in n.meta]
        return min(starts) if starts else None

    def keyword(self, types: set[TokenType], before: int | None) -> int | None:
        """Offset of the last ``types`` token before offset ``before``: a clause's keyword."""
        if before is None:
            return None
        hits = [t.start for t in self.tokens if t.token_type in types and t.start < before]
        return hits[-1] if hits else None

    def token_before(self, offset: int) -> Token | None:
        earlier = [t for t in self.tokens if t.start < offset]
        return earlier[-1] if earlier else None

    def position(self, offset: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, offset) + 1
        return line, offset - (self.text.rfind("\n", 0, offset) + 1) + 1

    def sql(self, node: exp.Expr) -> str:
        return _shorten(node.sql(dialect=self.dialect))


def _located_parser(dialect: Dialect):
    """The dialect's parser, stamping each function call with its name's position.

    sqlglot positions identifiers, literals and most calls, but not keyword functions such as
    CURRENT_DATE or CURRENT_TIMESTAMP(); a finding must still say where they are.
    """
    base = dialect.parser_class

    def _parse_function_call(self, *args, **kwargs):
        token = self._curr
        node = base._parse_function_call(self, *args, **kwargs)
        if node is not None and token is not None and "start" not in node.meta:
            node.update_positions(token)
        return node

    located = type("Located" + base.__name__, (base,), {"_parse_function_call": _parse_function_call})
    return located(dialect=dialect)


def _shorten(sql: str) -> str:
    sql = " ".join(sql.split())
    return sql if len(sql) <= _MAX_CONSTRUCT else sql[: _MAX_CONSTRUCT - 3] + "..."
