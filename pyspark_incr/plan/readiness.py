"""Checking a model's signals: which of its missing intervals are ready to build (SQLMesh's semantics).

Every signal of the model must say an interval is ready; an interval that is not waits (not built,
not recorded, checked again by the next call). A Python signal is called once per contiguous run of
missing intervals with ``batch`` (their (start, end) UTC datetimes) and its arguments, and returns
True (all), False (none) or the ready sub-list; a SQL signal's query runs once per interval with that
interval's time macros and says ready when its first value is TRUE. Signals run in the order given,
each on what the ones before it left ready.
"""

from __future__ import annotations

import inspect
from functools import lru_cache
from typing import Any, Callable

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import IncrError, ModelQueryError
from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.intervals.times import to_datetime, to_ms
from pyspark_incr.model import pyfiles
from pyspark_incr.model.definition import Model
from pyspark_incr.model.render import render_query
from pyspark_incr.model.signals import Signal, SignalContext


class Readiness:
    """What checking the signals found: the ready intervals, and the waiting ones with why."""

    def __init__(self, ready: IntervalSet, waiting: list[tuple[Interval, str]]):
        self.ready, self.waiting = ready, waiting


def unit_intervals(model: Model, ranges: IntervalSet) -> list[Interval]:
    """``ranges`` cut at the model's interval boundaries (a partial last interval stays partial).

    >>> from pyspark_incr.model.definition import parse_model
    >>> m = parse_model("MODEL (name a.b, kind FULL); SELECT 1 AS x")
    >>> [str(i) for i in unit_intervals(m, IntervalSet([Interval(to_ms("2024-01-01"), to_ms("2024-01-02 06:00:00"))]))]
    ['[2024-01-01, 2024-01-02)', '[2024-01-02, 2024-01-02 06:00:00)']
    """
    schedule, cut = model.schedule, []
    for r in ranges:
        start = r.start
        while start < r.end:
            end = min(schedule.unit.add(schedule.floor(start), 1), r.end)
            cut.append(Interval(start, end))
            start = end
    return cut


def check(spark: Any, model: Model, missing: IntervalSet, execution_ms: int,
          table_map: dict[str, exp.Table], embedded: dict[str, str]) -> Readiness:
    """Run ``model``'s signals over ``missing``; a signal that fails raises :class:`ModelQueryError`
    naming the model and the signal."""
    ready = unit_intervals(model, missing)
    why: dict[Interval, str] = {}
    for signal in model.signals:
        try:
            if signal.query is not None:
                kept = [i for i in ready
                        if _query_says_ready(spark, model, signal, i, execution_ms, table_map, embedded)]
            else:
                kept = _python_ready(spark, signal, ready)
        except IncrError as e:
            raise ModelQueryError(f"model {model.name}: signal {signal.name}: {e}") from None
        except Exception as e:  # noqa: BLE001 - whatever the project's signal raises, said with its name
            raise ModelQueryError(f"model {model.name}: signal {signal.name} failed: {type(e).__name__}: "
                                  f"{str(e).splitlines()[0] if str(e) else ''}; fix the signal (nothing of "
                                  "the model was built)") from None
        for i in ready:
            if i not in kept:
                why.setdefault(i, f"signal {signal.name} says not ready")
        ready = kept
    waiting = [(i, why[i]) for i in unit_intervals(model, missing) if i in why]
    return Readiness(IntervalSet(ready), _merged(waiting))


