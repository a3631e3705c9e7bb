"""Custom audits (SQLMesh ``audits/*.sql``): named queries returning the rows that break a rule.

A file holds one or more ``AUDIT (...)`` blocks, each followed by its query.
The query is transpiled to Spark SQL once, here; its ``@name`` macros stay as
placeholders (``macros.PREFIX`` identifiers) that :mod:`pyspark_incr.model.audits`
fills for each call: ``@this_model`` with the audited rows, any other with the
call's argument or the audit's default.

>>> a, b = parse_audits('''
... AUDIT (name assert_positive, defaults (threshold := 0));
... SELECT * FROM @this_model WHERE @column <= @threshold;
... AUDIT (name no_future, dialect duckdb, blocking false);
... SELECT * FROM @this_model WHERE day::DATE > current_date
... ''', "audits/rules.sql")
>>> a.name, a.blocking, a.defaults, a.arguments, a.located
('assert_positive', True, (('threshold', '0'),), ('column', 'threshold'), 'audits/rules.sql: line 2, column 8')
>>> b.blocking, b.query
(False, 'SELECT * FROM __incr_macro__this_model WHERE CAST(day AS DATE) > CURRENT_DATE')
>>> audits_from_json(audits_to_json((a, b))) == (a, b)
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError, ModelSyntaxError
from pyspark_incr.model import macros
from pyspark_incr.model.block import Block, Property, split_blocks
from pyspark_incr.model.properties import METADATA, Prop, read_properties
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS, query_parse_error
from pyspark_incr.model.values import as_arguments, as_bool, as_dialect, as_string

#: Runtime macros an audit cannot use: it sees only the rows a batch wrote, not the batch's times.
_TIME_MACROS = macros.RUNTIME - {macros.THIS_MODEL}


@dataclass(frozen=True)
class AuditDef:
    """One custom audit, as its models carry it (and store it in state)."""

    name: str
    #: Spark SQL; ``@name`` macros stay as placeholder identifiers until a call fills them.
    query: str
    blocking: bool = True
    #: Default argument values as Spark SQL: ``((name, value-sql), ...)``.
    defaults: tuple[tuple[str, str], ...] = ()
    #: ``<file>: line L, column C`` of its name, for messages; not part of what the audit checks.
    located: str = field(default="", compare=False)

    @property
    def arguments(self) -> tuple[str, ...]:
        """The ``@name`` macros its query uses (besides ``@this_model``): what a call or a default must give."""
        return tuple(sorted({n for n in map(placeholder, parse_query(self.query).find_all(exp.Column, exp.Table))
                             if n and n != macros.THIS_MODEL}))

    def fingerprint(self) -> tuple:
        """What the audit checks (its location left out): part of the metadata hash of models calling it."""
        return (self.name, self.query, self.blocking, self.defaults)


_AUDIT_PROPS: tuple[Prop, ...] = (
    Prop("dialect", as_dialect, METADATA),
    Prop("blocking", as_bool, METADATA),
    Prop("defaults", as_arguments, METADATA),
)


def parse_audits(text: str, source: str, dialect: str = "spark") -> tuple[AuditDef, ...]:
    """Every audit of one file; queries are read in their ``dialect`` (else the project's ``dialect``)."""
    return tuple(_audit(block, source, dialect) for block in split_blocks(text, "AUDIT", source))


def _audit(block: Block, source: str, default_dialect: str) -> AuditDef:
    props = dict(block.properties)
    name_prop = props.pop("name", None)
    if not isinstance(name_prop, Property):
        raise ModelDefinitionError(
            f"{source}: line {block.line}, column {block.col}: AUDIT needs a name, e.g. AUDIT (name assert_positive)"
        )
    name = as_string(name_prop, source).lower()
    if not name.isidentifier():
        raise ModelDefinitionError(f"{source}: {name_prop.at}: audit name {name!r} must be a word like assert_positive")
    where = f"audit {name} ({source})"
    values = read_properties(props, _AUDIT_PROPS, where, "AUDIT")
    return AuditDef(name, _query(block, values.get("dialect", default_dialect), where), values.get("blocking", True),
                    values.get("defaults", ()), f"{source}: {name_prop.at}")


def _query(block: Block, dialect: str, where: str) -> str:
    """The audit's query as Spark SQL, placeholders kept; refused when it is not one query audits can run."""
    if not block.query_text:
        raise ModelDefinitionError(
            f"{where}: the AUDIT block is not followed by a query (SELECT ... FROM @this_model ...)")
    hidden = macros.hide_macros(block.query_text)
    try:
        statements = [s for s in sqlglot.parse(hidden, read=dialect) if s is not None]
    except SQLGLOT_ERRORS as e:
        refusal = macros.unsupported_call(hidden, block.query_line, {}, where)
        message = query_parse_error(e, where, block.query_text, hidden, block.query_line, block.query_col)
        raise refusal or ModelSyntaxError(message) from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise ModelDefinitionError(f"{where}: an AUDIT block must be followed by exactly one query (SELECT ...)")
    query = statements[0]
    locator = macros.locator(hidden, block.query_line)

    def locate(node: exp.Expression) -> str:
        at = locator(node)
        return f"{where}: {at}" if at else where

    for node in query.find_all(exp.Anonymous):
        if placeholder(node):
            raise ModelDefinitionError(f"{locate(node)}: macro functions such as @{node.name[len(macros.PREFIX):]}"
                                       "(...) are not supported in audits; pass values as arguments (@name)")
    for node in query.find_all(exp.Column, exp.Table):
        if placeholder(node) in _TIME_MACROS:
            raise ModelDefinitionError(
                f"{locate(node)}: @{placeholder(node)} is not available in audits: @this_model already holds "
                "only the rows the batch wrote"
            )
    if not any(placeholder(t) == macros.THIS_MODEL for t in query.find_all(exp.Table)):
        raise ModelDefinitionError(f"{where}: the query never reads @this_model, the rows it audits (FROM @this_model)")
    return query.sql(dialect="spark", comments=False)


def placeholder(node: exp.Expression) -> str | None:
    """The macro name a column, table or function placeholder stands for (lowercase), else None."""
    if isinstance(node, exp.Column) and node.table:
        return None
    name = node.name if isinstance(node, (exp.Column, exp.Table, exp.Anonymous)) else ""
    if isinstance(node, exp.Table) and node.db:
        return None
    return name[len(macros.PREFIX):].lower() if name.lower().startswith(macros.PREFIX) else None


def parse_query(query: str) -> exp.Query:
    """A stored audit query (Spark SQL with placeholders) as an expression."""
    return sqlglot.parse_one(query, read="spark")


def audits_to_json(audits: tuple[AuditDef, ...]) -> list[dict[str, Any]]:
    """Audits as plain JSON values, for a model's stored context."""
    return [{"name": a.name, "query": a.query, "blocking": a.blocking, "defaults": [list(d) for d in a.defaults],
             "located": a.located} for a in audits]


def audits_from_json(values: list[dict[str, Any]]) -> tuple[AuditDef, ...]:
    """The records :func:`audits_to_json` wrote."""
    return tuple(AuditDef(str(v["name"]), str(v["query"]), bool(v["blocking"]),
                          tuple((str(k), str(s)) for k, s in v["defaults"]), str(v.get("located", "")))
                 for v in values)
