"""Reading the ``MODEL (...)`` block of a definition into raw properties.

Works on sqlglot tokens (Spark dialect) so strings, comments and nesting are
handled exactly as Spark SQL would; property values are parsed by sqlglot.

>>> b = parse_block("MODEL (name db.t, kind INCREMENTAL_BY_TIME_RANGE (time_column ds)); SELECT 1 AS x")
>>> sorted(b.properties), b.properties["kind"].name, b.query_text
(['kind', 'name'], 'INCREMENTAL_BY_TIME_RANGE', 'SELECT 1 AS x')
>>> b.properties["kind"].properties["time_column"].value.sql()
'ds'
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS
from sqlglot.tokens import Token, TokenType

from pyspark_incr.errors import ModelDefinitionError

_OPEN = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE}
_CLOSE = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE}


@dataclass(frozen=True)
class Property:
    """``key value`` inside a MODEL block; ``line``/``col`` point at the key for error messages.

    ``value`` is the text parsed by sqlglot (Spark dialect), or None when the text is
    not an expression (``when_matched`` holds MERGE clauses): readers that need an
    expression then report ``error``.
    """

    key: str
    value: exp.Expression | None
    text: str
    line: int
    col: int = 0
    error: str = ""

    @property
    def at(self) -> str:
        """Where the property's key stands, for error messages."""
        return f"line {self.line}, column {self.col}"


@dataclass(frozen=True)
class KindSpec:
    """``kind NAME`` or ``kind NAME (key value, ...)``."""

    name: str
    properties: dict[str, Property] = field(default_factory=dict)
    line: int = 0
    col: int = 0

    @property
    def at(self) -> str:
        return f"line {self.line}, column {self.col}"


@dataclass(frozen=True)
class Block:
    """A definition split into its MODEL properties and the query text after the block."""

    properties: dict[str, Property | KindSpec]
    #: The text after the block ('' when the block stands alone, as SEED and EXTERNAL models may).
    query_text: str
    query_line: int
    #: Column of the query's first character on ``query_line`` (errors in its first line are counted from there).
    query_col: int = 1
    #: Where the block's keyword stands.
    line: int = 1
    col: int = 1


def parse_block(text: str, where: str = "definition") -> Block:
    """Split ``MODEL (...); <query>`` into properties and query text."""
    try:
        tokens = Dialect.get_or_raise("spark").tokenize(text)
    except SQLGLOT_ERRORS as e:
        raise ModelDefinitionError(f"{where}: cannot read the definition: {e}") from None
    if not tokens or tokens[0].text.upper() != "MODEL":
        raise ModelDefinitionError(
            f"{where}: a definition must start with a MODEL (...) block, e.g. "
            "MODEL (name db.table, kind FULL); SELECT ..."
        )
    if len(tokens) < 2 or tokens[1].token_type != TokenType.L_PAREN:
        raise ModelDefinitionError(f"{where}: line {tokens[0].line}, column {_col(tokens[0])}: expected '(' after MODEL")
    close = _matching(tokens, 1, text, where)
    properties = _properties(text, tokens[2:close], where, nested_kind=True)
    rest = close + 1
    if rest < len(tokens) and tokens[rest].token_type == TokenType.SEMICOLON:
        rest += 1
    if rest >= len(tokens):
        return Block(properties, "", tokens[-1].line)
    return Block(properties, text[tokens[rest].start :].strip(), tokens[rest].line, _col(tokens[rest]))