def inherited(model: Model, intervals: IntervalSet, parents_waiting: dict[str, IntervalSet]) -> Readiness:
    """Intervals overlapping what a parent left waiting wait too (SQLMesh: a child's interval waits for its
    parent's); a model that depends on its past (not time-sliced, or reading itself) waits from the first
    waiting interval on."""
    ready, waiting = [], []
    uninterrupted = not model.kind.time_sliced or model.name in model.depends_on
    stopped = ""
    for i in unit_intervals(model, intervals):
        blocking = [p for p, w in sorted(parents_waiting.items()) if w.intersection(IntervalSet([i]))]
        if blocking and not stopped:
            reason = f"waits for {blocking[0]}, whose interval is not ready"
            stopped = reason if uninterrupted else ""
            waiting.append((i, reason))
        elif stopped:
            waiting.append((i, stopped))
        else:
            ready.append(i)
    return Readiness(IntervalSet(ready), _merged(waiting))


def _merged(waiting: list[tuple[Interval, str]]) -> list[tuple[Interval, str]]:
    """Adjacent waiting intervals with the same reason as one range."""
    merged: list[tuple[Interval, str]] = []
    for interval, reason in waiting:
        if merged and merged[-1][1] == reason and merged[-1][0].end == interval.start:
            merged[-1] = (Interval(merged[-1][0].start, interval.end), reason)
        else:
            merged.append((interval, reason))
    return merged


def _query_says_ready(spark: Any, model: Model, signal: Signal, interval: Interval, execution_ms: int,
                      table_map: dict[str, exp.Table], embedded: dict[str, str]) -> bool:
    query = render_query(signal.query, interval, execution_ms, where=f"model {model.name}: signal {signal.name}",
                         table_map=table_map, embedded=embedded)
    rows = spark.sql(query.sql("spark")).take(1)
    return bool(rows) and rows[0][0] is True


def _python_ready(spark: Any, signal: Signal, intervals: list[Interval]) -> list[Interval]:
    """Call the Python signal once per contiguous run of ``intervals``; the ones it says are ready."""
    func = _function(signal.file or "", signal.code or "", signal.name)
    kwargs = {name: _literal(value) for name, value in signal.args}
    if "context" in inspect.signature(func).parameters:
        kwargs["context"] = SignalContext(spark)
    kept: list[Interval] = []
    for run in _contiguous(intervals):
        batch = [(to_datetime(i.start), to_datetime(i.end)) for i in run]
        answer = func(batch, **kwargs)
        if isinstance(answer, bool):
            kept += run if answer else []
        elif isinstance(answer, (list, tuple)):
            for pair in answer:
                if pair not in batch:
                    raise ModelQueryError(f"returned {pair!r}, which is not an interval of its batch; return "
                                          "True, False or a sub-list of the batch")
            chosen = {(to_ms(a), to_ms(b)) for a, b in answer}
            kept += [i for i in run if (i.start, i.end) in chosen]
        else:
            raise ModelQueryError(f"returned {type(answer).__name__}; a signal returns True, False or a "
                                  "sub-list of its batch")
    return kept


def _contiguous(intervals: list[Interval]) -> list[list[Interval]]:
    runs: list[list[Interval]] = []
    for i in intervals:
        if runs and runs[-1][-1].end == i.start:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


@lru_cache(maxsize=256)
def _function(file: str, code: str, name: str) -> Callable[..., Any]:
    """The signal ``name`` of the stored file text (run once per text: the same code gives the same function)."""
    for registration in pyfiles.run_source(code, file):
        if registration.what == pyfiles.SIGNAL and registration.name.lower() == name:
            return registration.func
    raise ModelQueryError(f"{file} no longer declares @signal() {name}; apply the project again")


def _literal(sql: str) -> Any:
    """An argument's value as Python: strings, numbers, booleans, NULL, and lists of them."""
    node = sqlglot.parse_one(sql, read="spark")
    if isinstance(node, (exp.Tuple, exp.Array)):
        return [_literal(e.sql("spark")) for e in node.expressions]
    if isinstance(node, exp.Paren):
        return _literal(node.this.sql("spark"))
    if isinstance(node, exp.Boolean):
        return node.this
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return -_literal(node.this.sql("spark"))
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        return int(node.this) if node.this.lstrip("-").isdigit() else float(node.this)
    return node.sql("spark")
