"""Running unit tests (``tests/test*.yaml``): the model's query on fixture rows, compared with the expected rows.

Each input becomes a temporary view under a unique name (dropped afterwards), the model's query is
rendered for the test's interval and variables with every table it reads mapped to those views, and
a query still reading anything else is refused: a test never reads (or writes) a real table.
Rows are compared as SQLMesh compares them: in any order unless the query has an ORDER BY, expected
values cast to the types of the actual columns, floats equal within a relative 1e-5 (absolute 1e-8).

>>> print(compare(["item_id", "num_orders"], [(1, 3), (2, 1)], [(2, 1), (1, 2)], ordered=False))
Data mismatch (exp: expected, act: actual)
<BLANKLINE>
     num_orders
     exp  act
  0  3    2
>>> compare(["x"], [(0.1 + 0.2,)], [(0.3,)], ordered=True) is None
True
"""

from __future__ import annotations

import json
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import IncrError, ModelDefinitionError
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.intervals.times import to_datetime, to_end_ms, to_ms
from pyspark_incr.model.definition import Model, reparse
from pyspark_incr.model.macros import PREFIX as MACRO_PREFIX
from pyspark_incr.model.macros import THIS_MODEL
from pyspark_incr.model.render import macro_values, render_query
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS
from pyspark_incr.project.unit_tests import Data, UnitTest
from pyspark_incr.sqltext import render

PASSED, FAILED, ERROR = "passed", "failed", "error"
#: Start of the names of the temporary views holding a test's inputs.
VIEW_PREFIX = "__incr_test_"
#: SQLMesh renders a test without start/end/execution_time for the epoch's first day.
EPOCH = "1970-01-01"
REL_TOL, ABS_TOL = 1e-5, 1e-8


@dataclass(frozen=True)
class Outcome:
    """What one test came to: ``passed``, ``failed`` (``message`` is the diff) or ``error`` (why it could not run)."""

    test: UnitTest
    status: str
    message: str = ""


def run_tests(spark: Any, models: Mapping[str, Model], tests: Sequence[UnitTest],
              unloaded: Mapping[Path, IncrError] | None = None) -> list[Outcome]:
    """Run ``tests`` against the project's ``models``; ``unloaded`` holds the project files that did not load."""
    return [run_test(spark, models, t, unloaded or {}) for t in tests]


def run_test(spark: Any, models: Mapping[str, Model], test: UnitTest,
             unloaded: Mapping[Path, IncrError]) -> Outcome:
    """One test's outcome; an error in its definition, its model or its SQL is an ``error`` outcome, not a raise."""
    from pyspark.errors import PySparkException

    if test.error is not None:
        return Outcome(test, ERROR, str(test.error))
    try:
        model = _model_under_test(models, test, unloaded)
        test = _with_self_input(test, model)
        with _fixtures(spark, test, models) as views:
            query = _rendered(test, model, models, views)
            failures = _check(spark, test, model, query, views)
    except IncrError as e:
        return Outcome(test, ERROR, str(e))
    except PySparkException as e:
        text = str(e).split("\n\nJVM stacktrace:", 1)[0].strip()
        return Outcome(test, ERROR, f"{test.file}: test {test.name}: Spark refused its SQL: {text}")
    return Outcome(test, FAILED, "\n\n".join(failures)) if failures else Outcome(test, PASSED)


def _where(test: UnitTest) -> str:
    return f"{test.file}: test {test.name}"


def _model_under_test(models: Mapping[str, Model], test: UnitTest, unloaded: Mapping[Path, IncrError]) -> Model:
    model = models.get(test.model)
    if model is None:
        for path, error in unloaded.items():
            if _mentions(path, test.model):
                raise ModelDefinitionError(f"{_where(test)}: model {test.model} is defined in {path}, which did "
                                           f"not load: {error}")
        raise ModelDefinitionError(f"{_where(test)}: model {test.model} is not in the project; fix model: "
                                   f"(models: {', '.join(sorted(models)) or 'none'})")
    if model.query is None:
        raise ModelDefinitionError(
            f"{_where(test)}: model {test.model} (kind {model.kind.name}) has no SQL query: unit tests run SQL "
            "models only (tests of Python models are not supported yet)")
    return model


