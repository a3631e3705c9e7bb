"""incr.table_diff: compare two tables, or one model in two environments: schema, counts, changed values."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from pyspark_incr.diff import DiffResult, Sample, compare, env_sides, key_columns, table_side
from pyspark_incr.diff.rows import CHANGED, DUPLICATE, SOURCE_ONLY, TARGET_ONLY
from pyspark_incr.diff.sides import Selected, env_selection, names_arg
from pyspark_incr.errors import ArgumentError
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param

#: The order sample rows are shown in, as SQLMesh shows them: changed rows first; each kind in key order.
SAMPLE_ORDER = (CHANGED, SOURCE_ONLY, TARGET_ONLY, DUPLICATE)


@procedure(
    "table_diff",
    "Compare the target with the source: columns added, removed or retyped, then the rows, paired on a key in one "
    "Spark join: rows only in one side, changed rows and which columns changed, and each column's match rate. "
    "source and target name two environments when model or select is given, else two tables.",
    params=(
        Param("source", "string", "The reference: an environment (with model, e.g. prod) or a table (db.table).",
              required=True),
        Param("target", "string", "What is compared with it: an environment (with model, e.g. dev) or a table.",
              required=True),
        Param("model", "string", "Compare this model's tables in the source and target environments (default: "
                                 "source and target are tables)."),
        Param("select", "string", "Compare every model this selector chooses (as incr.plan's select: names, globs, "
                                  "tag:x, +upstream, downstream+) that the two environments hold in different "
                                  "versions, one after the other; each row names its model. Not with model."),
        Param("on", "string", "Key columns pairing the rows, comma-separated (default: the model's grain, else its "
                              "unique_key; required for two tables)."),
        Param("where", "string", "A Spark SQL condition both sides are filtered by before comparing "
                                 "(e.g. ds >= '2024-01-01')."),
        Param("skip_columns", "string", "Columns not to compare, comma-separated."),
        Param("decimals", "int", "Decimal places float, double and decimal values are rounded to before comparing.",
              default=3),
        Param("show_sample", "boolean", "Also return sample rows: only in the source, only in the target, changed "
                                        "(one row per changed column), duplicate keys.", default=False),
        Param("limit", "int", "With show_sample: at most this many sample rows of each kind.", default=20),
    ),
    output=(
        Column("section", "string", "tables, schema, rows, column or sample."),
        Column("finding", "string",
               "tables: compared. schema: schemas match, column added, column removed, type changed. rows: source "
               "rows, target rows, joined, full match, changed, source only, target only, duplicate keys, null keys. "
               "column: match rate, not compared. sample: source only, target only, changed, duplicate key."),
        Column("column", "string", "The column concerned (schema, column and changed samples)."),
        Column("key", "string", "tables: the key columns; sample: the row's key values."),
        Column("source", "string", "The source's side: its table, a column's type, a sampled row's values or value, "
                                   "or how many of its rows hold a duplicated or NULL key."),
        Column("target", "string", "The target's side, as source."),
        Column("rows", "bigint", "How many rows; for a column's match rate, the joined rows where it is equal."),
        Column("pct", "double", "rows as a percentage of the joined rows (full match, changed, match rate)."),
        Column("model", "string", "The model compared (with model or select); NULL for two tables. With select, "
                                  "a model chosen but not compared has one row: tables, not compared, and why in "
                                  "source (only in one environment, the same version in both, no table)."),
    ),
)
def table_diff(spark: Any, source: str, target: str, model: str | None, select: str | None, on: str | None,
               where: str | None, skip_columns: str | None, decimals: int, show_sample: bool,
               limit: int) -> list[tuple]:
    """The rows of ``CALL incr.table_diff``: tables, schema, rows, column, then sample rows (docs/table-diff.md)."""
    if decimals is None or decimals < 0:
        raise ArgumentError(f"table_diff: decimals {decimals!r} must be 0 or more (places kept before comparing)")
    if limit is None or limit < 0:
        raise ArgumentError(f"table_diff: limit {limit!r} must be 0 or more (sample rows of each kind)")
    model = model.strip() if model and model.strip() else None
    select = select.strip() if select and select.strip() else None
    skip = names_arg("skip_columns", skip_columns) if skip_columns and skip_columns.strip() else ()
    sample = limit if show_sample else 0
    if model and select:
        raise ArgumentError("table_diff: pass model (one model) or select (a selector), not both")
    if select:
        return _selected(spark, env_selection(spark, select, source, target), on, where, skip, decimals, sample)
    if model:
        left, right, grain = env_sides(spark, model, source, target)
    else:
        left, right, grain = table_side(spark, "source", source), table_side(spark, "target", target), ()
    keys = key_columns(on, grain, model)
    return _diff_rows(compare(spark, left, right, keys, where, skip, decimals, sample), model)


def _selected(spark: Any, chosen: list[Selected], on: str | None, where: str | None, skip: tuple[str, ...],
              decimals: int, sample: int) -> list[tuple]:
    """Each chosen model's diff in turn, after checking every compared model has a key (nothing runs otherwise)."""
    compared = [c for c in chosen if c.sides]
    keyless = [c.model for c in compared if not c.grain and not (on and on.strip())]
    if keyless:
        raise ArgumentError(f"table_diff: models {', '.join(keyless)} declare no grain nor unique_key, so their rows "
                            "cannot be paired; give them a grain, pass on => 'id' (used for every model), or leave "
                            "them out of select")
    rows = [("tables", "not compared", None, None, c.skipped, None, None, None, c.model) for c in chosen if not c.sides]
    for c in compared:
        result = compare(spark, *c.sides, key_columns(on, c.grain, c.model), where, skip, decimals, sample)
        rows += _diff_rows(result, c.model)
    return rows


