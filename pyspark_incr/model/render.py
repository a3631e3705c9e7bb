"""Rendering a model's query for one interval: macros, model references, output filter.

Macros follow SQLMesh: ends are inclusive, so for the daily interval
``[2024-01-01, 2024-01-02)`` both ``@start_ds`` and ``@end_ds`` are '2024-01-01'.

>>> from pyspark_incr.intervals import Interval, to_ms
>>> day = Interval(to_ms("2024-01-01"), to_ms("2024-01-02"))
>>> v = macro_values(day, to_ms("2024-01-03"))
>>> v["start_ds"].sql(), v["end_ds"].sql(), v["end_ts"].sql()
("'2024-01-01'", "'2024-01-01'", "'2024-01-01 23:59:59.999999'")
>>> v["start_date"].sql("spark"), v["end_millis"].sql()
("CAST('2024-01-01' AS DATE)", '1704153599999')
>>> v["end_tstz"].sql(), v["start_dtntz"].sql("spark")
("'2024-01-01 23:59:59.999999+00:00'", "CAST('2024-01-01 00:00:00' AS TIMESTAMP)")
"""

from __future__ import annotations

import json
from datetime import timedelta

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.intervals.times import to_datetime
from pyspark_incr.model import blueprints
from pyspark_incr.model.macro_eval import MacroEvaluator, spark_columns
from pyspark_incr.model.macro_python import from_sources
from pyspark_incr.model.macros import PREFIX, THIS_MODEL, macro_table

#: Alias of the subquery the output filter wraps the model query in.
QUERY_ALIAS = "__incr_query"
DEFAULT_TIME_FORMAT = "%Y-%m-%d"
#: The cursor macros of a first load without ``initial_value``: no high-water mark, everything is read.
FIRST_LOAD: dict[str, exp.Expression] = {"last_value": exp.null(), "is_backfill": exp.true()}


def macro_values(interval: Interval, execution_ms: int) -> dict[str, exp.Expression]:
    """The SQLMesh time macros for ``interval`` as SQL expressions."""
    start = to_datetime(interval.start)
    end = to_datetime(interval.end) - timedelta(microseconds=1)
    now = to_datetime(execution_ms)
    values: dict[str, exp.Expression] = {}
    for prefix, dt, ms in (("start", start, interval.start), ("end", end, interval.end - 1), ("execution", now, execution_ms)):
        ts = dt.strftime("%Y-%m-%d %H:%M:%S") + (f".{dt.microsecond:06d}" if dt.microsecond else "")
        values[f"{prefix}_ds"] = exp.Literal.string(dt.strftime("%Y-%m-%d"))
        values[f"{prefix}_ts"] = exp.Literal.string(ts)
        values[f"{prefix}_tstz"] = exp.Literal.string(ts + "+00:00")
        values[f"{prefix}_date"] = exp.cast(exp.Literal.string(dt.strftime("%Y-%m-%d")), "DATE")
        values[f"{prefix}_dt"] = exp.cast(exp.Literal.string(ts + "+00:00"), "TIMESTAMP")
        # SQLMesh renders a naive datetime on Spark as a TIMESTAMP: the same type, so the same tables
        values[f"{prefix}_dtntz"] = exp.cast(exp.Literal.string(ts), "TIMESTAMP")
        values[f"{prefix}_millis"] = exp.Literal.number(ms)
        values[f"{prefix}_epoch"] = exp.Literal.number(dt.timestamp())
        values[f"{prefix}_hour"] = exp.Literal.number(dt.hour)
    return values


