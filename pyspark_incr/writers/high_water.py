"""The high-water mark of an INCREMENTAL_BY_CURSOR table, and the typed literals it is written as.

The mark is ``MAX(cursor_column)`` read from the target table at the start of a batch;
it is never stored anywhere else. An append becomes visible only when its Spark job
commits, so MAX moves exactly with committed rows: a failed append leaves the old mark,
and the next run fetches the same rows again.

Values travel from Spark to the rendered query as SQL text, never as Python objects:
a TIMESTAMP as epoch microseconds (a UTC instant, whatever the session time zone),
every other type as Spark's own text of the value, cast back to the column's type.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
#: Types whose text Spark casts back to the same value (doubles print their shortest exact form).
_CAST_BACK = ("float", "double", "date", "timestamp_ntz")


def is_cursor_type(spark_type: str) -> bool:
    """True for the column types a cursor can be: ordered, and exactly written back as a literal.

    >>> [is_cursor_type(t) for t in ("timestamp", "bigint", "decimal(10,2)", "string", "boolean", "binary")]
    [True, True, True, True, False, False]
    """
    return spark_type in (*_INTEGRAL, *_CAST_BACK, "timestamp", "string") or spark_type.startswith("decimal(")


def cursor_type(schema: Any, column: str, where: str) -> str:
    """The Spark type (``simpleString``) of ``column`` in ``schema``; an error when it cannot be a cursor."""
    field = _field(schema, column)
    if field is None:
        names = ", ".join(f.name for f in schema.fields)
        raise ModelDefinitionError(
            f"{where}: cursor_column {column!r} is not a column of the query's output (it has {names})"
        )
    spark_type = field.dataType.simpleString()
    if not is_cursor_type(spark_type):
        raise ModelDefinitionError(
            f"{where}: cursor_column {column!r} is {spark_type}; a cursor must be a timestamp, date, number or "
            "string column that only grows"
        )
    return spark_type


def read(spark: Any, table: exp.Table, column: str, where: str) -> tuple[str, exp.Expression | None]:
    """The cursor column's type in ``table`` and its high-water mark as a typed literal (None when the
    table holds no cursor value yet: empty, or just recreated)."""
    schema = spark.table(table.sql("spark")).schema
    spark_type = cursor_type(schema, column, where)
    top = exp.Max(this=exp.column(_field(schema, column).name, quoted=True))
    value = exp.func("unix_micros", top) if spark_type == "timestamp" else exp.cast(top, "STRING")
    row = spark.sql(exp.select(value.as_("mark")).from_(table.copy()).sql("spark")).first()
    return spark_type, None if row is None or row.mark is None else as_literal(row.mark, spark_type)


def as_literal(value: int | str, spark_type: str) -> exp.Expression:
    """A literal of ``spark_type`` holding ``value`` as :func:`read` fetches it.

    >>> as_literal(1704067205000001, "timestamp").sql("spark")
    "CAST('2024-01-01 00:00:05.000001+00:00' AS TIMESTAMP)"
    >>> as_literal("42", "bigint").sql("spark"), as_literal("12.50", "decimal(10,2)").sql("spark")
    ('CAST(42 AS BIGINT)', "CAST('12.50' AS DECIMAL(10, 2))")
    >>> as_literal("it's", "string").sql("spark")
    "'it\\\\'s'"
    """
    if spark_type == "timestamp":
        return _utc_literal(_EPOCH + timedelta(microseconds=int(value)))
    if spark_type == "string":
        return exp.Literal.string(str(value))
    text = exp.Literal.number(str(value)) if spark_type in _INTEGRAL else exp.Literal.string(str(value))
    return exp.cast(text, data_type(spark_type))


def initial(initial_value: str | None, spark_type: str) -> exp.Expression | None:
    """``initial_value`` (Spark SQL text) as a literal of the cursor's type; None without one.

    A time written as a string for a TIMESTAMP cursor is UTC unless it carries an offset, like
    the model's ``start``; the session time zone never shifts it.

    >>> initial("'2024-01-01'", "timestamp").sql("spark")
    "CAST('2024-01-01 00:00:00+00:00' AS TIMESTAMP)"
    >>> initial("CAST('2024-01-01 02:00:00+02:00' AS TIMESTAMP)", "timestamp").sql("spark")
    "CAST('2024-01-01 00:00:00+00:00' AS TIMESTAMP)"
    >>> initial("0", "bigint").sql("spark"), initial(None, "bigint"), initial("NULL", "date")
    ('CAST(0 AS BIGINT)', None, None)
    """
    if initial_value is None:
        return None
    value = sqlglot.parse_one(initial_value, read="spark")
    if isinstance(value, exp.Null):
        return None
    text = value.this if isinstance(value, exp.Cast) else value
    if spark_type == "timestamp" and isinstance(text, exp.Literal) and text.is_string:
        try:
            parsed = datetime.fromisoformat(text.this.strip().replace("Z", "+00:00"))
        except ValueError:
            pass  # a form only Spark reads: let Spark cast it
        else:
            return _utc_literal(parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc))
    target = data_type(spark_type)
    return value if isinstance(value, exp.Cast) and value.to == target else exp.cast(value, target)


def _utc_literal(dt: datetime) -> exp.Expression:
    dt = dt.astimezone(timezone.utc)
    text = dt.strftime("%Y-%m-%d %H:%M:%S") + (f".{dt.microsecond:06d}" if dt.microsecond else "")
    return exp.cast(exp.Literal.string(text + "+00:00"), "TIMESTAMP")


def data_type(spark_type: str) -> exp.DataType:
    """``spark_type`` (a ``simpleString``) as a sqlglot type."""
    return exp.DataType.build(spark_type, dialect="spark")


def _field(schema: Any, column: str) -> Any:
    return next((f for f in schema.fields if f.name.lower() == column.lower()), None)