def _with_self_input(test: UnitTest, model: Model) -> UnitTest:
    """A model reading its own table starts empty when the test gives no rows for it, as in SQLMesh."""
    reads_itself = model.name in model.depends_on or THIS_MODEL in (model.query or "").lower()
    if not reads_itself or any(name == model.name for name, _ in test.inputs):
        return test
    return replace(test, inputs=(*test.inputs, (model.name, Data(rows=()))))


def _mentions(path: Path, name: str) -> bool:
    try:
        return name in path.read_text(encoding="utf-8").lower()
    except (OSError, ValueError):
        return False


# --- inputs ----------------------------------------------------------------------------------------


@contextmanager
def _fixtures(spark: Any, test: UnitTest, models: Mapping[str, Model]) -> Iterator[dict[str, exp.Table]]:
    """A temporary view per input, by input name; every one is dropped on the way out."""
    token = uuid.uuid4().hex[:12]
    views: dict[str, exp.Table] = {}
    try:
        for i, (name, data) in enumerate(test.inputs):
            view = f"{VIEW_PREFIX}{token}_{i}"
            views[name] = exp.to_table(view)
            upstream = models.get(name)
            declared = {**dict(upstream.columns if upstream is not None else ()), **dict(data.columns)}
            sql = _input_sql(spark, data, declared, views, test, f"inputs.{name}")
            spark.sql(sql).createOrReplaceTempView(view)
        yield views
    finally:
        for view in views.values():
            spark.catalog.dropTempView(view.name)


def _input_sql(spark: Any, data: Data, declared: dict[str, str], views: dict[str, exp.Table], test: UnitTest,
               label: str) -> str:
    """SQL for an input's rows: listed values cast to the declared types, or its query with those casts.

    The query may read the inputs given before it, and no other table: the session is the real one.
    """
    if data.rows is not None:
        columns = list(dict.fromkeys([*(k for row in data.rows for k in row), *declared]))
        return render(rows_query(data.rows, columns, declared, f"{_where(test)}: {label}"))
    query = _onto_fixtures(sqlglot.parse_one(data.query, read="spark"), views, test, f"the query of {label}")
    return render(_typed(spark, query, declared, add_missing=True))


def rows_query(rows: Sequence[dict[str, Any]], columns: Sequence[str], types: Mapping[str, str],
               where: str) -> exp.Query:
    """``SELECT CAST(c0 AS type) AS col, ... FROM VALUES (...), ...``: the rows, a missing value NULL.

    >>> render(rows_query([{"id": 1}, {"id": 2, "d": "2024-01-01"}], ["id", "d"], {"d": "DATE"}, "t"))
    "SELECT c0 AS `id`, CAST(c1 AS DATE) AS `d` FROM VALUES (1, NULL), (2, '2024-01-01') AS t(c0, c1)"
    """
    if not columns:
        raise ModelDefinitionError(f"{where}: no columns; give rows with values or columns: (name: type)")
    positions = [f"c{i}" for i in range(len(columns))]
    selects = [_cast(exp.column(p), types.get(c)).as_(c, quoted=True) for p, c in zip(positions, columns)]
    if not rows:
        unknown = [c for c in columns if not types.get(c)]
        if unknown:
            raise ModelDefinitionError(f"{where}: no rows, and the type of {', '.join(unknown)} is unknown; "
                                       "declare it under columns: (name: type)")
        nulls = [_cast(exp.null(), types[c]).as_(c, quoted=True) for c in columns]
        return exp.select(*nulls).where(exp.false())
    values = exp.Values(
        expressions=[exp.Tuple(expressions=[literal(row.get(c), types.get(c)) for c in columns]) for row in rows],
        alias=exp.TableAlias(this=exp.to_identifier("t"), columns=[exp.to_identifier(p) for p in positions]))
    return exp.select(*selects).from_(values)