def render_query(
    query: str,
    interval: Interval,
    execution_ms: int,
    *,
    where: str,
    table_map: dict[str, exp.Table] | None = None,
    this_table: exp.Table | None = None,
    embedded: dict[str, str] | None = None,
    macros: dict[str, exp.Expression] | None = None,
    pushdown: dict[str, exp.Expression] | None = None,
    context: str = "",
) -> exp.Query:
    """The model query with runtime macros substituted and other models mapped to what this environment reads.

    ``table_map`` maps model names to their tables; ``embedded`` maps EMBEDDED model
    names to their queries, which are inlined as subqueries rendered for the same interval.
    ``macros`` adds the values of a kind's own macros (the cursor writer's ``@last_value`` and
    ``@is_backfill``); without them those render as on a first load without ``initial_value``
    (:data:`FIRST_LOAD`), which is what plan validation analyzes. Only cursor models reach that
    default: parsing refuses the cursor macros in every other kind.
    ``pushdown`` maps models to a filter over their own columns: each reference reads only those rows
    (``(SELECT * FROM table WHERE filter) AS alias``; see :mod:`pyspark_incr.safety.pushdown`).
    ``context`` is the model's (:attr:`Model.context`): the Python macros a call left for the run needs.

    >>> from pyspark_incr.intervals import Interval, to_ms
    >>> day = Interval(to_ms("2024-01-01"), to_ms("2024-01-02"))
    >>> render_query("SELECT * FROM raw.e AS e JOIN raw.d ON e.k = d.k", day, 0, where="m",
    ...              pushdown={"raw.e": sqlglot.parse_one("ds = '2024-01-01'")}).sql("spark")
    "SELECT * FROM (SELECT * FROM raw.e WHERE ds = '2024-01-01') AS e JOIN raw.d ON e.k = d.k"
    """
    ast = sqlglot.parse_one(query, read="spark")
    values = {**macro_values(interval, execution_ms), **FIRST_LOAD, **(macros or {})}
    values.setdefault("runtime_stage", exp.Literal.string("evaluating"))  # pre/post-statements: also "creating"
    if this_table is not None:
        values[THIS_MODEL] = exp.Literal.string(this_table.sql("spark"))
    if PREFIX in query.lower():
        ast = _finish_macros(ast, values, where, table_map, context)

    def substitute(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Parameter):
            name = node.name.lower()
            if name not in values:
                known = ", ".join("@" + k for k in sorted(values))
                raise ModelDefinitionError(f"{where}: unknown macro @{node.name}; known macros: {known}")
            return values[name].copy()
        if not isinstance(node, exp.Table) or node.catalog:
            return node
        if macro_table(node) == THIS_MODEL and this_table is not None:
            return _aliased(this_table.copy(), node.args.get("alias"))
        alias = node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name))
        key = f"{node.db}.{node.name}".lower()
        if node.db and embedded and key in embedded:
            inner = render_query(embedded[key], interval, execution_ms, where=f"model {key} (embedded in {where})",
                                 table_map=table_map, embedded=embedded)
            return exp.Subquery(this=inner, alias=alias)
        target = (table_map or {}).get(key) if node.db else None
        if node.db and pushdown and key in pushdown:
            read = target.copy() if target is not None else exp.table_(node.name, node.db)
            return exp.Subquery(this=exp.select("*").from_(read).where(pushdown[key].copy()), alias=alias)
        return _aliased(target.copy(), alias) if target is not None else node

    return ast.transform(substitute)


def _finish_macros(ast: exp.Expression, values: dict[str, exp.Expression], where: str,
                   table_map: dict[str, exp.Table] | None, context: str) -> exp.Expression:
    """The macro calls parsing left for run time (they need the interval's values), evaluated."""

    def columns(name: str) -> dict[str, str] | None:
        target = (table_map or {}).get(name.lower())
        return spark_columns(target.sql("spark") if target is not None else name)

    stored = json.loads(context) if context else {}
    python = from_sources(tuple(tuple(f) for f in stored["macros"])).functions if stored.get("macros") else {}
    # A Python macro reading evaluator.var/blueprint_var gets the values the model was parsed with.
    evaluator = MacroEvaluator(runtime=values, python=python, where=where, schemas=columns,
                               variables=stored.get("variables"), blueprint=blueprints.stored_variables(stored))
    # A parameter whose name has no value here is left for the substitution below, which refuses it by name.
    return evaluator.finish(ast)


def _aliased(table: exp.Table, alias: exp.TableAlias | None) -> exp.Table:
    table.set("alias", alias)
    return table


