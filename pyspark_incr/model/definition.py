"""The model record and :func:`parse_model`, from SQLMesh-syntax definition text.

>>> m = parse_model('''MODEL (name Sales.Daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds),
...   start '2024-01-01', cron '@daily', grain (ds, shop));
... SELECT ds, shop, SUM(x) AS total FROM raw.sales WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds, shop''')
>>> m.name, m.kind.name, m.schedule.unit.value, m.grains, m.references
('sales.daily', 'INCREMENTAL_BY_TIME_RANGE', 'day', ('ds', 'shop'), ('raw.sales',))
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Callable

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError

from pyspark_incr.errors import ArgumentError, ModelDefinitionError
from pyspark_incr.intervals.schedule import Schedule
from pyspark_incr.intervals.times import to_end_ms, to_ms
from pyspark_incr.model.block import KindSpec, Property, parse_block
from pyspark_incr.model.kinds import Kind, kind_from_spec
from pyspark_incr.model.values import as_names, as_string


@dataclass(frozen=True)
class Model:
    """One parsed model. ``query`` is Spark SQL with macros still in place."""

    name: str
    kind: Kind
    query: str
    schedule: Schedule
    start_ms: int | None = None
    end_ms: int | None = None
    description: str | None = None
    grains: tuple[str, ...] = ()
    owner: str | None = None
    tags: tuple[str, ...] = ()
    dialect: str = "spark"
    references: tuple[str, ...] = ()
    definition: str = field(default="", compare=False)
    source: str = field(default="registry", compare=False)

    @property
    def schema(self) -> str:
        return self.name.split(".")[0]

    @property
    def table(self) -> str:
        return self.name.split(".")[1]


def parse_model(text: str, source: str = "registry") -> Model:
    """Parse and validate one definition; errors name the source, the line and the fix."""
    where = source if source != "registry" else "model definition"
    block = parse_block(text, where)
    props = dict(block.properties)
    name = _name(props, where)
    where = f"model {name}" + (f" ({source})" if source != "registry" else "")
    unknown = [k for k in props if k not in _READERS and k != "kind"]
    for key in unknown:
        raise _unknown_property(props[key], where)
    kind_spec = props.pop("kind", None)
    if not isinstance(kind_spec, KindSpec):
        raise ModelDefinitionError(f"{where}: MODEL needs a kind, e.g. kind FULL or kind VIEW")
    values = {_FIELD.get(key, key): _READERS[key](props[key], where) for key in props}
    dialect = values.pop("dialect", "spark")
    query, references = _query(block.query_text, dialect, where, block.query_line)
    start, end = values.get("start_ms"), values.get("end_ms")
    if start is not None and end is not None and end <= start:
        raise ModelDefinitionError(f"{where}: end is before start; a model must end after it starts")
    interval_unit = values.pop("interval_unit", None)
    schedule = Schedule.parse(values.pop("cron", "@daily"), interval_unit, where=where)
    grains = values.pop("grain", ()) + values.pop("grains", ())
    return Model(
        name=name,
        kind=kind_from_spec(kind_spec, where),
        query=query,
        schedule=schedule,
        grains=grains,
        dialect=dialect,
        references=references,
        definition=text,
        source=source,
        **values,
    )


def _name(props: dict, where: str) -> str:
    prop = props.pop("name", None)
    if not isinstance(prop, Property):
        raise ModelDefinitionError(f"{where}: MODEL needs a name, e.g. name my_schema.my_table")
    v = prop.value
    parts = [p.name for p in v.parts] if isinstance(v, exp.Column) else []
    if len(parts) != 2 or not all(parts) or any("." in p for p in parts):
        raise ModelDefinitionError(
            f"{where}: line {prop.line}: model name {prop.text!r} must be schema.table, e.g. analytics.daily_sales"
        )
    return ".".join(p.lower() for p in parts)


def _query(text: str, dialect: str, where: str, line: int) -> tuple[str, tuple[str, ...]]:
    try:
        Dialect.get_or_raise(dialect)
    except ValueError:
        raise ModelDefinitionError(
            f"{where}: dialect {dialect!r} is unknown; use a sqlglot dialect such as spark, databricks, duckdb, "
            "postgres, snowflake, bigquery or trino"
        ) from None
    try:
        parsed = sqlglot.parse(_hide_macros(text), read=dialect)
    except (ParseError, TokenError) as e:
        raise ModelDefinitionError(f"{where}: the query (from line {line}) cannot be parsed: {e}") from None
    statements = [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise ModelDefinitionError(
            f"{where}: after the MODEL block there must be exactly one query (SELECT ...), "
            f"found {len(statements)} statement(s)"
        )
    ast = statements[0].transform(_restore_macro)
    ctes = {c.alias_or_name.lower() for c in ast.find_all(exp.CTE)}
    refs = sorted(
        {
            ".".join(p.name.lower() for p in t.parts)
            for t in ast.find_all(exp.Table)
            if t.name and not (not t.db and t.name.lower() in ctes)
        }
    )
    return ast.sql(dialect="spark"), tuple(refs)


#: Prefix of the identifiers that stand in for ``@macro`` while a query is parsed in its own dialect.
_MACRO = "__incr_macro__"


def _hide_macros(text: str) -> str:
    """``@name`` -> a plain identifier, so dialects where ``@`` is an operator (DuckDB's abs) keep macros.

    >>> _hide_macros("SELECT '@x', @start_ds -- @y")
    "SELECT '@x', __incr_macro__start_ds -- @y"
    """
    tokens = Dialect.get_or_raise("spark").tokenize(text)
    out, last = [], 0
    for at, name in zip(tokens, tokens[1:]):
        if at.text == "@" and name.start == at.end + 1 and name.text.isidentifier():
            out += [text[last : at.start], _MACRO]
            last = at.end + 1
    return "".join(out) + text[last:]


def _restore_macro(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Column) and not node.table and node.name.startswith(_MACRO):
        return exp.Parameter(this=exp.var(node.name[len(_MACRO) :]))
    return node


def _time(end: bool) -> Callable[[Property, str], int]:
    def read(prop: Property, where: str) -> int:
        value = as_string(prop, where)
        try:
            return to_end_ms(value, prop.key) if end else to_ms(value, prop.key)
        except ArgumentError as e:
            raise ModelDefinitionError(f"{where}: line {prop.line}: {e}") from None

    return read


_READERS: dict[str, Callable[[Property, str], object]] = {
    "start": _time(end=False),
    "end": _time(end=True),
    "cron": as_string,
    "interval_unit": as_string,
    "description": as_string,
    "owner": as_string,
    "dialect": lambda p, w: as_string(p, w).lower(),
    "grain": as_names,
    "grains": as_names,
    "tags": as_names,
}
#: Properties whose record field has another name.
_FIELD = {"start": "start_ms", "end": "end_ms"}


def _unknown_property(prop: Property, where: str) -> ModelDefinitionError:
    known = sorted([*_READERS, "kind", "name"])
    hint = difflib.get_close_matches(prop.key, known, n=1)
    also = f"; did you mean {hint[0]!r}?" if hint else ""
    return ModelDefinitionError(
        f"{where}: line {prop.line}: unknown MODEL property {prop.key!r}{also} (supported: {', '.join(known)})"
    )