def _typed(spark: Any, query: exp.Query, types: Mapping[str, str], add_missing: bool) -> exp.Query:
    """``query`` with its columns cast to ``types`` (and, with ``add_missing``, NULLs for typed columns it lacks)."""
    if not types:
        return query
    have = [c for c in spark.sql(render(query)).columns]
    selects = [_cast(exp.column(c, quoted=True), types.get(c.lower())).as_(c, quoted=True) for c in have]
    if add_missing:
        lowered = {c.lower() for c in have}
        selects += [_cast(exp.null(), t).as_(c, quoted=True) for c, t in types.items() if c not in lowered]
    return exp.select(*selects).from_(exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier("q"))))


def literal(value: Any, spark_type: str | None = None) -> exp.Expression:
    """A YAML/CSV value as a SQL literal (a mapping a STRUCT, or a MAP where the type says so).

    >>> literal({"a": 1}).sql("spark"), literal({"a": 1}, "MAP<STRING, INT>").sql("spark"), literal(date(2024, 1, 2)).sql("spark")
    ('STRUCT(1 AS a)', "MAP('a', 1)", "CAST('2024-01-02' AS DATE)")
    """
    if value is None:
        return exp.null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float, Decimal)):
        return exp.Literal.number(value)
    if isinstance(value, datetime):
        text = exp.Literal.string(value.isoformat(sep=" "))
        return text if spark_type else exp.cast(text, "TIMESTAMP")
    if isinstance(value, date):
        return exp.Literal.string(value.isoformat()) if spark_type else exp.cast(
            exp.Literal.string(value.isoformat()), "DATE")
    if isinstance(value, (list, tuple)):
        return exp.Array(expressions=[literal(v) for v in value])
    if isinstance(value, dict):
        if spark_type and spark_type.upper().startswith("MAP"):
            return exp.VarMap(keys=exp.Array(expressions=[literal(k) for k in value]),
                              values=exp.Array(expressions=[literal(v) for v in value.values()]))
        return exp.Struct(expressions=[exp.PropertyEQ(this=exp.to_identifier(str(k)), expression=literal(v))
                                       for k, v in value.items()])
    return exp.Literal.string(str(value))


def _cast(expression: exp.Expression, spark_type: str | None) -> exp.Expression:
    if not spark_type:
        return expression
    try:
        return exp.cast(expression, exp.DataType.build(spark_type, dialect="spark"))
    except SQLGLOT_ERRORS:  # a type sqlglot does not know (void): the value as it is
        return expression


# --- the model's query ----------------------------------------------------------------------------


def _rendered(test: UnitTest, model: Model, models: Mapping[str, Model], views: dict[str, exp.Table]) -> exp.Query:
    """The model's query for the test's interval and vars, reading only the input views."""
    if test.variables:
        model = _with_variables(model, test.variables, test)
    start, end = (_time_text(test.times.get(k, EPOCH)) for k in ("start", "end"))
    where = _where(test)
    interval = Interval(to_ms(start, f"{where}: vars.start"), to_end_ms(end, f"{where}: vars.end"))
    if interval.end <= interval.start:
        raise ModelDefinitionError(f"{where}: vars.end ({end}) is before vars.start ({start}); swap them")
    execution_ms = to_ms(_time_text(test.times.get("execution_time", EPOCH)), f"{where}: vars.execution_time")
    embedded = {n: m.query for n, m in models.items() if m.kind.name == "EMBEDDED" and m.query and n not in views}
    query = render_query(model.query, interval, execution_ms, where=f"model {model.name}",
                         table_map={n: t for n, t in views.items() if n.count(".") == 1},
                         this_table=views.get(model.name), embedded=embedded, macros=_time_macros(test))
    query = _onto_fixtures(query, views, test)
    if "execution_time" in test.times:
        query = _frozen(query, execution_ms)
    return query


def _time_text(value: Any) -> str:
    """A vars time as text: YAML reads an unquoted 2024-01-01 as a date, which must still end a range inclusively."""
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return value.isoformat() if isinstance(value, date) else str(value)


def _with_variables(model: Model, variables: dict[str, Any], test: UnitTest) -> Model:
    """The model parsed again with the test's ``vars`` over the project's variables."""
    context = json.loads(model.context) if model.context else {}
    context["variables"] = {**(context.get("variables") or {}), **variables}
    try:
        return reparse(model.definition, model.source, json.dumps(context, sort_keys=True, default=str))
    except IncrError as e:
        raise ModelDefinitionError(f"{_where(test)}: with the test's vars, {e}") from None


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