def time_bounds(interval: Interval, spark_type: str, fmt: str | None) -> tuple[exp.Expression, exp.Expression, bool]:
    """Literals bounding ``interval`` in a column of ``spark_type``; the flag says the upper bound is inclusive.

    >>> from pyspark_incr.intervals import Interval, to_ms
    >>> day = Interval(to_ms("2024-01-01"), to_ms("2024-01-03"))
    >>> [e.sql("spark") for e in time_bounds(day, "date", None)[:2]]
    ["CAST('2024-01-01' AS DATE)", "CAST('2024-01-03' AS DATE)"]
    >>> lo, hi, inclusive = time_bounds(day, "string", "%Y%m%d")
    >>> lo.sql(), hi.sql(), inclusive
    ("'20240101'", "'20240102'", True)
    >>> time_bounds(day, "int", "%Y%m%d")[1].sql()
    '20240102'
    """
    start, end = to_datetime(interval.start), to_datetime(interval.end)
    if spark_type == "date":
        # A partial interval ends mid-day: its last (incomplete) day is still in.
        last_day = (end - timedelta(microseconds=1)).date() + timedelta(days=1)
        return (exp.cast(exp.Literal.string(start.strftime("%Y-%m-%d")), "DATE"),
                exp.cast(exp.Literal.string(last_day.isoformat()), "DATE"), False)
    if spark_type.startswith("timestamp"):
        return (_ts_literal(start, spark_type), _ts_literal(end, spark_type), False)
    last = end - timedelta(microseconds=1)
    fmt = fmt or DEFAULT_TIME_FORMAT
    lo, hi = start.strftime(fmt), last.strftime(fmt)
    if spark_type == "string":
        return exp.Literal.string(lo), exp.Literal.string(hi), True
    if spark_type in ("int", "bigint", "smallint") and lo.isdigit() and hi.isdigit():
        return exp.Literal.number(lo), exp.Literal.number(hi), True
    raise ModelDefinitionError(
        f"time column type {spark_type} cannot hold times in format {fmt!r}; "
        "use a DATE, TIMESTAMP, STRING or integer column"
    )


def _ts_literal(dt, spark_type: str) -> exp.Expression:
    if spark_type == "timestamp_ntz":
        return exp.cast(exp.Literal.string(dt.strftime("%Y-%m-%d %H:%M:%S")), "TIMESTAMP_NTZ")
    return exp.cast(exp.Literal.string(dt.strftime("%Y-%m-%d %H:%M:%S") + "+00:00"), "TIMESTAMP")


def output_filter(
    query: exp.Query, time_column: str, interval: Interval, spark_type: str, fmt: str | None
) -> exp.Select:
    """``SELECT * FROM (query) WHERE time_column in interval``: no row outside the interval is ever written."""
    lo, hi, inclusive = time_bounds(interval, spark_type, fmt)
    col = exp.column(time_column, table=QUERY_ALIAS, quoted=True)
    upper = exp.LTE(this=col.copy(), expression=hi) if inclusive else exp.LT(this=col.copy(), expression=hi)
    return (
        exp.select("*")
        .from_(exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier(QUERY_ALIAS))))
        .where(exp.and_(exp.GTE(this=col, expression=lo), upper))
    )


def cursor_filter(query: exp.Query, cursor_column: str, last_value: exp.Expression | None) -> exp.Select:
    """``SELECT * FROM (query) WHERE cursor_column > last_value``: only rows above the high-water mark.

    Strictly greater: a row whose cursor equals the mark was appended already and is not appended
    again (a row arriving later with that same value is missed). Without a mark (a first load without ``initial_value``) every row
    with a cursor is read; a NULL cursor is never appended, as it could never become a mark.

    >>> q = sqlglot.parse_one("SELECT id, ts FROM raw")
    >>> cursor_filter(q, "ts", exp.cast(exp.Literal.number(5), "BIGINT")).sql("spark")
    'SELECT * FROM (SELECT id, ts FROM raw) AS __incr_query WHERE `__incr_query`.`ts` > CAST(5 AS BIGINT)'
    >>> cursor_filter(q, "ts", None).sql("spark")
    'SELECT * FROM (SELECT id, ts FROM raw) AS __incr_query WHERE NOT `__incr_query`.`ts` IS NULL'
    """
    col = exp.column(cursor_column, table=QUERY_ALIAS, quoted=True)
    condition = exp.not_(exp.Is(this=col, expression=exp.null())) if last_value is None else exp.GT(
        this=col, expression=last_value)
    return (
        exp.select("*")
        .from_(exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier(QUERY_ALIAS))))
        .where(condition)
    )
