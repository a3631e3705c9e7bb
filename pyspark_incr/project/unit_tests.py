"""Reading a project's unit tests: ``tests/**/test*.yaml`` (and ``.yml``) in SQLMesh's format.

A file maps test names to tests; each test names a ``model``, gives rows for what it reads
(``inputs``) and the rows expected of its query and/or CTEs (``outputs``), and may set ``vars``
(``start``/``end``/``execution_time`` among them). A test that cannot be read is kept, with the
error naming its file, test and field, so the others still run and it is reported on its own.

>>> t = parse_tests('''
... test_counts:
...   model: shop.counts
...   inputs:
...     shop.orders:
...       - {id: 1, item: 1}
...   outputs:
...     query:
...       partial: true
...       rows: [{item: 1, n: 1}]
... ''', Path("tests/test_shop.yaml"))[0]
>>> t.name, t.model, t.inputs[0][0], t.inputs[0][1].rows, t.query.partial
('test_counts', 'shop.counts', 'shop.orders', ({'id': 1, 'item': 1},), True)
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

import sqlglot
import yaml
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS

#: The files SQLMesh reads as unit tests, under the project's ``tests/`` folder.
TEST_FILE_PATTERNS = ("test*.yaml", "test*.yml")
#: The ``vars`` that set the interval and the moment of the run rather than a project variable.
TIME_VARS = ("start", "end", "execution_time", "latest")
_TEST_KEYS = ("model", "description", "schema", "gateway", "inputs", "outputs", "vars")
_DATA_KEYS = ("rows", "query", "format", "csv_settings", "path", "columns", "partial")
#: ``{{ var('name') }}`` or ``{{ var('name', default) }}``: the Jinja SQLMesh renders test files with.
_JINJA_VAR = re.compile(r"""\{\{\s*var\(\s*(['"])(\w+)\1\s*(?:,\s*(['"]?)([^'")]*)\3\s*)?\)\s*\}\}""")


@dataclass(frozen=True)
class Data:
    """Rows of an input or of an expected output: listed, or produced by a ``query``."""

    rows: tuple[dict[str, Any], ...] | None = None
    query: str | None = None
    #: Declared column types (``columns:``), Spark SQL type names, lowercase column names.
    columns: tuple[tuple[str, str], ...] = ()
    partial: bool = False


@dataclass(frozen=True)
class UnitTest:
    """One test of a test file; ``error`` is set (and the rest may be empty) when it could not be read."""

    name: str
    file: Path
    model: str = ""
    inputs: tuple[tuple[str, Data], ...] = ()
    query: Data | None = None
    ctes: tuple[tuple[str, Data], ...] = ()
    #: ``vars`` other than the time ones: project variables as this test sets them.
    variables: dict[str, Any] = field(default_factory=dict)
    #: ``start``, ``end``, ``execution_time`` and single time macros (``start_ds``) the test sets.
    times: dict[str, Any] = field(default_factory=dict)
    description: str | None = None
    error: ModelDefinitionError | None = None


def discover(root: Path, variables: dict[str, Any] | None = None) -> list[UnitTest]:
    """Every test of every ``tests/**/test*.yaml`` (and ``.yml``) of the project at ``root``, in file order."""
    folder = root / "tests"
    if not folder.is_dir():
        return []
    files = sorted({f for pattern in TEST_FILE_PATTERNS for f in folder.rglob(pattern) if f.is_file()
                    and not any(p.startswith(".") for p in f.relative_to(folder).parts)})
    found: list[UnitTest] = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except OSError as e:
            found.append(UnitTest(f.stem, f, error=ModelDefinitionError(f"{f}: cannot be read ({e.strerror})")))
            continue
        found.extend(parse_tests(text, f, variables, root))
    return found


def parse_tests(text: str, file: Path, variables: dict[str, Any] | None = None,
                root: Path | None = None) -> list[UnitTest]:
    """The tests of one file's ``text``; a file that is not YAML mapping names to tests is one broken test."""
    try:
        content = yaml.safe_load(_render_vars(text, variables or {}, file))
    except ModelDefinitionError as e:
        return [UnitTest(file.stem, file, error=e)]
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where is not None else ""
        return [UnitTest(file.stem, file, error=ModelDefinitionError(
            f"{file}: not valid YAML{at}: {getattr(e, 'problem', None) or e}; fix the file's syntax"))]
    if content is None:
        return []
    if not isinstance(content, dict):
        return [UnitTest(file.stem, file, error=ModelDefinitionError(
            f"{file}: must map test names to tests (test_name: {{model: ..., inputs: ..., outputs: ...}})"))]
    tests = []
    for name, body in content.items():
        try:
            tests.append(_test(str(name), body, file, root or file.parent))
        except ModelDefinitionError as e:
            model = body.get("model") if isinstance(body, dict) and isinstance(body.get("model"), str) else ""
            tests.append(UnitTest(str(name), file, model=model.strip().lower(), error=e))
    return tests


