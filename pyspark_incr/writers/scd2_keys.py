"""How SCD type 2 matches a unique key: NULL-safely, on join keys Spark sorts and joins fast.

A NULL key is one key (``IS NOT DISTINCT FROM``), but Spark joins ``a <=> b`` on the pair
``(coalesce(a, <default>), a IS NULL)`` it derives itself: two sort keys where the key alone
would be one, and a partitioning no earlier step of the query (the dedupe's window) can provide,
so the source is shuffled and sorted twice. Here each key column becomes
``coalesce(key, <a value of its type>)`` (``__incr_k<i>``), computed once where a side is read,
and which keys are NULL becomes one integer (``__incr_nulls``): sides join on the coalesced
keys alone, with the NULL pattern compared after the match (a condition Spark does not take
for a join key), and the dedupe's window partitions by the same columns, so its shuffle and
sort are the join's. A key of a type without such a value (arrays, structs, maps, collated
strings) is matched with ``<=>`` as it is.
"""

from __future__ import annotations

from functools import reduce
from typing import Callable

from sqlglot import exp

#: The coalesced key column ``i`` on a side: ``K + str(i)``; which keys are NULL, as bits.
K, NULLS = "__incr_k", "__incr_nulls"
#: Keys past this index are matched with ``<=>`` as they are (the NULL pattern is an INT).
_MAX_CODED = 31

Column = Callable[[str], exp.Expression]


def default_of(type_name: str) -> exp.Expression | None:
    """A non-NULL value of Spark type ``type_name`` (as ``DataFrame.dtypes`` names it), None when there is none here.

    >>> default_of("bigint").sql("spark"), default_of("string").sql("spark"), default_of("decimal(10,2)").sql("spark")
    ('CAST(0 AS BIGINT)', "CAST('' AS STRING)", 'CAST(0 AS DECIMAL(10, 2))')
    >>> default_of("array<int>") is None, default_of("string collate UTF8_LCASE") is None
    (True, True)
    """
    name = type_name.strip().lower()
    if name in ("tinyint", "smallint", "int", "bigint", "float", "double") or name.startswith("decimal("):
        value: exp.Expression = exp.Literal.number(0)
    elif name == "string" or name.startswith(("varchar(", "char(")):
        value = exp.Literal.string("")
    elif name == "boolean":
        value = exp.false()
    elif name == "date":
        value = exp.Literal.string("1970-01-01")
    elif name in ("timestamp", "timestamp_ntz"):
        value = exp.Literal.string("1970-01-01 00:00:00")
    else:
        return None
    return exp.cast(value, exp.DataType.build(name, dialect="spark"))


def coded(key: tuple[str, ...], types: tuple[str, ...]) -> list[exp.Expression | None]:
    """Per key column, the value its NULL is coalesced to; None where it is matched with ``<=>`` as it is
    (its type unknown or without such a value, or past the NULL pattern's bits)."""
    known = [default_of(t) if i < _MAX_CODED else None for i, t in enumerate(types)]
    return known + [None] * (len(key) - len(known))


def key_columns(key: tuple[str, ...], types: tuple[str, ...], col: Column) -> list[exp.Expression]:
    """The projections a side adds: ``__incr_k<i>`` per key column and ``__incr_nulls`` (``col(name)`` reads a column).

    ``types`` may be empty (not known): every key is then matched with ``<=>`` as it is.

    >>> from sqlglot import exp
    >>> [e.sql("spark") for e in key_columns(("id",), ("int",), lambda c: exp.column(c, quoted=True))]
    ['COALESCE(`id`, CAST(0 AS INT)) AS `__incr_k0`', 'CASE WHEN `id` IS NULL THEN 1 ELSE 0 END AS `__incr_nulls`']
    """
    columns, bits = [], []
    for i, (name, value) in enumerate(zip(key, coded(key, types))):
        if value is None:
            columns.append(exp.alias_(col(name), f"{K}{i}", quoted=True))
            continue
        columns.append(exp.alias_(exp.Coalesce(this=col(name), expressions=[value.copy()]), f"{K}{i}", quoted=True))
        bits.append(exp.Case().when(col(name).is_(exp.null()), exp.Literal.number(1 << i)).else_(exp.Literal.number(0)))
    nulls = reduce(lambda a, b: exp.Add(this=a, expression=b), bits) if bits else exp.Literal.number(0)
    return [*columns, exp.alias_(nulls, NULLS, quoted=True)]


def keys_match(key: tuple[str, ...], types: tuple[str, ...], left: Column, right: Column) -> exp.Expression:
    """Two sides' rows (each with :func:`key_columns`) have the same key, NULLs matching NULLs.

    The NULL patterns are compared as ``l - r = 0``, not ``l = r``: an equality between the
    sides would become one more join key (and sort key) of every row.
    """
    defaults = coded(key, types)
    same = [exp.EQ(this=left(f"{K}{i}"), expression=right(f"{K}{i}")) if value is not None
            else exp.NullSafeEQ(this=left(f"{K}{i}"), expression=right(f"{K}{i}"))
            for i, value in enumerate(defaults)]
    if any(value is not None for value in defaults):
        same.append(exp.EQ(this=exp.Sub(this=left(NULLS), expression=right(NULLS)), expression=exp.Literal.number(0)))
    return exp.and_(*same)


def window_keys(key: tuple[str, ...]) -> list[exp.Expression]:
    """What the dedupe's window partitions by: the coalesced keys (the NULL pattern leads its order)."""
    return [exp.column(f"{K}{i}", quoted=True) for i in range(len(key))]