def _diff_rows(result: DiffResult, model: str | None) -> list[tuple]:
    samples = sorted(result.samples, key=lambda s: SAMPLE_ORDER.index(s.kind))  # stable: keys stay in order
    found = [*_tables(result), *_schema(result), *_counts(result), *_columns(result),
             *(row for sample in samples for row in _sample(sample))]
    return [(*row, model) for row in found]


def _tables(r: DiffResult) -> list[tuple]:
    return [("tables", "compared", None, ", ".join(r.keys), r.source.label, r.target.label, None, None)]


def _schema(r: DiffResult) -> list[tuple]:
    s = r.schema
    if s.matches:
        return [("schema", "schemas match", None, None, None, None, None, None)]
    return [*[("schema", "column added", c, None, None, t, None, None) for c, t in s.added],
            *[("schema", "column removed", c, None, t, None, None, None) for c, t in s.removed],
            *[("schema", "type changed", c, None, st, tt, None, None) for c, st, tt in s.retyped]]


def _counts(r: DiffResult) -> list[tuple]:
    c = r.counts
    rows = [("source rows", c.source_rows, None), ("target rows", c.target_rows, None), ("joined", c.joined, None),
            ("full match", c.matched, _pct(c.matched, c.joined)),
            ("changed", c.joined - c.matched, _pct(c.joined - c.matched, c.joined)),
            ("source only", c.source_only, None), ("target only", c.target_only, None)]
    found = [("rows", finding, None, None, None, None, count, pct) for finding, count, pct in rows]
    if c.duplicate_keys:
        found.append(("rows", "duplicate keys", None, None, _rows(c.duplicate_source_rows),
                      _rows(c.duplicate_target_rows), c.duplicate_source_rows + c.duplicate_target_rows, None))
    if c.null_key_source_rows or c.null_key_target_rows:
        found.append(("rows", "null keys", None, None, _rows(c.null_key_source_rows), _rows(c.null_key_target_rows),
                      c.null_key_source_rows + c.null_key_target_rows, None))
    return found


def _columns(r: DiffResult) -> list[tuple]:
    joined = r.counts.joined
    rows = [("column", "match rate", c, None, None, None, n, _pct(n, joined)) for c, n in r.column_matches]
    rows += [("column", "not compared", c, None, t, t, None, None) for c, t in r.not_compared]
    return rows


def _sample(s: Sample) -> list[tuple]:
    key = _values(s.key)
    if s.kind == CHANGED:
        source, target = dict(s.source), dict(s.target)
        return [("sample", s.kind, c, key, _text(source[c]), _text(target[c]), None, None) for c in s.changed]
    if s.kind == DUPLICATE:
        return [("sample", s.kind, None, key, _rows(s.rows[0]), _rows(s.rows[1]), None, None)]
    return [("sample", s.kind, None, key, _values(s.source) if s.source else None,
             _values(s.target) if s.target else None, None, None)]


def _pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def _values(pairs: tuple[tuple[str, Any], ...]) -> str:
    """``name=value, ...``.

    >>> _values((("id", 1), ("ds", date(2024, 1, 1)), ("note", None)))
    'id=1, ds=2024-01-01, note=NULL'
    """
    return ", ".join(f"{name}={_text(value)}" for name, value in pairs)


def _text(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    return str(value)
