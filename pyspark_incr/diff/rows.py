"""The row half of a table diff: one full outer join on the key, counted in the pass that samples it.

Each side is keyed first: its key columns in one struct (struct equality pairs NULL with NULL, and a
join on one column keeps Spark's partitioning from the window below, so no extra shuffle), and a
window over the key counts the rows sharing it. A key held by more than one row on either side is
reported as a duplicate and left out of the value comparison, instead of pairing every row with every
other and inflating the counts; only its first row goes into the join.

The counts are aggregated over the joined rows as they stream past (an ``observe`` on the sample
query, or one aggregate when no sample is asked): one Spark action over one join, and no row but
the sample reaches the driver.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import reduce
from typing import Any

import sqlglot
from pyspark.sql import Observation, Window
from pyspark.sql import functions as F
from sqlglot import exp
from sqlglot.errors import SqlglotError

from pyspark_incr.diff.schema import SchemaDiff, comparable, schema_diff
from pyspark_incr.diff.sides import Side
from pyspark_incr.errors import ArgumentError
from pyspark_incr.sqltext import ident, render

#: What a joined row is; a key held twice on a side is ``duplicate key`` whatever the values.
MATCH, CHANGED, SOURCE_ONLY, TARGET_ONLY, DUPLICATE = "match", "changed", "source only", "target only", "duplicate key"
#: Types rounded to ``decimals`` places before comparing.
ROUNDED = ("float", "double", "decimal")


@dataclass(frozen=True)
class Counts:
    """What the join found, in rows (``duplicate_keys``: in keys)."""

    source_rows: int
    target_rows: int
    #: Keys in both, held once on each side: their rows are compared.
    joined: int
    #: Joined rows whose every compared column is equal.
    matched: int
    source_only: int
    target_only: int
    duplicate_keys: int
    duplicate_source_rows: int
    duplicate_target_rows: int
    null_key_source_rows: int
    null_key_target_rows: int


@dataclass(frozen=True)
class Sample:
    """One sampled row: its kind, key, and the compared columns' values on each side."""

    kind: str
    key: tuple[tuple[str, Any], ...]
    source: tuple[tuple[str, Any], ...]
    target: tuple[tuple[str, Any], ...]
    #: For ``changed``: the columns whose values differ.
    changed: tuple[str, ...] = ()
    #: For ``duplicate key``: how many rows hold the key on each side.
    rows: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class DiffResult:
    """A table diff: the sides, the key, the schema diff, the counts, per-column matches and the sample."""

    source: Side
    target: Side
    keys: tuple[str, ...]
    schema: SchemaDiff
    #: Columns compared (shared, same type, not in the key nor skipped), in the source's order and spelling.
    compared: tuple[str, ...]
    #: Shared columns Spark cannot compare: ``(name, type)``.
    not_compared: tuple[tuple[str, str], ...]
    counts: Counts
    #: Per compared column: joined rows where it is equal.
    column_matches: tuple[tuple[str, int], ...]
    samples: tuple[Sample, ...]


def compare(spark: Any, source: Side, target: Side, keys: tuple[str, ...], where: str | None = None,
            skip: tuple[str, ...] = (), decimals: int = 3, limit: int = 0) -> DiffResult:
    """Diff ``target`` against ``source`` on ``keys``; up to ``limit`` sample rows of each kind (0: none)."""
    condition = where_condition(where)
    frames = {side.role: _read(spark, side, condition, where) for side in (source, target)}
    schemas = {role: df.schema for role, df in frames.items()}
    diff = schema_diff(schemas["source"], schemas["target"])
    key_pairs = [(_column(source, schemas["source"], k), _column(target, schemas["target"], k)) for k in keys]
    _check_skip(skip, schemas)
    columns, not_compared = _compared(diff, schemas["source"], {k.lower() for k in keys}, {s.lower() for s in skip})
    key_types = [_key_type(frames, s, t) for s, t in key_pairs]
    joined = _joined(frames, key_pairs, key_types, columns, decimals)
    counts, matches, rows = _run(joined, len(columns), limit)
    key_names, names = tuple(s for s, _ in key_pairs), tuple(c[0] for c in columns)
    samples = tuple(_sample(r, key_names, names) for r in rows)
    return DiffResult(source, target, key_names, diff, names, not_compared, counts, tuple(zip(names, matches)), samples)


