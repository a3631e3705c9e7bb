"""SQLMesh's change category of a model change: breaking or non-breaking.

A change is *non-breaking* only when the new query is the old one plus new columns
in the outermost SELECT that cannot change which rows there are; downstream models
then keep their data. Anything else is *breaking*: downstream models are rebuilt.
The decision compares the parsed queries (Spark dialect, identifiers normalized),
so whitespace, comments and identifier case never matter.

The caller (the planner) only asks when the two versions' data hashes differ
(:func:`pyspark_incr.model.fingerprint.data_hash`); for two versions that hold the
same data the answer is non-breaking, "no change ...".

>>> from pyspark_incr.model.definition import parse_model
>>> old = parse_model("MODEL (name shop.daily, kind FULL); SELECT a, b FROM raw.t WHERE a > 0")
>>> categorize(old, parse_model("MODEL (name shop.daily, kind FULL); SELECT a, b, a * b AS ab FROM raw.t WHERE a > 0"))
Category(name='non-breaking', reason='adds column ab; nothing else changes')
>>> categorize(old, parse_model("MODEL (name shop.daily, kind FULL); SELECT a FROM raw.t WHERE a > 0"))
Category(name='breaking', reason='removes column b')
>>> categorize(old, parse_model("MODEL (name shop.daily, kind FULL); SELECT a, b FROM raw.t WHERE a > 10"))
Category(name='breaking', reason='changes the WHERE clause: WHERE a > 0 -> WHERE a > 10')
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Iterable

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from pyspark_incr.errors import ArgumentError
from pyspark_incr.model.definition import MODEL_PROPS, Model
from pyspark_incr.model.fingerprint import kind_fields
from pyspark_incr.model.properties import DATA, fields_affecting

BREAKING, NON_BREAKING = "breaking", "non-breaking"

_MODEL_DATA = fields_affecting(MODEL_PROPS, DATA)
#: Functions that produce several rows per input row (a new column with one changes the row count).
_GENERATORS = frozenset({
    "explode", "explode_outer", "posexplode", "posexplode_outer", "inline", "inline_outer", "stack",
    "json_tuple", "unnest",
})
#: Functions whose value differs from run to run, so every existing row would change on a rebuild.
_NONDETERMINISTIC = frozenset({"rand", "randn", "random", "uuid", "shuffle", "monotonically_increasing_id"})
_CLAUSES = {
    "with_": "WITH clause", "from_": "FROM clause", "joins": "JOINs", "laterals": "LATERAL VIEWs",
    "where": "WHERE clause", "group": "GROUP BY", "having": "HAVING clause", "qualify": "QUALIFY clause",
    "windows": "WINDOW clause", "order": "ORDER BY", "sort": "SORT BY", "distribute": "DISTRIBUTE BY",
    "cluster": "CLUSTER BY", "limit": "LIMIT", "offset": "OFFSET", "distinct": "DISTINCT",
}
_USE = "use 'model:breaking' or 'model:non-breaking'"


@dataclass(frozen=True)
class Category:
    """A change category and one short sentence saying why."""

    name: str
    reason: str


def categorize(old: Model, new: Model) -> Category:
    """The category of the change from ``old`` to ``new``, named after the first difference found.

    Kind and data properties are compared first, then the query:

    >>> from pyspark_incr.model.definition import parse_model
    >>> full, view = "MODEL (name a.b, kind FULL); SELECT x FROM t", "MODEL (name a.b); SELECT x FROM t"
    >>> categorize(parse_model(full), parse_model(view))
    Category(name='breaking', reason='changes kind from FULL to VIEW')
    >>> categorize(parse_model(view), parse_model("MODEL (name a.b); SELECT x, COUNT(*) AS n FROM t"))
    Category(name='breaking', reason='adds aggregate column n to a SELECT without aggregation, which changes the rows')
    """
    return (_kind_change(old, new) or _props_change(old, new) or _content_change(old, new)
            or _query_change(old.query, new.query)
            or Category(NON_BREAKING, "no change to the query, kind or data properties"))


def parse_overrides(text: str | None, known: Iterable[str]) -> dict[str, str]:
    """Categories given by the user, ``'shop.daily:breaking, shop.totals:non-breaking'``, by lowercased model name.

    >>> parse_overrides("Shop.Daily:breaking, shop.totals: non_breaking", ["shop.daily", "shop.totals"])
    {'shop.daily': 'breaking', 'shop.totals': 'non-breaking'}
    >>> parse_overrides("  ", ["shop.daily"])
    {}
    >>> parse_overrides("shop.dialy:breaking", ["shop.daily"])
    Traceback (most recent call last):
    ...
    pyspark_incr.errors.ArgumentError: categorize item 'shop.dialy:breaking' names model shop.dialy, which is not a changed model of this plan (did you mean shop.daily?); use 'model:breaking' or 'model:non-breaking'
    """
    names = {k.lower() for k in known}
    result: dict[str, str] = {}
    for item in (text or "").split(","):
        if item.strip():  # a trailing comma is harmless
            name, category = _override(item.strip(), names)
            if result.get(name, category) != category:
                raise ArgumentError(f"categorize item {item.strip()!r} contradicts an earlier item for {name}; {_USE}")
            result[name] = category
    return result


def _override(item: str, names: set[str]) -> tuple[str, str]:
    name, sep, value = (part.strip().lower() for part in item.partition(":"))
    if not (name and sep and value) or ":" in value:
        raise ArgumentError(f"categorize item {item!r} is not model:category; {_USE}")
    category = value.replace("_", "-")
    if category not in (BREAKING, NON_BREAKING):
        raise ArgumentError(f"categorize item {item!r} has category {value!r}, not breaking or non-breaking; {_USE}")
    if name not in names:
        hint = difflib.get_close_matches(name, sorted(names), n=1)
        also = f" (did you mean {hint[0]}?)" if hint else ""
        raise ArgumentError(
            f"categorize item {item!r} names model {name}, which is not a changed model of this plan{also}; {_USE}"
        )
    return name, category


def _kind_change(old: Model, new: Model) -> Category | None:
    if old.kind.name != new.kind.name:
        return Category(BREAKING, f"changes kind from {old.kind.name} to {new.kind.name}")
    return _first_change(_kind_data(old), _kind_data(new), "kind property ")


def _kind_data(model: Model) -> dict[str, Any]:
    """The kind's fields that decide the rows (as in the data hash); build fields such as batch_size do not."""
    return kind_fields(model.kind)


