"""The MODEL property ``signals``: what must hold before an interval is built (SQLMesh's signals).

Two forms share one property, told apart by their shape:

- ``name(arg := value, ...)`` (or a bare ``name``) calls a Python ``@signal()`` function of the
  project's ``signals/`` directory, as in SQLMesh; argument values are literals.
- ``name := 'SELECT ...'`` is a boolean query for SQL users, run once per missing interval with
  that interval's time macros (``@start_ds``, ``@end_ds``, ...); TRUE means the interval is ready.

>>> from pyspark_incr.model.block import parse_block
>>> prop = parse_block("MODEL (name a.b, signals (ready := 'SELECT TRUE', late(days := 2)))").properties["signals"]
>>> [(s.name, s.query, s.args) for s in as_signals(prop, "m")]
[('ready', 'SELECT TRUE', ()), ('late', None, (('days', '2'),))]

A Python signal's file travels with the model (its text is stored in the model's context), so a
scheduled run in another Spark application evaluates it without the project directory.
"""

from __future__ import annotations

import typing
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.intervals.times import to_datetime, to_ms
from pyspark_incr.model import pyfiles
from pyspark_incr.model.block import Property
from pyspark_incr.model.render import macro_values
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS

#: SQLMesh's type of a signal's ``batch``: the intervals as (start, end) UTC datetimes.
DatetimeRanges = typing.List[typing.Tuple[datetime, datetime]]


def _sqlmesh_to_datetime(value: Any) -> datetime:
    """SQLMesh's ``sqlmesh.utils.date.to_datetime`` as signals use it: a date, time or ``'1 week ago'`` in UTC."""
    return to_datetime(to_ms(value))


# a project written for SQLMesh imports these from sqlmesh; offered while its files run
pyfiles.stand_in("DatetimeRanges", DatetimeRanges)
pyfiles.stand_in("to_datetime", _sqlmesh_to_datetime, unless_offered=True)


class SignalContext:
    """What a signal declaring a ``context`` argument receives: the Spark session, and SQLMesh's
    ``engine_adapter.fetchdf`` / ``fetchall`` running SQL on it."""

    def __init__(self, spark: Any):
        self.spark = spark
        self.engine_adapter = self

    def fetchall(self, query: str) -> list[tuple]:
        """The rows of ``query`` as tuples."""
        return [tuple(r) for r in self.spark.sql(query).collect()]

    def fetchdf(self, query: str) -> Any:
        """The rows of ``query`` as a pandas DataFrame (as SQLMesh's adapter returns them)."""
        return self.spark.sql(query).toPandas()


# the Python-models room offers a richer ExecutionContext (a signal file uses the name only as a type hint)
pyfiles.stand_in("ExecutionContext", SignalContext, unless_offered=True)


class Signal(NamedTuple):
    """One entry of ``signals``: a boolean ``query`` (SQL form) or a Python signal called with ``args``.

    A Python signal carries the ``file`` declaring it and that file's ``code``: a plain tuple, so the
    metadata hash sees a changed signal file as a metadata change.
    """

    name: str
    query: str | None = None
    args: tuple[tuple[str, str], ...] = ()
    file: str | None = None
    code: str | None = None


class SignalSource(NamedTuple):
    """Where a project's Python signal is declared: the file and its text."""

    file: str
    code: str


def as_signals(prop: Property, where: str) -> tuple[Signal, ...]:
    """Read ``signals (...)`` (or ``[...]``); a Python signal's code is attached later (:func:`resolve`)."""
    if prop.value is None:
        raise ModelDefinitionError(f"{where}: {prop.at}: cannot parse the value of signals ({prop.text!r}): "
                                   f"{prop.error}; {_SHAPE}")
    value = prop.value
    items = list(value.expressions) if isinstance(value, (exp.Tuple, exp.Array)) else \
        [value.this] if isinstance(value, exp.Paren) else [value]
    found: list[Signal] = []
    for item in items:
        signal = _one(item, prop, where)
        if any(s.name == signal.name for s in found):
            raise ModelDefinitionError(f"{where}: {prop.at}: signal {signal.name!r} is given twice; give it once")
        found.append(signal)
    return tuple(found)


_SHAPE = ("write signals (name := 'SELECT <boolean> ...') for a SQL signal or signals (name(arg := value)) "
          "for a Python signal of signals/")


