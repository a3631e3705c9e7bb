"""Calling a macro function as SQLMesh's evaluator does: the evaluator first, the call's arguments bound to
the function's parameters (``name := value`` by keyword) and each converted to its annotation
(:func:`pyspark_incr.model.macro_values.coerce`); what it raises reported naming the model and the macro.
Also a lambda's body with its parameters bound (:func:`bind_lambda`), and the columns of a table a macro asks
for (``@STAR(raw.orders)``), read from the active Spark session.

>>> def add(evaluator, a: int, b: int = 1):
...     return a + b
>>> invoke(None, "add", add, [exp.Literal.number(2), exp.PropertyEQ(this=exp.to_identifier("b"),
...        expression=exp.Literal.number(5))], "model m")
7
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from sqlglot import exp

from pyspark_incr.errors import IncrError, ModelDefinitionError
from pyspark_incr.model.macro_values import coerce, hints, to_expression


class NeedsRuntime(Exception):
    """A macro needs the value of a runtime variable (or a schema) that parse time does not know."""


def invoke(evaluator: Any, name: str, func: Callable[..., Any], args: list[Any], where: str,
           dialect: str = "spark") -> Any:
    """``func(evaluator, *args)`` with its arguments bound and coerced; its own result, unconverted."""
    positional = [a for a in args if not isinstance(a, exp.PropertyEQ)]
    keywords = {a.this.name: a.expression for a in args if isinstance(a, exp.PropertyEQ)}
    try:
        signature = inspect.signature(func)
        bound = signature.bind(evaluator, *positional, **keywords)
    except TypeError as e:
        raise ModelDefinitionError(f"{where}: macro @{name.upper()}: {e}; check its arguments") from None
    annotations = hints(func)
    for param, value in list(bound.arguments.items())[1:]:
        hint = annotations.get(param)
        kind = signature.parameters[param].kind
        if kind == inspect.Parameter.VAR_POSITIONAL:
            bound.arguments[param] = tuple(coerce(v, hint, dialect) for v in value)
        elif kind == inspect.Parameter.VAR_KEYWORD:
            bound.arguments[param] = {k: coerce(v, hint, dialect) for k, v in value.items()}
        else:
            bound.arguments[param] = coerce(value, hint, dialect)
    try:
        return func(*bound.args, **bound.kwargs)
    except (NeedsRuntime, IncrError):
        raise
    except Exception as e:  # noqa: BLE001 - a project's macro may raise anything
        raise ModelDefinitionError(f"{where}: macro @{name} failed: {type(e).__name__}: {e}") from None


def bind_lambda(body: exp.Expression, values: dict[str, Any]) -> exp.Expression:
    """A lambda body with its parameters (plain names, not ``@x``) replaced by the argument values."""

    def replace(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.Identifier, exp.Column)) and not (isinstance(node, exp.Column) and node.table):
            if isinstance(node.parent, (exp.Alias, exp.TableAlias)) and node.arg_key == "alias":
                return node
            if isinstance(node.parent, exp.Column) and isinstance(node, exp.Identifier):
                return node
            name = node.name.lower()
            if name in values:
                return to_expression(values[name])
        return node

    return body.transform(replace, copy=False)


def spark_columns(table: str) -> dict[str, str] | None:
    """Column name -> Spark type of ``table`` in the active Spark session; None when there is none or no table."""
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    # A procedure's Python side may run on a thread that has no active session, but the application's is there.
    spark = SparkSession.getActiveSession()
    if spark is None and SparkContext._active_spark_context is not None:
        spark = SparkSession.builder.getOrCreate()
    if spark is None:
        return None
    try:
        fields = spark.table(table).schema.fields
    except Exception:  # noqa: BLE001 - a missing table is reported by the caller, by name
        return None
    return {f.name: f.dataType.simpleString() for f in fields}
