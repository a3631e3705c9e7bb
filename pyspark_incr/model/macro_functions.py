"""SQLMesh's built-in macro functions (``@EACH``, ``@IF``, ``@STAR``, ...), by name in :data:`BUILTINS`.

Each receives the :class:`pyspark_incr.model.macro_eval.MacroEvaluator` first and its arguments as
sqlglot expressions (macros inside them already evaluated; lambdas as ``exp.Lambda``), and returns
an expression, a list of them (spliced where the call stands) or None (the call disappears).
"""

from __future__ import annotations

from typing import Any, Callable

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError

#: What NULL becomes in a surrogate key (SQLMesh's text, so keys match theirs).
NULL_KEY = "_sqlmesh_surrogate_key_null_"
#: Earth's diameter in miles, and the factor of each unit of @HAVERSINE_DISTANCE.
EARTH_DIAMETER_MI = 7922
UNITS = {"mi": 1.0, "km": 1.60934}
DATEPARTS = ("day", "week", "month", "quarter", "year")


def builtin(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as the built-in macro ``names`` (lowercase); :data:`BUILTINS` collects them."""

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        func.macro_names = names  # type: ignore[attr-defined]
        return func

    return register


def _truth(evaluator: Any, node: Any) -> bool:
    return bool(evaluator.eval_expression(node))


def _name(node: Any) -> str:
    return node.name if isinstance(node, exp.Expression) else str(node)


@builtin("each")
def each(evaluator, items, func):
    """``@EACH([a, b], x -> f(x))``: ``f(a), f(b)``."""
    return [r for item in evaluator.items(items) for r in _listed(evaluator.apply(func, item))]


@builtin("if")
def if_(evaluator, condition, true, false=None):
    """``@IF(cond, then[, else])``: ``then`` when ``cond`` holds, else ``else`` (or nothing)."""
    return true if _truth(evaluator, condition) else false


@builtin("filter")
def filter_(evaluator, items, func):
    """``@FILTER([1, 2, 3], x -> x > 1)``: ``[2, 3]``."""
    return exp.Array(expressions=[i for i in evaluator.items(items) if _truth(evaluator, evaluator.apply(func, i))])


@builtin("reduce")
def reduce_(evaluator, items, func):
    """``@REDUCE([a, b, c], (x, y) -> x + y)``: ``a + b + c``."""
    values = evaluator.items(items)
    if not values:
        return None
    acc = values[0]
    for value in values[1:]:
        acc = evaluator.apply(func, acc, value)
    return acc


@builtin("eval")
def eval_(evaluator, node):
    """``@EVAL(5 + 1)``: ``6``."""
    return evaluator.literal(evaluator.eval_expression(node))


@builtin("sql")
def sql(evaluator, text, into=None):
    """``@SQL('a + 1')``: the text parsed as SQL (into the expression type ``into`` names, if given)."""
    parsed = sqlglot.parse_one(_name(text), read=evaluator.dialect)
    if into is not None and not isinstance(parsed, getattr(exp, _name(into), exp.Expression)):
        raise ModelDefinitionError(f"{evaluator.where}: @SQL({_name(text)!r}) is not a {_name(into)}")
    return parsed


@builtin("var")
def var(evaluator, name, default=None):
    """``@VAR('name'[, default])``: a project variable (config.yaml ``variables``), never a blueprint's."""
    key = _variable_name(evaluator, name, "VAR", "region', 'eu")
    if key in evaluator.project_variables:
        return evaluator.literal(evaluator.project_variables[key])
    if default is not None:
        return default
    raise ModelDefinitionError(
        f"{evaluator.where}: variable {key!r} is not defined; define it under variables: in config.yaml, "
        "with @DEF, or give @VAR a default")


@builtin("blueprint_var")
def blueprint_var(evaluator, name, default=None):
    """``@BLUEPRINT_VAR('name'[, default])``: a variable of the model's blueprint entry, never a project's."""
    key = _variable_name(evaluator, name, "BLUEPRINT_VAR", "customer', 'none")
    if key in evaluator.blueprint_variables:
        return evaluator.literal(evaluator.blueprint_variables[key])
    if default is not None:
        return default
    raise ModelDefinitionError(
        f"{evaluator.where}: blueprint variable {key!r} is not defined; give it in each entry of the model's "
        "blueprints, or give @BLUEPRINT_VAR a default")


def _variable_name(evaluator, name, macro: str, example: str) -> str:
    if not isinstance(name, exp.Literal) or not name.is_string:
        raise ModelDefinitionError(f"{evaluator.where}: @{macro} takes a quoted variable name and an optional "
                                   f"default, e.g. @{macro}('{example}')")
    return name.this.lower()


@builtin("and")
def and_(evaluator, *conditions):
    """``@AND(a, NULL, b)``: ``a AND b`` (NULL operands dropped)."""
    kept = [c for c in conditions if not isinstance(c, exp.Null)]
    return exp.and_(*kept) if kept else None


@builtin("or")
def or_(evaluator, *conditions):
    """``@OR(a, NULL, b)``: ``a OR b`` (NULL operands dropped)."""
    kept = [c for c in conditions if not isinstance(c, exp.Null)]
    return exp.or_(*kept) if kept else None


def _safe(op: type[exp.Expression]) -> Callable[..., exp.Expression]:
    def combine(evaluator, *fields):
        all_null = exp.and_(*(exp.Is(this=f.copy(), expression=exp.null()) for f in fields))
        total = exp.func("COALESCE", fields[0].copy(), exp.Literal.number(0))
        for f in fields[1:]:
            total = op(this=total, expression=exp.func("COALESCE", f.copy(), exp.Literal.number(0)))
        return exp.Case(ifs=[exp.If(this=all_null, true=exp.null())], default=total)

    return combine


safe_add = builtin("safe_add")(_safe(exp.Add))
safe_sub = builtin("safe_sub")(_safe(exp.Sub))


@builtin("safe_div")
def safe_div(evaluator, numerator, denominator):
    """``@SAFE_DIV(a, b)``: ``a / NULLIF(b, 0)``."""
    return exp.Div(this=numerator, expression=exp.Nullif(this=denominator, expression=exp.Literal.number(0)))


@builtin("generate_surrogate_key")
def generate_surrogate_key(evaluator, *fields, hash_function=None):
    """``@GENERATE_SURROGATE_KEY(a, b)``: MD5 of the fields as text, NULLs marked, joined by '|'."""
    parts: list[exp.Expression] = []
    for i, field in enumerate(fields):
        if i:
            parts.append(exp.Literal.string("|"))
        parts.append(exp.func("COALESCE", exp.cast(field, "TEXT"), exp.Literal.string(NULL_KEY)))
    name = _name(hash_function) if hash_function is not None else "MD5"
    return exp.func(name, exp.func("CONCAT", *parts), dialect=evaluator.dialect)


@builtin("haversine_distance")
def haversine_distance(evaluator, lat1, lon1, lat2, lon2, unit=None):
    """``@HAVERSINE_DISTANCE(lat1, lon1, lat2, lon2[, 'mi'|'km'])``: the great-circle distance."""
    chosen = _name(unit).lower() if unit is not None else "mi"
    if chosen not in UNITS:
        raise ModelDefinitionError(f"{evaluator.where}: @HAVERSINE_DISTANCE unit must be 'mi' or 'km', got {chosen!r}")

    def half_sine_squared(a, b):
        half = exp.Div(this=exp.paren(exp.Sub(this=b.copy(), expression=a.copy())), expression=exp.Literal.number(2))
        return exp.func("POWER", exp.func("SIN", exp.func("RADIANS", half)), exp.Literal.number(2))

    cosines = exp.Mul(this=exp.Mul(this=exp.func("COS", exp.func("RADIANS", lat1.copy())),
                                   expression=exp.func("COS", exp.func("RADIANS", lat2.copy()))),
                      expression=half_sine_squared(lon1, lon2))
    inner = exp.Add(this=exp.paren(half_sine_squared(lat1, lat2)), expression=exp.paren(cosines))
    distance = exp.Mul(this=exp.Literal.number(EARTH_DIAMETER_MI),
                       expression=exp.func("ASIN", exp.func("SQRT", inner)))
    return exp.Mul(this=distance, expression=exp.Literal.number(UNITS[chosen]))


@builtin("pivot")
def pivot(evaluator, column, values, alias=True, agg="SUM", cmp="=", prefix="", suffix="", then_value=1,
          else_value=0, quote=True, distinct=False):
    """``@PIVOT(status, ['a', 'b'])``: ``SUM(CASE WHEN status = 'a' THEN 1 ELSE 0 END) AS "'a'"``, ..."""
    text = lambda v: _name(v) if isinstance(v, exp.Expression) else str(v)  # noqa: E731
    flag = lambda v: evaluator.eval_expression(v) if isinstance(v, exp.Expression) else v  # noqa: E731
    out = []
    for value in evaluator.items(values):
        condition = sqlglot.parse_one(f"a {text(cmp)} b", read="spark")
        condition.set("this", column.copy())
        condition.set("expression", value.copy())
        case = exp.Case(ifs=[exp.If(this=condition, true=evaluator.literal(_value(then_value)))],
                        default=evaluator.literal(_value(else_value)))
        aggregate = exp.func(text(agg), exp.Distinct(expressions=[case]) if flag(distinct) else case)
        if flag(alias):
            name = f"{text(prefix)}{value.sql('spark')}{text(suffix)}"
            aggregate = exp.alias_(aggregate, exp.to_identifier(name, quoted=bool(flag(quote))))
        out.append(aggregate)
    return out


def _value(node: Any) -> Any:
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else (int(node.this) if node.this.isdigit() else float(node.this))
    return node


@builtin("star")
def star(evaluator, relation, alias=None, exclude=None, prefix=None, suffix=None, quote_identifiers=None,
         except_=None):
    """``@STAR(foo, f, [c], 'p_', '_s')``: every column of ``foo`` but ``c`` as ``CAST(f.col AS type) AS p_col_s``."""
    dropped = {_name(c).lower() for c in evaluator.items(exclude if exclude is not None else except_ or exp.Array())}
    qualifier = _name(alias) if alias is not None else (relation.name if isinstance(relation, exp.Expression) else "")
    quoted = True if quote_identifiers is None else bool(evaluator.eval_expression(quote_identifiers))
    names = {c: t for c, t in evaluator.columns_to_types(relation.sql("spark")).items() if c.lower() not in dropped}
    out = []
    for name, kind in names.items():
        col = exp.column(name, table=qualifier or None, quoted=quoted)
        value = col if kind.is_type(exp.DataType.Type.UNKNOWN) else exp.cast(col, kind)
        label = f"{_name(prefix) if prefix is not None else ''}{name}{_name(suffix) if suffix is not None else ''}"
        out.append(exp.alias_(value, exp.to_identifier(label, quoted=quoted)))
    return out


@builtin("union")
def union(evaluator, *args):
    """``@UNION(['all'|'distinct', ]a, b, ...)`` (optionally a condition first): the columns a and b share."""
    args = list(args)
    if args and not (isinstance(args[0], exp.Literal) and args[0].is_string) and not isinstance(args[0], exp.Column):
        if not evaluator.eval_expression(args.pop(0)):
            args = args[1:2] if args and isinstance(args[0], exp.Literal) and args[0].is_string else args[:1]
    kind = _name(args.pop(0)).lower() if args and isinstance(args[0], exp.Literal) and args[0].is_string else "all"
    if kind not in ("all", "distinct"):
        raise ModelDefinitionError(f"{evaluator.where}: @UNION type must be 'all' or 'distinct', got {kind!r}")
    if not args:
        raise ModelDefinitionError(f"{evaluator.where}: @UNION needs at least one table")
    schemas = [evaluator.columns_to_types(t.sql("spark")) for t in args]
    shared = [(c, t) for c, t in schemas[0].items() if all(c in s and s[c] == t for s in schemas[1:])]
    selects = [exp.select(*(exp.alias_(exp.cast(exp.column(c), t), c) for c, t in shared))
               .from_(exp.to_table(t.sql("spark"))) for t in args]
    query = selects[0]
    for select in selects[1:]:
        query = exp.union(query, select, distinct=kind == "distinct")
    return query


@builtin("deduplicate")
def deduplicate(evaluator, relation, partition_by, order_by):
    """``@DEDUPLICATE(t, [id], ['ts DESC'])``: one row of ``t`` per ``id``, the first by ``ts DESC``."""
    order = [sqlglot.parse_one(f"SELECT 1 ORDER BY {_name(o)}", read=evaluator.dialect).args["order"].expressions[0]
             for o in evaluator.items(order_by)]
    window = exp.Window(this=exp.RowNumber(), partition_by=[p.copy() for p in evaluator.items(partition_by)],
                        order=exp.Order(expressions=order))
    return exp.select("*").from_(exp.to_table(relation.sql("spark"))).qualify(
        exp.EQ(this=window, expression=exp.Literal.number(1)))


@builtin("date_spine")
def date_spine(evaluator, datepart, start_date, end_date):
    """``@DATE_SPINE('day', '2024-01-01', '2024-01-16')``: one row per day (both ends included)."""
    part = _name(datepart).lower()
    if part not in DATEPARTS:
        raise ModelDefinitionError(f"{evaluator.where}: @DATE_SPINE datepart must be one of {', '.join(DATEPARTS)}, "
                                   f"got {part!r}")
    column = f"date_{part}"
    step = exp.Interval(this=exp.Literal.string("3" if part == "quarter" else "1"),
                        unit=exp.var("MONTH" if part == "quarter" else part.upper()))
    series = exp.GenerateSeries(start=exp.cast(start_date, "DATE"), end=exp.cast(end_date, "DATE"), step=step)
    dates = exp.cast(series, exp.DataType.build("ARRAY<DATE>"))
    unnest = exp.Unnest(expressions=[dates], alias=exp.TableAlias(this=exp.to_identifier("_exploded"),
                                                                  columns=[exp.to_identifier(column)]))
    return exp.select(exp.alias_(exp.column(column, table="_exploded"), column)).from_(unnest)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else ([] if value is None else [value])


#: The built-in macros by lowercase name.
BUILTINS: dict[str, Callable[..., Any]] = {
    name: func for func in list(globals().values()) if callable(func) for name in getattr(func, "macro_names", ())
}
