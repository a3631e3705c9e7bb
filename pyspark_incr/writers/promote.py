"""Promotion: an environment's view of a model is pointed at the physical table of its version.

The view lists the table's columns with the model's column descriptions, and
carries its description and ``incr.*`` properties, so the environment object a
user reads is documented like the model. Swapping it is one catalog call.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from pyspark_incr.errors import PromotionError
from pyspark_incr.model import extras
from pyspark_incr.sqltext import ident
from pyspark_incr.writers import docs, tables
from pyspark_incr.writers.base import first_line


def point_view(spark: Any, mp: Any) -> None:
    """``CREATE OR REPLACE VIEW <env view> AS SELECT <columns> FROM <physical table>`` for one model plan."""
    tables.ensure_schema(spark, mp.view)
    _clear_the_way(spark, mp)
    spark.sql(view_sql(mp.view, mp.table, spark.table(mp.table_name).columns, mp.model))


def run_on_virtual_update(spark: Any, mp: Any) -> None:
    """The model's ON_VIRTUAL_UPDATE statements, ``@this_model`` being the view just (re)pointed.

    A failing statement is refused naming the model, its place and Spark's reason; those before it ran.
    """
    source = mp.model.source if mp.model.source != "registry" else ""
    for statement, at in mp.model.on_virtual_update:
        at = f"{source}: {at}" if source else at
        sql = extras.render_statement(statement, mp.view)
        try:
            spark.sql(sql)
        except Exception as e:  # noqa: BLE001 - Spark raises many types; the statement is named with its place
            raise PromotionError(f"model {mp.name}: on_virtual_update statement at {at} ({sql}) failed: "
                                 f"{first_line(e)}; the view shows the new version: fix the statement, and the next "
                                 "apply changing the model runs the statements again") from e


def view_sql(view: exp.Table, table: exp.Table, columns: list[str], model: Any) -> str:
    """The view statement, columns documented.

    >>> from pyspark_incr.model.definition import parse_model
    >>> m = parse_model("MODEL (name s.t, kind FULL, description 'Daily', column_descriptions (a = 'The a')); SELECT 1 AS a, 2 AS b")
    >>> print(view_sql(exp.to_table("s.t"), exp.to_table("p.s__t__01"), ["a", "b"], m))
    CREATE OR REPLACE VIEW s.t (`a` COMMENT 'The a', `b`) COMMENT 'Daily' AS SELECT `a`, `b` FROM p.s__t__01
    """
    select = ", ".join(ident(c) for c in columns)
    comment, properties = extras.view_properties(model)  # virtual_properties
    return docs.create_view_sql(view, columns, model, f"SELECT {select} FROM {table.sql('spark')}", comment, properties)


def check_the_way(spark: Any, mp: Any) -> None:
    """Raise when a table pyspark-incr did not create stands where the model's view goes (checked before a plan runs)."""
    if mp.promotes and mp.view_exists and mp.previous_table != mp.view_name and _blocked_by_a_table(spark, mp):
        raise _in_the_way(mp)


def _clear_the_way(spark: Any, mp: Any) -> None:
    """Drop the model's own table of the layout before versions (a table named like the view); refuse any other."""
    if _blocked_by_a_table(spark, mp):
        if mp.previous_table != mp.view_name:
            raise _in_the_way(mp)
        tables.drop(spark, mp.view)


def _blocked_by_a_table(spark: Any, mp: Any) -> bool:
    return tables.exists(spark, mp.view) and not tables.is_view(spark, mp.view)


def _in_the_way(mp: Any) -> PromotionError:
    return PromotionError(
        f"model {mp.name}: {mp.view_name} is a table pyspark-incr did not create, and the environment "
        f"shows the model as a view there: rename the table (ALTER TABLE {mp.view_name} RENAME TO ...) or drop it"
    )
