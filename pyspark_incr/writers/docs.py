"""Model documentation as catalog metadata: description -> table comment, column descriptions ->
column comments, tags/terms/owner -> ``incr.*`` table properties.

At creation everything goes into the DDL (partition columns can only get comments
there); a metadata-only change later updates what Spark lets us alter in place.
"""

from __future__ import annotations

import json
from typing import Any

from sqlglot import exp

from pyspark_incr import ddl
from pyspark_incr.model.definition import Model
from pyspark_incr.sqltext import ident, literal

#: Table properties pyspark-incr owns; others on the table are left alone.
PREFIX = "incr."
#: ``incr.*`` properties a writer keeps on its table (not documentation: never unset by ``update_table``).
SOURCES_VERSION = "incr.sources_version"
WRITER_PROPERTIES = frozenset({SOURCES_VERSION})


def table_properties(model: Model) -> dict[str, str]:
    """The properties a model's table carries: its physical_properties plus ``incr.*`` documentation."""
    props = dict(model.physical_properties)
    docs = {"tags": ",".join(model.tags), "terms": ",".join(model.terms), "owner": model.owner or ""}
    props.update({PREFIX + k: v for k, v in docs.items() if v})
    return props


def properties_clause(props: dict[str, str]) -> str:
    if not props:
        return ""
    return " TBLPROPERTIES (" + ", ".join(f"{literal(k)} = {literal(v)}" for k, v in sorted(props.items())) + ")"


def create_view_sql(view: exp.Table, columns: list[str], model: Model, query_sql: str,
                    comment: str | None = None, properties: dict[str, str] | None = None) -> str:
    """``CREATE OR REPLACE VIEW`` with the model's column comments, description and properties.

    >>> from pyspark_incr.model.definition import parse_model
    >>> m = parse_model("MODEL (name s.t, kind FULL, description 'Daily', column_descriptions (a = 'The a')); SELECT 1 AS a, 2 AS b")
    >>> print(create_view_sql(exp.to_table("s.t"), ["a", "b"], m, "SELECT a, b FROM p.s__t__01"))
    CREATE OR REPLACE VIEW s.t (`a` COMMENT 'The a', `b`) COMMENT 'Daily' AS SELECT a, b FROM p.s__t__01
    """
    comments = dict(model.column_descriptions)
    listed = ", ".join(
        ident(c) + (f" COMMENT {literal(comments[c])}" if c in comments else "")
        for c in columns
    )
    comment = comment or model.description  # ``comment``: an environment view's own (virtual_properties)
    clauses = f" COMMENT {literal(comment)}" if comment else ""
    clauses += properties_clause({**table_properties(model), **(properties or {})})
    return f"CREATE OR REPLACE VIEW {view.sql('spark')} ({listed}){clauses} AS {query_sql}"


def columns_ddl(spark: Any, df: Any, model: Model) -> str:
    """``df``'s columns as DDL (types written by Spark itself), with the model's column descriptions as comments.

    Names and comments are quoted here, not by Spark's ``toDDL``: it leaves backslashes in a comment unescaped,
    so a description holding ``\\'`` ended the literal early and the CREATE TABLE failed to parse.
    """
    comments = dict(model.column_descriptions)
    types = spark._jvm.org.apache.spark.sql.types.DataType
    columns = []
    for field in json.loads(df.schema.json())["fields"]:
        ddl = f"{ident(field['name'])} {types.fromJson(json.dumps(field['type'])).sql()}"
        if not field.get("nullable", True):
            ddl += " NOT NULL"
        if field["name"] in comments:
            ddl += f" COMMENT {literal(comments[field['name']])}"
        columns.append(ddl)
    return ", ".join(columns)


def update_table(spark: Any, table: exp.Table, model: Model, partition_columns: set[str]) -> None:
    """Bring an existing table's comment, column comments and ``incr.*`` properties up to date."""
    name = table.sql("spark")
    spark.sql(ddl.comment_table(table, model.description or None))
    existing = set(spark.table(name).columns)
    for column, text in model.column_descriptions:
        if column in existing and column not in partition_columns:
            spark.sql(ddl.comment_column(table, column, text))
    wanted = {k: v for k, v in table_properties(model).items() if k.startswith(PREFIX)}
    current = {r.key for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect() if r.key.startswith(PREFIX)}
    stale = current - set(wanted) - WRITER_PROPERTIES
    if stale:
        keys = ", ".join(literal(k) for k in sorted(stale))
        spark.sql(f"ALTER TABLE {name} UNSET TBLPROPERTIES IF EXISTS ({keys})")
    if wanted:
        spark.sql(ddl.set_properties(table, wanted))
