"""Parsing a query that holds SQLMesh macros (after :func:`pyspark_incr.model.macros.hide_macros`).

Two constructs of SQLMesh's macro language are no SQL any dialect parses, so the dialect's parser
is extended (a subclass made per dialect, never a change to sqlglot's own):

* a lambda body may carry an alias, ``@EACH(cols, c -> SUM(c) AS total_@c)``;
* the clause macros ``@WITH(cond)``, ``@WHERE(cond)``, ``@GROUP_BY(cond)``, ``@HAVING(cond)``,
  ``@ORDER_BY(cond)`` and ``@LIMIT(cond)`` stand where the clause's keyword does. Their tokens are
  swapped for the keyword before parsing, and the clause parsed is marked with the condition
  (``node.meta[CLAUSE_IF]``), which :mod:`pyspark_incr.model.macro_eval` evaluates.

>>> from pyspark_incr.model.macros import hide_macros
>>> q = parse(hide_macros("SELECT * FROM t @WHERE(1 < 2) x > 1"), "duckdb")[0]
>>> q.sql(), q.args["where"].meta[CLAUSE_IF].sql()
('SELECT * FROM t WHERE x > 1', '1 < 2')
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.parser import Parser
from sqlglot.tokens import Token, TokenType

from pyspark_incr.model.macros import PREFIX

#: Key of the condition a clause macro put on the clause it stands for.
CLAUSE_IF = "incr_clause_if"
#: Clause macros and the keyword token each stands for.
CLAUSES = {"WITH": TokenType.WITH, "WHERE": TokenType.WHERE, "GROUP_BY": TokenType.GROUP_BY,
           "HAVING": TokenType.HAVING, "ORDER_BY": TokenType.ORDER_BY, "LIMIT": TokenType.LIMIT}


def parse(hidden: str, dialect: str) -> list[exp.Expression | None]:
    """The statements of ``hidden`` (``hide_macros`` output) in ``dialect``, macro syntax understood."""
    d = Dialect.get_or_raise(dialect)
    parser = _macro_parser(d.parser_class)(dialect=d)
    return parser.parse(d.tokenize(hidden), hidden)


@lru_cache(maxsize=None)
def _macro_parser(base: type[Parser]) -> type[Parser]:
    arrow = base.LAMBDAS[TokenType.ARROW]

    def aliased_lambda(self: Parser, expressions: list) -> exp.Expression:
        node = arrow(self, expressions)
        if self._match(TokenType.ALIAS):
            node.set("this", exp.alias_(node.this, self._parse_id_var(any_token=True)))
        return node

    class MacroParser(base):  # type: ignore[valid-type, misc]
        LAMBDAS = {**base.LAMBDAS, TokenType.ARROW: aliased_lambda}

        def parse(self, raw_tokens: list[Token], sql: str) -> list[exp.Expression | None]:
            self._incr_conds: dict[int, list[Token]] = {}
            return super().parse(_swap_clauses(raw_tokens, self._incr_conds), sql)

        def _incr_cond(self) -> list[Token] | None:
            return self._incr_conds.get(id(self._curr)) if self._curr is not None else None

        def _incr_mark(self, node: Any, cond: list[Token] | None, before: Any = None) -> Any:
            if cond is not None and node is not None and node is not before:
                node.meta[CLAUSE_IF] = _macro_parser(base)(dialect=self.dialect).parse(cond, self.sql)[0]
            return node

        def _parse_with(self, skip_with_token: bool = False) -> Any:
            cond = self._incr_cond()
            return self._incr_mark(super()._parse_with(skip_with_token), cond)

        def _parse_where(self, skip_where_token: bool = False) -> Any:
            cond = self._incr_cond()
            return self._incr_mark(super()._parse_where(skip_where_token), cond)

        def _parse_group(self, skip_group_by_token: bool = False) -> Any:
            cond = self._incr_cond()
            return self._incr_mark(super()._parse_group(skip_group_by_token), cond)

        def _parse_having(self, skip_having_token: bool = False) -> Any:
            cond = self._incr_cond()
            return self._incr_mark(super()._parse_having(skip_having_token), cond)

        def _parse_order(self, this: Any = None, skip_order_token: bool = False) -> Any:
            cond = self._incr_cond()
            return self._incr_mark(super()._parse_order(this, skip_order_token), cond, this)

        def _parse_limit(self, this: Any = None, top: bool = False, skip_limit_token: bool = False) -> Any:
            cond = self._incr_cond()
            return self._incr_mark(super()._parse_limit(this, top, skip_limit_token), cond, this)

    return MacroParser


def _swap_clauses(tokens: list[Token], conds: dict[int, list[Token]]) -> list[Token]:
    """``@WHERE ( cond )`` tokens -> one WHERE token, whose condition tokens go to ``conds`` by its id."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        clause = tok.text.upper()[len(PREFIX):] if tok.text.upper().startswith(PREFIX.upper()) else ""
        if clause in CLAUSES and i + 1 < len(tokens) and tokens[i + 1].token_type == TokenType.L_PAREN:
            close = _closing(tokens, i + 1)
            if close is not None:
                keyword = Token(CLAUSES[clause], clause.replace("_", " "), tok.line, tok.col, tok.start, tok.end,
                                tok.comments)
                conds[id(keyword)] = tokens[i + 2 : close]
                out.append(keyword)
                i = close + 1
                continue
        out.append(tok)
        i += 1
    return out


def _closing(tokens: list[Token], open_at: int) -> int | None:
    depth = 0
    for j in range(open_at, len(tokens)):
        if tokens[j].token_type == TokenType.L_PAREN:
            depth += 1
        elif tokens[j].token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return j
    return None