def where_condition(where: str | None) -> exp.Expression | None:
    """``where`` parsed as one Spark SQL condition (refused when it is a statement or several).

    >>> render(where_condition("ds >= '2024-01-01' AND `shop id` IN (1, 2)"))
    "ds >= '2024-01-01' AND `shop id` IN (1, 2)"
    """
    if where is None or not where.strip():
        return None
    try:
        parsed = sqlglot.parse(where, read="spark")
    except SqlglotError as e:
        raise ArgumentError(f"table_diff: where {where!r} does not parse as a condition ({str(e).splitlines()[0]}); "
                            "write a Spark SQL condition such as ds >= '2024-01-01'") from None
    if len(parsed) != 1 or parsed[0] is None or isinstance(parsed[0], (exp.Query, exp.Command, exp.DDL, exp.DML)):
        raise ArgumentError(f"table_diff: where {where!r} must be one condition (what follows WHERE), not a "
                            "statement; e.g. ds >= '2024-01-01'")
    return parsed[0]


def _read(spark: Any, side: Side, condition: exp.Expression | None, where: str | None) -> Any:
    query = exp.select("*").from_(side.table.copy())
    if condition is not None:
        query = query.where(condition.copy())
    try:
        return spark.sql(render(query))
    except Exception as e:  # noqa: BLE001 - Spark's analysis errors have many types; the side and where say which
        why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ArgumentError(f"table_diff: the {side.role} {side.label}"
                            f"{f' filtered by where {where!r}' if where else ''} cannot be read: {why}") from None


def _column(side: Side, schema: Any, key: str) -> str:
    for field in schema.fields:
        if field.name.lower() == key.lower():
            return field.name
    raise ArgumentError(f"table_diff: key column {key!r} is not a column of the {side.role} {side.label} (its "
                        f"columns: {', '.join(schema.names)}); pass on => the columns identifying a row on both sides")


def _check_skip(skip: tuple[str, ...], schemas: dict[str, Any]) -> None:
    known = {n.lower() for schema in schemas.values() for n in schema.names}
    unknown = [s for s in skip if s.lower() not in known]
    if unknown:
        raise ArgumentError(f"table_diff: skip_columns names {', '.join(map(repr, unknown))}, a column of neither "
                            f"side (columns: {', '.join(schemas['source'].names)})")


def _compared(diff: SchemaDiff, schema: Any, keys: set[str], skip: set[str]
              ) -> tuple[list[tuple[str, str, str]], tuple[tuple[str, str], ...]]:
    types = {f.name: f.dataType for f in schema.fields}
    wanted = [c for c in diff.shared if c[0].lower() not in keys and c[0].lower() not in skip]
    return ([c for c in wanted if comparable(types[c[0]])],
            tuple((c[0], c[2]) for c in wanted if not comparable(types[c[0]])))


def _key_type(frames: dict[str, Any], source: str, target: str) -> Any:
    """The type both sides' key column is cast to: Spark's common type when they differ (int and bigint: bigint)."""
    s, t = frames["source"].select(ident(source)), frames["target"].select(ident(target))
    if s.schema[0].dataType == t.schema[0].dataType:
        return None
    try:
        return s.union(t).schema[0].dataType
    except Exception:  # noqa: BLE001 - Spark's analysis error says the types have no common type
        raise ArgumentError(f"table_diff: key column {source!r} is {s.schema[0].dataType.simpleString()} in the "
                            f"source and {t.schema[0].dataType.simpleString()} in the target, which Spark cannot "
                            "compare; pass on => other key columns") from None


def _keyed(df: Any, keys: list[str], key_types: list[Any], columns: list[str]) -> Any:
    """One row per key: the key struct, whether part of it is NULL, the columns, and how many rows hold the key."""
    parts = [F.col(ident(k)) if t is None else F.col(ident(k)).cast(t) for k, t in zip(keys, key_types)]
    keyed = df.select(F.struct(*[p.alias(f"k{i}") for i, p in enumerate(parts)]).alias("_k"),
                      reduce(lambda a, b: a | b, [F.col(ident(k)).isNull() for k in keys]).alias("_z"),
                      *[F.col(ident(c)).alias(f"_c{i}") for i, c in enumerate(columns)])
    by_key = Window.partitionBy("_k").orderBy("_k")
    whole = by_key.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    return keyed.select("*", F.count(F.lit(1)).over(whole).alias("_n"),
                        F.row_number().over(by_key).alias("_i")).where(F.col("_i") == 1)