def _one(item: exp.Expression, prop: Property, where: str) -> Signal:
    if isinstance(item, (exp.PropertyEQ, exp.EQ)) and isinstance(item.this, (exp.Identifier, exp.Column)):
        name = item.this.name.lower()
        if not (isinstance(item.expression, exp.Literal) and item.expression.is_string):
            raise ModelDefinitionError(f"{where}: {prop.at}: SQL signal {name!r} must be a quoted query, "
                                       f"e.g. {name} := 'SELECT COUNT(*) > 0 FROM raw.events WHERE ds = @end_ds'")
        return Signal(name, query=_query(item.expression.this, name, prop, where))
    if isinstance(item, exp.Column) and not item.table:
        return Signal(item.name.lower())
    if isinstance(item, exp.Anonymous):
        args = []
        for arg in item.expressions:
            if not isinstance(arg, (exp.PropertyEQ, exp.EQ, exp.Kwarg)) or not arg.this.name:
                raise ModelDefinitionError(f"{where}: {prop.at}: signal {item.name}: arguments are written "
                                           f"name := value, got {arg.sql('spark')!r}")
            args.append((arg.this.name.lower(), arg.expression.sql("spark")))
        return Signal(item.name.lower(), args=tuple(args))
    raise ModelDefinitionError(f"{where}: {prop.at}: signals entry {item.sql('spark')!r} is neither a SQL nor "
                               f"a Python signal; {_SHAPE}")


def _query(text: str, name: str, prop: Property, where: str) -> str:
    """The SQL form's query, checked now: one query, only time macros."""
    try:
        parsed = sqlglot.parse(text, read="spark")
    except SQLGLOT_ERRORS as e:
        raise ModelDefinitionError(f"{where}: {prop.at}: SQL signal {name!r} does not parse: "
                                   f"{str(e).splitlines()[0]}; fix its query") from None
    queries = [p for p in parsed if p is not None]
    if len(queries) != 1 or not isinstance(queries[0], exp.Query):
        raise ModelDefinitionError(f"{where}: {prop.at}: SQL signal {name!r} must be one query returning one "
                                   "boolean, e.g. 'SELECT COUNT(*) > 0 FROM raw.events WHERE ds = @end_ds'")
    known = sorted(macro_values(Interval(0, 86_400_000), 0))
    for param in queries[0].find_all(exp.Parameter):
        if param.name.lower() not in known:
            raise ModelDefinitionError(f"{where}: {prop.at}: SQL signal {name!r} uses @{param.name}; a signal's "
                                       f"query knows only the time macros ({', '.join('@' + k for k in known)})")
    return queries[0].sql("spark")


def resolve(signals: tuple[Signal, ...], known: Mapping[str, SignalSource], prop: Property | None,
            where: str) -> tuple[Signal, ...]:
    """``signals`` with each Python signal's file and code from ``known`` (the project's ``signals/``)."""
    resolved = []
    for s in signals:
        if s.query is not None:
            resolved.append(s)
            continue
        source = known.get(s.name)
        if source is None:
            at = f"{prop.at}: " if prop is not None else ""
            names = ", ".join(sorted(known)) or "none: the project has no signals/*.py declaring @signal()"
            raise ModelDefinitionError(f"{where}: {at}unknown signal {s.name!r} (known signals: {names}); declare it "
                                       f"with @signal() in signals/__init__.py, or write {s.name} := 'SELECT ...'")
        resolved.append(s._replace(file=source.file, code=source.code))
    return tuple(resolved)


def context_of(signals: tuple[Signal, ...]) -> dict[str, list[str]]:
    """What a model's context JSON stores of its Python signals: name -> [file, code]."""
    return {s.name: [s.file, s.code] for s in signals if s.query is None and s.code is not None}


def from_context(stored: Mapping[str, list[str]] | None) -> dict[str, SignalSource]:
    """The signal sources stored by :func:`context_of`."""
    return {name: SignalSource(*pair) for name, pair in (stored or {}).items()}


def load_signal_files(root: Path, report: Callable[[Path, Exception], None]) -> dict[str, SignalSource]:
    """The ``@signal()`` functions of ``signals/**/*.py`` (hidden folders skipped), by name."""
    folder = root / "signals"
    if not folder.is_dir():
        return {}
    found: dict[str, SignalSource] = {}
    for path in sorted(folder.rglob("*.py")):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        try:
            registrations = pyfiles.run_file(path)
            code = path.read_text(encoding="utf-8")
        except ModelDefinitionError as e:
            report(path, e)
            continue
        for r in registrations:
            if r.what != pyfiles.SIGNAL:
                continue
            name = r.name.lower()
            if name in found:
                report(path, ModelDefinitionError(f"{path}: signal {name!r} is declared twice (also in "
                                                  f"{found[name].file}); rename one"))
                continue
            found[name] = SignalSource(str(path), code)
    return found