def _props_change(old: Model, new: Model) -> Category | None:
    before, after = ({f: getattr(m, f) for f in _MODEL_DATA} for m in (old, new))
    return _first_change(before, after, "property ")


def _content_change(old: Model, new: Model) -> Category | None:
    if old.content_hash == new.content_hash:
        return None
    what = "seed file content" if old.kind.name == "SEED" else "loaded content"
    return Category(BREAKING, f"{what} changed")


def _first_change(before: dict[str, Any], after: dict[str, Any], what: str) -> Category | None:
    for key in before:
        if before[key] != after.get(key):
            return Category(BREAKING, f"changes {what}{key}: {_show(before[key])} -> {_show(after.get(key))}")
    return None


def _query_change(old: str | None, new: str | None) -> Category | None:
    if old is None or new is None:
        return None if old == new else Category(BREAKING, "changes the query")
    try:
        a, b = _parse(old), _parse(new)
    except sqlglot.errors.SqlglotError:  # cannot compare structurally: any textual change is breaking
        return None if old == new else Category(BREAKING, "changes the query")
    if _sql(a) == _sql(b):
        return None
    if not (isinstance(a, exp.Select) and isinstance(b, exp.Select)):
        # Keep set operations simple: columns would have to be added to every branch alike.
        if _shape(a) != _shape(b):
            return Category(BREAKING, f"changes the query from {_shape(a)} to {_shape(b)}")
        return Category(BREAKING, f"changes the {_shape(a)} query (any change to a set operation is breaking)")
    return _clause_change(a, b) or _projection_change(a, b)


def _parse(query: str) -> exp.Expression:
    return normalize_identifiers(sqlglot.parse_one(query, read="spark"), dialect="spark")


def _shape(query: exp.Expression) -> str:
    return query.key.upper()


def _clause_change(a: exp.Select, b: exp.Select) -> Category | None:
    """The first clause other than the projection list that differs (in the order SQL writes them)."""
    for key in exp.Select.arg_types:
        if key != "expressions" and _sql(a.args.get(key)) != _sql(b.args.get(key)):
            if key == "with_":
                return _cte_change(a.args.get(key), b.args.get(key))
            label = _CLAUSES.get(key, key.strip("_").replace("_", " ").upper())
            return Category(BREAKING, f"changes the {label}: {_short(a.args.get(key))} -> {_short(b.args.get(key))}")
    return None