def _onto_fixtures(query: exp.Query, views: dict[str, exp.Table], test: UnitTest, reader: str = "") -> exp.Query:
    """``query`` with catalog-qualified inputs mapped too; any other table it still reads is a missing input."""
    ctes = {c.alias_or_name.lower() for c in query.find_all(exp.CTE)}
    missing: list[str] = []

    def onto(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.Table) or not node.name:
            return node
        full = ".".join(p.name for p in node.parts).lower()
        if full not in views and node.catalog:  # spark_catalog.raw.t is the input raw.t
            full = f"{node.db}.{node.name}".lower()
        if full in views:
            table = views[full].copy()
            table.set("alias", node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name)))
            return table
        if not node.db and (node.name.startswith(VIEW_PREFIX) or node.name.lower() in ctes):
            return node
        missing.append("itself (@this_model)" if node.name.lower().startswith(MACRO_PREFIX) else full)
        return node

    query = query.transform(onto)
    if missing:
        names = ", ".join(dict.fromkeys(missing))
        raise ModelDefinitionError(
            f"{_where(test)}: {reader or 'model ' + test.model} reads {names}, which inputs: does not give; add its rows "
            f"(inputs: {names.split(', ')[0]}: rows: [...], or rows: [] with columns:), so that no real table is read")
    return query


def _frozen(query: exp.Query, execution_ms: int) -> exp.Query:
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


# --- outputs --------------------------------------------------------------------------------------


def _check(spark: Any, test: UnitTest, model: Model, query: exp.Query, views: dict[str, exp.Table]) -> list[str]:
    """The failures of the test's CTE outputs, then of its query output."""
    failures = []
    with_ = query.args.get("with_") or query.args.get("with")
    ctes = {c.alias_or_name.lower(): c for c in query.ctes}
    for name, data in test.ctes:
        if name not in ctes:
            raise ModelDefinitionError(f"{_where(test)}: outputs.ctes.{name}: the query of model {model.name} has "
                                       f"no CTE {name} (its CTEs: {', '.join(ctes) or 'none'})")
        cte = ctes[name].this
        names = [s.alias_or_name for s in cte.selects]
        alone = exp.select(*(exp.Star() if n == "*" else exp.column(n, quoted=True) for n in names)).from_(
            exp.to_table(ctes[name].alias_or_name))
        alone.set("with_" if "with_" in query.args else "with", with_.copy())
        failures += _compare_output(spark, test, f"CTE {name}", alone, data, cte.args.get("order") is not None, views)
    if test.query is not None:
        failures += _compare_output(spark, test, "query", query, test.query, query.args.get("order") is not None,
                                    views)
    return failures


def _compare_output(spark: Any, test: UnitTest, label: str, query: exp.Query, data: Data, ordered: bool,
                    views: dict[str, exp.Table]) -> list[str]:
    """The failure of one output (``label``: ``query`` or ``CTE <name>``), if its rows differ from ``data``'s."""
    field = "outputs.query" if label == "query" else f"outputs.ctes.{label[4:]}"
    where = f"{_where(test)}: {field}"
    actual_df = spark.sql(render(query))
    names = [c.lower() for c in actual_df.columns]
    types = {n: f.dataType.simpleString() for n, f in zip(names, actual_df.schema.fields)}
    if data.rows is not None:
        given = list(dict.fromkeys(k for row in data.rows for k in row))
    else:
        expected_query = _onto_fixtures(sqlglot.parse_one(data.query, read="spark"), views, test,
                                        f"the query of {field}")
        given = [c.lower() for c in spark.sql(render(expected_query)).columns]
    unknown = [c for c in given if c not in types]
    if unknown:
        raise ModelDefinitionError(f"{where}: column(s) {', '.join(unknown)} are not in the output "
                                   f"(its columns: {', '.join(names)}); fix their names")
    columns = [c for c in names if c in given] if data.partial else names
    if data.rows is not None:
        expected = [tuple(r) for r in _collect(spark, rows_query(data.rows, columns, types, where), where)] \
            if data.rows else []
    else:
        typed = exp.Subquery(this=_typed(spark, expected_query, types, True),
                             alias=exp.TableAlias(this=exp.to_identifier("e")))
        expected = [tuple(r) for r in _collect(
            spark, exp.select(*(exp.column(c, quoted=True) for c in columns)).from_(typed), where)]
    at = [names.index(c) for c in columns]
    actual = [tuple(row[i] for i in at) for row in actual_df.collect()]
    diff = compare([actual_df.columns[i] for i in at], expected, actual, ordered)
    return [f"{label}: {diff}"] if diff else []