def _joined(frames: dict[str, Any], key_pairs: list[tuple[str, str]], key_types: list[Any],
            columns: list[tuple[str, str, str]], decimals: int) -> Any:
    """The full outer join, one row per key, each classified (:data:`MATCH`, :data:`CHANGED`, ...)."""
    s = _keyed(frames["source"], [k for k, _ in key_pairs], key_types, [c[0] for c in columns]).alias("s")
    t = _keyed(frames["target"], [k for _, k in key_pairs], key_types, [c[1] for c in columns]).alias("t")
    equal = []
    for i, (_, _, type_name) in enumerate(columns):
        left, right = F.col(f"s._c{i}"), F.col(f"t._c{i}")
        if type_name.startswith(ROUNDED):
            left, right = F.round(left, decimals), F.round(right, decimals)
        equal.append(left.eqNullSafe(right).alias(f"_e{i}"))
    joined = s.join(t, F.col("s._k") == F.col("t._k"), "full_outer").select(
        F.col("s._k").alias("_sk"), F.col("t._k").alias("_tk"), F.col("s._n").alias("_sn"), F.col("t._n").alias("_tn"),
        F.col("s._z").alias("_sz"), F.col("t._z").alias("_tz"),
        *[F.col(f"{side}._c{i}").alias(f"_{side}{i}") for i in range(len(columns)) for side in "st"], *equal)
    same = reduce(lambda a, b: a & b, [F.col(f"_e{i}") for i in range(len(columns))], F.lit(True))
    kind = (F.when((F.coalesce("_sn", F.lit(0)) > 1) | (F.coalesce("_tn", F.lit(0)) > 1), DUPLICATE)
            .when(F.col("_tn").isNull(), SOURCE_ONLY).when(F.col("_sn").isNull(), TARGET_ONLY)
            .when(same, MATCH).otherwise(CHANGED))
    return joined.withColumn("_kind", kind)


def _metrics(columns: int) -> list[Any]:
    """The counts, as aggregates over the joined rows: one per :class:`Counts` field, then ``column_<i>``."""
    def total(column: str, condition: Any = None) -> Any:
        value = F.col(column) if condition is None else F.when(condition, F.col(column))
        return F.coalesce(F.sum(value), F.lit(0))

    kind, paired = F.col("_kind"), F.col("_kind").isin(MATCH, CHANGED)
    found = {
        "source_rows": total("_sn"), "target_rows": total("_tn"), "joined": F.count_if(paired),
        "matched": F.count_if(kind == MATCH), "source_only": F.count_if(kind == SOURCE_ONLY),
        "target_only": F.count_if(kind == TARGET_ONLY), "duplicate_keys": F.count_if(kind == DUPLICATE),
        "duplicate_source_rows": total("_sn", kind == DUPLICATE),
        "duplicate_target_rows": total("_tn", kind == DUPLICATE),
        "null_key_source_rows": total("_sn", F.col("_sz")), "null_key_target_rows": total("_tn", F.col("_tz")),
        **{f"column_{i}": F.count_if(paired & F.col(f"_e{i}")) for i in range(columns)},
    }
    return [m.alias(name) for name, m in found.items()]


def _run(joined: Any, columns: int, limit: int) -> tuple[Counts, list[int], list[Any]]:
    """Counts, per-column matches and sample rows, from one Spark action over the join."""
    metrics = _metrics(columns)
    if limit <= 0:
        values, rows = joined.agg(*metrics).collect()[0].asDict(), []
    else:
        # a name of its own: calls running at once in one session must not read each other's metrics
        observation = Observation(f"incr_table_diff_{uuid.uuid4().hex[:12]}")
        first = Window.partitionBy("_kind").orderBy(F.coalesce("_sk", "_tk"))
        sampled = (joined.observe(observation, *metrics).where(F.col("_kind") != MATCH)
                   .withColumn("_r", F.row_number().over(first)).where(F.col("_r") <= limit))
        rows = sampled.collect()
        values = _observed(observation) or joined.agg(*metrics).collect()[0].asDict()
    counts = Counts(**{name: int(values[name]) for name in Counts.__dataclass_fields__})
    return counts, [int(values[f"column_{i}"]) for i in range(columns)], rows


def _observed(observation: Any) -> dict[str, Any] | None:
    """The metrics the sample query observed; None when Spark left them out.

    A ``where`` no row can pass (``false``) lets Spark's optimizer replace the whole plan, the observer
    with it, by an empty relation: the caller then aggregates that empty plan, which reads nothing.
    """
    try:
        return observation.get or None
    except Exception:  # noqa: BLE001 - pyspark fails converting the empty metrics row (an AssertionError in the JVM)
        return None


def _sample(row: Any, keys: tuple[str, ...], columns: tuple[str, ...]) -> Sample:
    key = row["_sk"] if row["_sk"] is not None else row["_tk"]
    named_key = tuple((name, key[f"k{i}"]) for i, name in enumerate(keys))
    source = tuple((c, row[f"_s{i}"]) for i, c in enumerate(columns)) if row["_sn"] is not None else ()
    target = tuple((c, row[f"_t{i}"]) for i, c in enumerate(columns)) if row["_tn"] is not None else ()
    changed = tuple(c for i, c in enumerate(columns) if row["_kind"] == CHANGED and not row[f"_e{i}"])
    return Sample(row["_kind"], named_key, source, target, changed, (row["_sn"] or 0, row["_tn"] or 0))