def _render_vars(text: str, variables: dict[str, Any], file: Path) -> str:
    """``text`` with each ``{{ var('name') }}`` replaced by the project variable (SQLMesh renders test files as Jinja)."""
    lowered = {k.lower(): v for k, v in variables.items()}

    def value(match: re.Match) -> str:
        name, default = match.group(2).lower(), match.group(4)
        if name in lowered:
            return str(lowered[name])
        if default is not None:
            return default
        raise ModelDefinitionError(f"{file}: {match.group(0)}: variable {name!r} is not defined; define it under "
                            "variables: in config.yaml or give var() a default")

    return _JINJA_VAR.sub(value, text)


def _test(name: str, body: Any, file: Path, root: Path) -> UnitTest:
    where = f"{file}: test {name}"
    if not isinstance(body, dict):
        raise ModelDefinitionError(f"{where}: must be a mapping with model, inputs and outputs")
    _known_keys(body, _TEST_KEYS, where)
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise ModelDefinitionError(f"{where}: field model is missing; name the model under test, e.g. model: shop.daily")
    inputs = body.get("inputs") or {}
    if not isinstance(inputs, dict):
        raise ModelDefinitionError(f"{where}: field inputs must map each table the model reads to its rows")
    outputs = body.get("outputs")
    if not isinstance(outputs, dict) or not outputs:
        raise ModelDefinitionError(f"{where}: field outputs is missing; give outputs: query: (the expected rows) "
                            "and/or outputs: ctes:")
    _known_keys(outputs, ("query", "ctes", "partial"), f"{where}: outputs")
    if outputs.get("query") is None and outputs.get("ctes") is None:
        raise ModelDefinitionError(f"{where}: outputs must hold query or ctes (the expected rows)")
    partial = _flag(outputs.get("partial"), f"{where}: outputs.partial")
    ctes = outputs.get("ctes") or {}
    if not isinstance(ctes, dict):
        raise ModelDefinitionError(f"{where}: outputs.ctes must map CTE names to their expected rows")
    all_vars = body.get("vars") or {}
    if not isinstance(all_vars, dict):
        raise ModelDefinitionError(f"{where}: field vars must map variable names to values")
    all_vars = {str(k).lower(): v for k, v in all_vars.items()}
    times = {k: v for k, v in all_vars.items() if k in TIME_VARS or _is_time_macro(k)}
    return UnitTest(
        name=name, file=file, model=model.strip().lower(),
        inputs=tuple((str(k).strip().lower(), _data(v, f"{where}: inputs.{k}", root, False))
                     for k, v in inputs.items()),
        query=None if outputs.get("query") is None else _data(outputs["query"], f"{where}: outputs.query", root,
                                                              partial),
        ctes=tuple((str(k).strip().lower(), _data(v, f"{where}: outputs.ctes.{k}", root, partial))
                   for k, v in ctes.items()),
        variables={k: v for k, v in all_vars.items() if k not in times}, times=times,
        description=None if body.get("description") is None else str(body["description"]),
    )


def _is_time_macro(name: str) -> bool:
    prefix, _, suffix = name.partition("_")
    return prefix in ("start", "end", "execution") and suffix in ("ds", "ts", "date", "dt", "millis", "epoch", "hour")


