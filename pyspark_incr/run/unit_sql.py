"""A unit test's view of its model: the interval, execution time and variables its ``vars`` set, and a SQL
model's query rendered with them, reading only the test's input views.

SQLMesh renders a test without ``start``/``end``/``execution_time`` for the epoch's first day; with
``execution_time``, CURRENT_TIMESTAMP, NOW() and CURRENT_DATE return it.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any, Mapping

from sqlglot import exp

from pyspark_incr.errors import IncrError, ModelDefinitionError
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.intervals.times import to_datetime, to_end_ms, to_ms
from pyspark_incr.model.definition import Model, reparse
from pyspark_incr.model.render import macro_values, render_query
from pyspark_incr.project.unit_tests import UnitTest
from pyspark_incr.run.unit_inputs import onto_fixtures, where

#: SQLMesh renders a test without start/end/execution_time for the epoch's first day.
EPOCH = "1970-01-01"


def rendered(test: UnitTest, model: Model, models: Mapping[str, Model], views: dict[str, exp.Table]) -> exp.Query:
    """The model's query for the test's interval and vars, reading only the input views."""
    model = with_variables(model, test)
    interval, execution_ms = times(test)
    embedded = {n: m.query for n, m in models.items() if m.kind.name == "EMBEDDED" and m.query and n not in views}
    query = render_query(model.query, interval, execution_ms, where=f"model {model.name}",
                         table_map={n: t for n, t in views.items() if n.count(".") == 1},
                         this_table=views.get(model.name), embedded=embedded, macros=_time_macros(test))
    query = onto_fixtures(query, views, test)
    return frozen(query, execution_ms) if "execution_time" in test.times else query


def times(test: UnitTest) -> tuple[Interval, int]:
    """The interval (``vars.start`` to ``vars.end``) and execution time (epoch ms) the test runs its model for."""
    start, end = (_time_text(test.times.get(k, EPOCH)) for k in ("start", "end"))
    at = where(test)
    interval = Interval(to_ms(start, f"{at}: vars.start"), to_end_ms(end, f"{at}: vars.end"))
    if interval.end <= interval.start:
        raise ModelDefinitionError(f"{at}: vars.end ({end}) is before vars.start ({start}); swap them")
    return interval, to_ms(_time_text(test.times.get("execution_time", EPOCH)), f"{at}: vars.execution_time")


def _time_text(value: Any) -> str:
    """A vars time as text: YAML reads an unquoted 2024-01-01 as a date, which must still end a range inclusively."""
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return value.isoformat() if isinstance(value, date) else str(value)


def with_variables(model: Model, test: UnitTest) -> Model:
    """The model parsed again with the test's ``vars`` over the project's variables (itself when it sets none)."""
    if not test.variables:
        return model
    context = json.loads(model.context) if model.context else {}
    context["variables"] = {**(context.get("variables") or {}), **test.variables}
    try:
        return reparse(model.definition, model.source, json.dumps(context, sort_keys=True, default=str))
    except IncrError as e:
        raise ModelDefinitionError(f"{where(test)}: with the test's vars, {e}") from None


def _time_macros(test: UnitTest) -> dict[str, exp.Expression]:
    """The single time macros the test's vars set (``start_ds: '2024-01-01'``), typed as the macro is."""
    template = macro_values(Interval(0, 1), 0)
    out = {}
    for name, value in test.times.items():
        if name not in template:
            continue
        shape = template[name]
        text = _time_text(value)
        if isinstance(shape, exp.Cast):
            out[name] = exp.cast(exp.Literal.string(text), shape.to.copy())
        elif shape.is_number:
            out[name] = exp.Literal.number(text)
        else:
            out[name] = exp.Literal.string(text)
    return out


def frozen(query: exp.Expression, execution_ms: int) -> Any:
    """``query`` with CURRENT_TIMESTAMP, NOW() and CURRENT_DATE at the test's execution time (UTC)."""
    now = to_datetime(execution_ms)
    text = exp.Literal.string(now.strftime("%Y-%m-%d %H:%M:%S") + (f".{now.microsecond:06d}" if now.microsecond else ""))

    def freeze(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.CurrentTimestamp) or (
                isinstance(node, exp.Anonymous) and node.name.lower() in ("now", "localtimestamp")):
            return exp.cast(text.copy(), "TIMESTAMP")
        if isinstance(node, exp.CurrentDate):
            return exp.cast(text.copy(), "DATE")
        return node

    return query.transform(freeze)
