"""DDL that carries a name or a value, built as sqlglot expressions and rendered for Spark.

Each function returns the statement's text, every string value guarded against Spark's variable
substitution (:func:`pyspark_incr.sqltext.render`). Two kinds of statement are still assembled from
:func:`~pyspark_incr.sqltext.ident` and :func:`~pyspark_incr.sqltext.literal` where they are built
(``writers/tables.py``, ``writers/docs.py``): those sqlglot has no expression for (``SHOW
TBLPROPERTIES``, ``UNSET TBLPROPERTIES``), and ``CREATE TABLE``/``VIEW`` with column types as Spark
prints them, which sqlglot would change (it drops a ``COLLATE`` and upper-cases the provider).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from sqlglot import exp

from pyspark_incr.sqltext import render


def create_schema(name: str) -> str:
    """``CREATE DATABASE IF NOT EXISTS``.

    >>> create_schema("a`b")
    'CREATE DATABASE IF NOT EXISTS `a``b`'
    """
    return render(exp.Create(this=exp.table_(name, quoted=True), kind="DATABASE", exists=True))


def drop_schema(name: str) -> str:
    """``DROP DATABASE IF EXISTS`` (refused by Spark unless it is empty).

    >>> drop_schema("s")
    'DROP DATABASE IF EXISTS `s`'
    """
    return render(exp.Drop(tables=[exp.table_(name, quoted=True)], kind="DATABASE", exists=True))


def drop(kind: str, table: exp.Table) -> str:
    """``DROP TABLE`` or ``DROP VIEW`` ``IF EXISTS``.

    >>> drop("VIEW", exp.table_("t", db="d", quoted=True))
    'DROP VIEW IF EXISTS `d`.`t`'
    """
    return render(exp.Drop(tables=[table.copy()], kind=kind, exists=True))


def set_location(table: exp.Table, location: str) -> str:
    """``ALTER TABLE ... SET LOCATION``.

    >>> set_location(exp.table_("t", db="d", quoted=True), "file:/w/it's")
    "ALTER TABLE `d`.`t` SET LOCATION 'file:/w/it\\\\'s'"
    """
    return render(exp.Alter(this=table.copy(), kind="TABLE", actions=[exp.AlterSet(location=exp.Literal.string(location))]))


def add_columns(table: exp.Table, columns: Iterable[tuple[str, str]]) -> str:
    """``ALTER TABLE ... ADD COLUMNS`` from (name, Spark type) pairs.

    >>> add_columns(exp.to_table("db.t"), (("b", "string"), ("c`d", "int")))
    'ALTER TABLE db.t ADD COLUMNS (`b` STRING, `c``d` INT)'
    """
    defs = [exp.ColumnDef(this=exp.to_identifier(name, quoted=True), kind=exp.DataType.build(type_, dialect="spark"))
            for name, type_ in columns]
    return render(exp.Alter(this=table.copy(), kind="TABLE", actions=[exp.Schema(expressions=defs)]))


def comment_table(table: exp.Table, text: str | None) -> str:
    """``COMMENT ON TABLE ... IS``, ``NULL`` removing it.

    >>> comment_table(exp.to_table("db.t"), "${env:HOME}"), comment_table(exp.to_table("db.t"), None)
    ("COMMENT ON TABLE db.t IS '$\\\\{env:HOME}'", 'COMMENT ON TABLE db.t IS NULL')
    """
    value = exp.null() if text is None else exp.Literal.string(text)
    return render(exp.Comment(this=table.copy(), kind="TABLE", expression=value))


def comment_column(table: exp.Table, column: str, text: str) -> str:
    """``ALTER TABLE ... ALTER COLUMN ... COMMENT``.

    >>> comment_column(exp.to_table("db.t"), "a b", "it's")
    "ALTER TABLE db.t ALTER COLUMN `a b` COMMENT 'it\\\\'s'"
    """
    action = exp.AlterColumn(this=exp.to_identifier(column, quoted=True), comment=exp.Literal.string(text))
    return render(exp.Alter(this=table.copy(), kind="TABLE", actions=[action]))


def set_properties(table: exp.Table, properties: Mapping[str, str]) -> str:
    """``ALTER TABLE ... SET TBLPROPERTIES``, keys in order.

    >>> set_properties(exp.to_table("db.t"), {"k": "v", "a": "it's"})
    "ALTER TABLE db.t SET TBLPROPERTIES ('a'='it\\\\'s', 'k'='v')"
    """
    listed = [exp.Property(this=exp.Literal.string(k), value=exp.Literal.string(v)) for k, v in sorted(properties.items())]
    action = exp.AlterSet(expressions=[exp.Properties(expressions=listed)])
    return render(exp.Alter(this=table.copy(), kind="TABLE", actions=[action]))


def any_row(table: exp.Table) -> str:
    """``SELECT 1 FROM ... LIMIT 1``: does the table hold a row.

    >>> any_row(exp.table_("t", db="d", quoted=True))
    'SELECT 1 FROM `d`.`t` LIMIT 1'
    """
    return render(exp.select("1").from_(table.copy()).limit(1))