def _data(value: Any, where: str, root: Path, partial: bool) -> Data:
    """One input's or output's rows: a list of rows, or a mapping with rows/query/format/path/columns/partial."""
    if not isinstance(value, dict):
        value = {"rows": value}
    _known_keys(value, _DATA_KEYS, where)
    rows, query = value.get("rows"), value.get("query")
    fmt = str(value.get("format") or "yaml").lower()
    if fmt == "csv":
        rows = _csv(rows, value.get("path"), value.get("csv_settings") or {}, where, root)
    elif fmt == "yaml":
        if value.get("path") is not None:
            rows = _yaml_file(value["path"], where, root)
    else:
        raise ModelDefinitionError(f"{where}: format {value.get('format')!r} is not supported; use yaml (the default) or csv")
    if query is not None:
        if rows is not None:
            raise ModelDefinitionError(f"{where}: has both query and rows; keep one of them")
        if not isinstance(query, str):
            raise ModelDefinitionError(f"{where}: query must be a SQL query (a string)")
        _check_query(query, where)
    elif rows is None:
        raise ModelDefinitionError(f"{where}: no rows; give rows: (a list of column: value mappings), query: or path:")
    return Data(
        rows=None if rows is None else _rows(rows, where), query=query,
        columns=_columns(value.get("columns"), where),
        partial=_flag(value.get("partial"), f"{where}.partial") or partial,
    )


def _rows(rows: Any, where: str) -> tuple[dict[str, Any], ...]:
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ModelDefinitionError(f"{where}: rows must be a list of mappings (- column: value), one per row")
    return tuple({str(k).lower(): v for k, v in r.items()} for r in rows)


def _csv(rows: Any, path: Any, settings: Any, where: str, root: Path) -> list[dict[str, Any]]:
    """CSV rows read as SQLMesh reads them (pandas ``read_csv`` with ``csv_settings``), empty cells NULL."""
    import pandas as pd

    if not isinstance(settings, dict):
        raise ModelDefinitionError(f"{where}: csv_settings must be a mapping of pandas read_csv options (sep: '#')")
    if path is None and not isinstance(rows, str):
        raise ModelDefinitionError(f"{where}: with format: csv, rows must be CSV text (rows: |) or path: a CSV file")
    source = _path(path, where, root) if path is not None else StringIO(rows)
    try:
        frame = pd.read_csv(source, **settings)
    except (TypeError, ValueError, OSError) as e:
        raise ModelDefinitionError(f"{where}: the CSV cannot be read ({e}); check its text and csv_settings") from None
    frame = frame.astype(object).where(frame.notna(), None)
    return [{k: _plain(v) for k, v in r.items()} for r in frame.to_dict(orient="records")]


def _plain(value: Any) -> Any:
    """A Python value for a numpy scalar pandas hands back."""
    return value.item() if hasattr(value, "item") and not isinstance(value, (str, bytes)) else value


def _yaml_file(path: Any, where: str, root: Path) -> Any:
    file = _path(path, where, root)
    try:
        loaded = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ModelDefinitionError(f"{where}: path {path}: cannot be read as YAML ({e})") from None
    return loaded.get("rows") if isinstance(loaded, dict) else loaded


def _path(path: Any, where: str, root: Path) -> Path:
    """``path`` as SQLMesh reads it from the project root."""
    file = Path(str(path)).expanduser()
    file = file if file.is_absolute() else root / file
    if not file.is_file():
        raise ModelDefinitionError(f"{where}: path {path}: no such file (relative paths start at the project root {root})")
    return file


def _columns(columns: Any, where: str) -> tuple[tuple[str, str], ...]:
    if columns is None:
        return ()
    if not isinstance(columns, dict):
        raise ModelDefinitionError(f"{where}: columns must map column names to types (id: INT)")
    out = []
    for name, kind in columns.items():
        try:
            out.append((str(name).lower(), exp.DataType.build(str(kind), dialect="spark").sql("spark")))
        except SQLGLOT_ERRORS + (ValueError,):
            raise ModelDefinitionError(f"{where}: columns.{name}: {kind!r} is not a Spark SQL type") from None
    return tuple(out)


def _check_query(query: str, where: str) -> None:
    try:
        parsed = sqlglot.parse_one(query, read="spark")
    except SQLGLOT_ERRORS as e:
        raise ModelDefinitionError(f"{where}: query does not parse as Spark SQL: {str(e).splitlines()[0]}") from None
    if not isinstance(parsed, exp.Query):
        raise ModelDefinitionError(f"{where}: query must be a SELECT query")


def _flag(value: Any, where: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ModelDefinitionError(f"{where}: must be true or false, got {value!r}")
    return value


def _known_keys(mapping: dict, known: tuple[str, ...], where: str) -> None:
    for key in mapping:
        if str(key) not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(known)}"
            raise ModelDefinitionError(f"{where}: unknown field {key!r}; {hint}")