def _cte_change(a: exp.With | None, b: exp.With | None) -> Category:
    before = {c.alias: c for c in (a.expressions if a else [])}
    after = {c.alias: c for c in (b.expressions if b else [])}
    for name in before:
        if name not in after:
            return Category(BREAKING, f"removes CTE {name}")
        if _sql(before[name]) != _sql(after[name]):
            return Category(BREAKING, f"changes CTE {name}: {_short(before[name].this)} -> {_short(after[name].this)}")
    added = [n for n in after if n not in before]
    return Category(BREAKING, f"adds CTE {added[0]}" if added else "changes the WITH clause")


def _projection_change(a: exp.Select, b: exp.Select) -> Category:
    """Breaking unless ``b``'s columns are ``a``'s, in the same order, with harmless new ones among them."""
    old, new = a.expressions, b.expressions
    matched, j = set(), 0
    for column in old:  # greedy: is the old list a subsequence of the new one?
        while j < len(new) and _sql(new[j]) != _sql(column):
            j += 1
        if j == len(new):
            return _missing(column, old, new)
        matched.add(j)
        j += 1
    added = [c for i, c in enumerate(new) if i not in matched]
    for column in added:
        problem = _row_effect(column, a)
        if problem:
            return Category(BREAKING, f"adds {problem}")
    names = ", ".join(_name(c) for c in added)
    return Category(NON_BREAKING, f"adds column{'s' if len(added) > 1 else ''} {names}; nothing else changes")


def _missing(column: exp.Expression, old: list[exp.Expression], new: list[exp.Expression]) -> Category:
    """Why an old column is not in the new list: moved, changed, renamed or removed."""
    name = _name(column)
    same_name = [c for c in new if _name(c) == name]
    if same_name and _sql(same_name[0]) == _sql(column):
        return Category(BREAKING, f"moves column {name}")
    if same_name:
        before, after = _short(column.unalias()), _short(same_name[0].unalias())
        return Category(BREAKING, f"changes column {name}: {before} -> {after}")
    old_names = {_name(c) for c in old}
    renamed = [c for c in new if _sql(c.unalias()) == _sql(column.unalias()) and _name(c) not in old_names]
    if renamed:
        return Category(BREAKING, f"renames column {name} to {_name(renamed[0])}")
    return Category(BREAKING, f"removes column {name}")


def _row_effect(column: exp.Expression, select: exp.Select) -> str | None:
    """How a new column would change the rows, or None when it only adds a value to each row."""
    name = _name(column)
    if select.args.get("distinct"):
        return f"column {name} to a SELECT DISTINCT, which can change the rows"
    functions = {_function(f) for f in column.find_all(exp.Func)}
    generators, random = sorted(functions & _GENERATORS), sorted(functions & _NONDETERMINISTIC)
    if generators:
        return f"column {name} with generator {generators[0].upper()}, which changes the row count"
    if random:
        return f"column {name} with non-deterministic {random[0].upper()}, which changes on every rebuild"
    if _aggregates(column) and not _is_aggregation(select):
        return f"aggregate column {name} to a SELECT without aggregation, which changes the rows"
    return None


def _function(node: exp.Func) -> str:
    return (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()


def _aggregates(node: exp.Expression) -> bool:
    """True when ``node`` aggregates the SELECT it is in (an aggregate inside OVER () or a subquery does not)."""
    outer = node.walk(prune=lambda n: isinstance(n, (exp.Window, exp.Subquery)))
    return any(isinstance(n, exp.AggFunc) for n in outer)


def _is_aggregation(select: exp.Select) -> bool:
    return bool(select.args.get("group") or select.args.get("having") or any(map(_aggregates, select.expressions)))


def _name(column: exp.Expression) -> str:
    return column.alias_or_name or _sql(column)


def _sql(node: Any) -> str:
    """Comparable text of an argument: an expression, a list of them, or a plain value."""
    if isinstance(node, exp.Expression):
        return node.sql(dialect="spark", comments=False)
    if isinstance(node, list):
        return " ".join(map(_sql, node))
    return "" if node is None else str(node)


def _short(node: Any, limit: int = 80) -> str:
    text = _sql(node) or "(none)"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(map(_show, value)) + ")"
    return "(none)" if value is None else str(value)