def _collect(spark: Any, query: exp.Query, where: str) -> list:
    from pyspark.errors import PySparkException

    try:
        return spark.sql(render(query)).collect()
    except PySparkException as e:
        first = str(e).split("\n", 1)[0]
        raise ModelDefinitionError(f"{where}: the expected rows cannot be read as the output's column types: "
                                   f"{first}") from None


# --- comparing rows -------------------------------------------------------------------------------


def compare(columns: Sequence[str], expected: Sequence[tuple], actual: Sequence[tuple], ordered: bool) -> str | None:
    """None when the rows match, else the diff: per column expected vs actual, or the missing/unexpected rows."""
    if not ordered:
        expected, actual = sorted(expected, key=_row_key), sorted(actual, key=_row_key)
    if len(expected) == len(actual):
        bad_rows = [i for i, (e, a) in enumerate(zip(expected, actual)) if not same(e, a)]
        if not bad_rows:
            return None
        bad_columns = [j for j in range(len(columns)) if any(not same(expected[i][j], actual[i][j]) for i in bad_rows)]
        body = [[str(i)] + [_text(r[i][j]) for j in bad_columns for r in (expected, actual)] for i in bad_rows]
        return "Data mismatch (exp: expected, act: actual)\n\n" + _pairs_table([columns[j] for j in bad_columns], body)
    parts = ["Data mismatch (rows are different)"]
    for title, rows in (("Missing rows", _unmatched(expected, actual)), ("Unexpected rows", _unmatched(actual, expected))):
        if rows:
            parts.append(f"{title}:\n\n" + _table([list(columns)] + [[_text(v) for v in r] for r in rows]))
    return "\n\n".join(parts)


def same(expected: Any, actual: Any) -> bool:
    """Equal, floats within a relative 1e-5 (and absolute 1e-8); NULL equals only NULL."""
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, (float, Decimal)) or isinstance(actual, (float, Decimal)):
        if isinstance(expected, bool) or isinstance(actual, bool):
            return expected == actual
        try:
            e, a = float(expected), float(actual)
        except (TypeError, ValueError):
            return False
        return (e != e and a != a) or abs(e - a) <= ABS_TOL + REL_TOL * abs(a)
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(same(e, a) for e, a in zip(expected, actual))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(same(v, actual[k]) for k, v in expected.items())
    return expected == actual


def _unmatched(rows: Sequence[tuple], others: Sequence[tuple]) -> list[tuple]:
    """The rows of ``rows`` left once each is paired with an equal, still unpaired row of ``others``."""
    free = list(others)
    left = []
    for row in rows:
        match = next((i for i, other in enumerate(free) if same(row, other)), None)
        if match is None:
            left.append(row)
        else:
            free.pop(match)
    return left


def _row_key(row: tuple) -> tuple:
    return tuple((0, "") if v is None else (1, v) if isinstance(v, (int, float, Decimal, str, date)) else (1, repr(v))
                 for v in row)


def _text(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return str(value)


def _pairs_table(names: list[str], body: list[list[str]]) -> str:
    """A row number, then an exp and an act cell per column, the column's name spanning its pair."""
    rows = [[""] + ["exp", "act"] * len(names)] + body
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for k, name in enumerate(names):
        e, a = 1 + 2 * k, 2 + 2 * k
        widths[a] = max(widths[a], len(name) - widths[e] - 2)
    head = " " * widths[0] + "".join("  " + n.ljust(widths[1 + 2 * k] + 2 + widths[2 + 2 * k])
                                      for k, n in enumerate(names))
    lines = [head] + ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(("  " + line).rstrip() for line in lines)


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths))).rstrip() for r in rows)
