"""Running a Python model: its ``execute`` called for one batch, the DataFrames it gives checked and cast to the
declared columns (:mod:`pyspark_incr.model.python_model` reads the file into a model record)."""

from __future__ import annotations

import inspect
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError, ModelQueryError
from pyspark_incr.model import blueprints, python_api, python_model


def function(model: Any) -> Callable[..., Any]:
    """The ``execute`` function of a Python model (its stored source run when this process has not yet)."""
    name = python_model.stored(model.context)[python_model.MARK]
    for reg in python_model.registrations(model.definition, model.source):
        if reg.name == name:
            return reg.func
    raise ModelDefinitionError(f"model {model.name}: {model.source} no longer declares @model({name!r})")


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def arguments(func: Callable[..., Any], start_ms: int, end_ms: int, execution_ms: int,
              variables: dict[str, Any]) -> dict[str, Any]:
    """What ``execute`` is called with besides the context: the batch's start and inclusive end, the execution
    time (UTC datetimes, as SQLMesh passes them) and the project variables its parameters name."""
    offered = {  # from whole milliseconds, exactly (a float of seconds may miss one by a microsecond)
        "start": _EPOCH + timedelta(milliseconds=start_ms),
        "end": _EPOCH + timedelta(milliseconds=end_ms) - timedelta(microseconds=1),
        "execution_time": _EPOCH + timedelta(milliseconds=execution_ms),
    }
    offered["latest"] = offered["execution_time"]  # SQLMesh's older name
    params = list(inspect.signature(func).parameters.values())[1:]  # the first takes the context
    named = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    lowered = {k.lower(): v for k, v in variables.items()}
    out = {k: v for k, v in offered.items() if k in named or takes_any}
    out.update({n: lowered[n.lower()] for n in named if n not in offered and n.lower() in lowered})
    return out


def rows(model: Any, spark: Any, tables: dict[str, Any], start_ms: int, end_ms: int, execution_ms: int) -> Any:
    """The DataFrame ``execute`` gives for one batch: its frames unioned, each checked against and cast to the
    declared columns (none: no rows)."""
    where = f"model {model.name}"
    variables = (python_model.stored(model.context).get("variables") or {})
    func = function(model)
    context = python_api.ExecutionContext(spark, tables, variables, python_model.stored(model.context).get(blueprints.KEY))
    frames = []
    try:
        out = func(context, **arguments(func, start_ms, end_ms, execution_ms, variables))
        for frame in (out if inspect.isgenerator(out) else [out]):
            frames.append(_declared(spark, frame, model, where))
    except ModelQueryError:
        raise
    except Exception as e:  # noqa: BLE001 - whatever the model's code raises fails its batch, named
        raise ModelQueryError(f"{where}: execute() in {model.source} raised {type(e).__name__}: "
                              f"{_first_line(e)}") from e
    frames = [f for f in frames if f is not None]
    if not frames:
        return spark.createDataFrame([], _ddl(model.columns))
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def _declared(spark: Any, frame: Any, model: Any, where: str) -> Any:
    """``frame`` (pandas or Spark) as a Spark DataFrame of exactly the declared columns and types."""
    if frame is None:
        raise ModelQueryError(f"{where}: execute() returned None; return a DataFrame, or yield nothing for no rows")
    names = [str(c) for c in frame.columns]
    declared = [c for c, _ in model.columns]
    missing = [c for c in declared if c.lower() not in {n.lower() for n in names}]
    extra = [n for n in names if n.lower() not in {c.lower() for c in declared}]
    if missing or extra:
        said = "; ".join(part for part in (f"lacks column(s) {', '.join(missing)}" if missing else "",
                                           f"has column(s) {', '.join(extra)} that columns= does not declare"
                                           if extra else "") if part)
        raise ModelQueryError(f"{where}: the DataFrame execute() returned {said}; return exactly the columns declared "
                              f"in @model(columns=...): {', '.join(declared)}")
    if not hasattr(frame, "createOrReplaceTempView"):  # pandas: collected on the driver already
        if len(frame) == 0:
            return None
        frame = _from_pandas(spark, frame, model)
    by_lower = {n.lower(): n for n in frame.columns}
    return frame.selectExpr(*[f"CAST({_q(by_lower[c.lower()])} AS {t}) AS {_q(c)}" for c, t in model.columns])


def _from_pandas(spark: Any, frame: Any, model: Any) -> Any:
    try:
        return spark.createDataFrame(frame)
    except Exception:  # noqa: BLE001 - types pandas cannot tell (a column of only None): the declared ones say
        ordered = frame[[c for c, _ in model.columns]] if all(c in frame.columns for c, _ in model.columns) else frame
        return spark.createDataFrame(ordered, _ddl(model.columns))


def _ddl(columns: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{_q(c)} {t}" for c, t in columns)


def _q(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql("spark")


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else "(no message)"