def split_blocks(text: str, keyword: str, where: str) -> list[Block]:
    """Split a file of ``KEYWORD (...); <query>;`` sections, as SQLMesh audit files hold several.

    A new section starts where ``KEYWORD (`` begins a statement; each query ends before it.

    >>> a, b = split_blocks("AUDIT (name x); SELECT 1;\\nAUDIT (name y, blocking false);\\nSELECT ';'", "AUDIT", "f")
    >>> a.properties["name"].text, a.query_text, b.properties["blocking"].text, b.query_text, b.query_line
    ('x', 'SELECT 1', 'false', "SELECT ';'", 3)
    """
    try:
        tokens = Dialect.get_or_raise("spark").tokenize(text)
    except SQLGLOT_ERRORS as e:
        raise ModelDefinitionError(f"{where}: cannot read the file: {e}") from None

    def starts_block(i: int) -> bool:
        return (tokens[i].text.upper() == keyword and i + 1 < len(tokens)
                and tokens[i + 1].token_type == TokenType.L_PAREN
                and (i == 0 or tokens[i - 1].token_type == TokenType.SEMICOLON))

    blocks, i = [], 0
    while i < len(tokens):
        if not starts_block(i):
            raise ModelDefinitionError(
                f"{where}: line {tokens[i].line}, column {_col(tokens[i])}: expected {keyword} (...) here, e.g. "
                f"{keyword} (name my_rule); SELECT ..."
            )
        close = _matching(tokens, i + 1, text, where)
        properties = _properties(text, tokens[i + 2 : close], where, nested_kind=False)
        start = close + 1
        while start < len(tokens) and tokens[start].token_type == TokenType.SEMICOLON:
            start += 1
        end = next((j for j in range(start, len(tokens)) if starts_block(j)), len(tokens))
        last = end - 1
        while last >= start and tokens[last].token_type == TokenType.SEMICOLON:
            last -= 1
        query = text[tokens[start].start : tokens[last].end + 1].strip() if last >= start else ""
        at = tokens[start] if start < end else tokens[close]
        blocks.append(Block(properties, query, at.line, _col(at), tokens[i].line, _col(tokens[i])))
        i = end
    return blocks


def _matching(tokens: list[Token], open_index: int, text: str, where: str) -> int:
    depth = 0
    for i in range(open_index, len(tokens)):
        if tokens[i].token_type in _OPEN:
            depth += 1
        elif tokens[i].token_type in _CLOSE:
            depth -= 1
            if depth == 0:
                return i
    t = tokens[open_index]
    raise ModelDefinitionError(f"{where}: line {t.line}, column {_col(t)}: the '(' opened here is never closed")


def _split(tokens: list[Token]) -> list[list[Token]]:
    parts: list[list[Token]] = [[]]
    depth = 0
    for t in tokens:
        if t.token_type in _OPEN:
            depth += 1
        elif t.token_type in _CLOSE:
            depth -= 1
        if t.token_type == TokenType.COMMA and depth == 0:
            parts.append([])
        else:
            parts[-1].append(t)
    return [p for p in parts if p]


def _properties(text: str, tokens: list[Token], where: str, nested_kind: bool) -> dict:
    props: dict = {}
    for part in _split(tokens):
        key = part[0].text.lower()
        at = f"line {part[0].line}, column {_col(part[0])}"
        if key in props:
            raise ModelDefinitionError(f"{where}: {at}: property {key!r} is given twice")
        if len(part) < 2:
            raise ModelDefinitionError(f"{where}: {at}: property {key!r} has no value")
        if nested_kind and key == "kind":
            props[key] = _kind(text, part[1:], where)
        else:
            props[key] = _property(text, part[0], part[1:], where)
    return props


def _kind(text: str, tokens: list[Token], where: str) -> KindSpec:
    name, line, col = tokens[0].text.upper(), tokens[0].line, _col(tokens[0])
    if len(tokens) == 1:
        return KindSpec(name, {}, line, col)
    if tokens[1].token_type != TokenType.L_PAREN or _matching(tokens, 1, text, where) != len(tokens) - 1:
        raise ModelDefinitionError(
            f"{where}: line {line}, column {col}: kind must be written NAME or NAME (property value, ...)"
        )
    return KindSpec(name, _properties(text, tokens[2:-1], where, nested_kind=False), line, col)


def _property(text: str, key_token: Token, tokens: list[Token], where: str) -> Property:
    snippet = text[tokens[0].start : tokens[-1].end + 1]
    key = key_token.text.lower()
    try:
        return Property(key, sqlglot.parse_one(snippet, read="spark"), snippet, key_token.line, _col(key_token))
    except SQLGLOT_ERRORS as e:
        return Property(key, None, snippet, key_token.line, _col(key_token), str(e).splitlines()[0])


def _col(token: Token) -> int:
    """1-based column of the token's first character (sqlglot reports where it ends)."""
    return token.col - len(token.text) + 1
