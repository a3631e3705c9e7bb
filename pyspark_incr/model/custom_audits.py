"""Filling a custom audit's query for one call: ``@this_model`` becomes the audited rows, ``@name`` an argument.

Arguments are substituted as expressions, never as text: a column name becomes
the (quoted) column, a list after ``IN`` becomes the list.

>>> from sqlglot import exp
>>> from pyspark_incr.model.audit_defs import parse_audits
>>> [audit] = parse_audits("AUDIT (name in_list); SELECT * FROM @this_model AS t WHERE @column NOT IN @allowed", "f")
>>> allowed = exp.Tuple(expressions=[exp.Literal.string("a"), exp.Literal.string("b")])
>>> args = {"column": exp.column("kind"), "allowed": allowed}
>>> fill(audit, args, exp.table_("orders", db="shop", quoted=True), "model m").sql("spark")
"SELECT * FROM `shop`.`orders` AS t WHERE NOT `kind` IN ('a', 'b')"
>>> sorted(columns(audit, args))
['kind']
"""

from __future__ import annotations

from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model import macros
from pyspark_incr.model.audit_defs import AuditDef, parse_query, placeholder


def fill(audit: AuditDef, args: dict[str, exp.Expression], relation: exp.Expression, where: str) -> exp.Query:
    """The audit's query for one call: the rows of ``relation`` that break it (``args`` hold every argument)."""

    def substitute(node: exp.Expression) -> exp.Expression:
        field = node.args.get("field") if isinstance(node, exp.In) else None
        if field is not None and placeholder(field) in args:
            # `x IN @list`: the list's items become the IN list (a lone value a one-item list).
            node.set("field", None)
            node.set("expressions", [i.copy() for i in _items(args[placeholder(field)])])
            return node
        name = placeholder(node) if isinstance(node, (exp.Column, exp.Table)) else None
        if name is None:
            return node
        if isinstance(node, exp.Table):
            target = relation.copy() if name == macros.THIS_MODEL else _table(args[name], name, audit, where)
            if node.args.get("alias") is not None:
                target.set("alias", node.args["alias"].copy())
            return target
        return _quoted(args[name].copy())

    query = parse_query(audit.query).transform(substitute)
    left = next((i for i in query.find_all(exp.Identifier) if i.name.lower().startswith(macros.PREFIX)), None)
    if left is not None:  # a placeholder where no value can stand, e.g. an alias `AS @name`
        raise ModelDefinitionError(
            f"{where}: audit {audit.name} ({audit.located}): @{left.name[len(macros.PREFIX):]} stands where no "
            "value can"
        )
    return query


def columns(audit: AuditDef, args: dict[str, exp.Expression]) -> set[str]:
    """Column names passed as arguments the query uses as values, to check them against the model's output."""
    query = parse_query(audit.query)
    as_tables = {placeholder(t) for t in query.find_all(exp.Table)}
    names = set()
    for name in set(audit.arguments) - as_tables:
        value = args.get(name)
        for item in _items(value) if value is not None else ():
            if isinstance(item, exp.Column) and not item.table:
                names.add(item.name)
    return names


def _items(value: exp.Expression) -> list[exp.Expression]:
    if isinstance(value, (exp.Tuple, exp.Array)):
        return list(value.expressions)
    return [value.this if isinstance(value, exp.Paren) else value]


def _quoted(value: exp.Expression) -> exp.Expression:
    """Column names in an argument quoted, so a name is always read as that column."""
    for column in value.find_all(exp.Column):  # the value itself too, when it is a column
        for ident in column.find_all(exp.Identifier):
            ident.set("quoted", True)
    return value


def _table(value: exp.Expression, name: str, audit: AuditDef, where: str) -> exp.Table:
    """An argument standing after FROM/JOIN: a table name written as a (dotted) name."""
    if not isinstance(value, exp.Column) or not all(isinstance(p, exp.Identifier) for p in value.parts):
        raise ModelDefinitionError(
            f"{where}: audit {audit.name}: @{name} stands for a table; pass a table name like {name} := db.table"
        )
    parts = [exp.to_identifier(p.name, quoted=True) for p in value.parts]
    parts = [None] * (3 - len(parts)) + parts[-3:]
    return exp.Table(catalog=parts[0], db=parts[1], this=parts[2])
