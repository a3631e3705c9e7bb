"""Forward-only changes: how a kept table's columns differ from the new query's, and what the policies allow.

A forward-only change keeps the table and applies the new query from now on, so
the table and the query's output must agree. New columns are *additive* (``ALTER
TABLE ... ADD COLUMNS``; older rows read NULL); dropped or retyped columns are
*destructive* (older rows hold data the new query cannot produce). The model's
``on_additive_change`` / ``on_destructive_change`` (error, warn, allow, ignore;
defaults allow / error) decide:

- error: the change is refused before anything is built, listing each column;
- warn: applied, and the plan and the results say so;
- allow: applied;
- ignore: applied without a word.

An applied destructive change keeps the table's columns: a dropped column is
written as NULL from now on, a retyped one is cast to the table's type. An
ignored additive change leaves the new columns out of the table.
"""

from __future__ import annotations

from dataclasses import dataclass

Column = tuple[str, str]

DEFAULT_ADDITIVE, DEFAULT_DESTRUCTIVE = "allow", "error"


@dataclass(frozen=True)
class SchemaChange:
    """Columns the new output adds, drops and retypes, relative to the kept table (names as in the table)."""

    added: tuple[Column, ...] = ()
    dropped: tuple[Column, ...] = ()
    retyped: tuple[tuple[str, str, str], ...] = ()

    @property
    def destructive(self) -> bool:
        return bool(self.dropped or self.retyped)

    def describe(self) -> list[str]:
        """One phrase per column change.

        >>> SchemaChange((("c", "int"),), (("b", "string"),), (("a", "bigint", "int"),)).describe()
        ['adds column c int', 'drops column b string', 'changes column a from bigint to int']
        """
        return ([f"adds column {n} {t}" for n, t in self.added]
                + [f"drops column {n} {t}" for n, t in self.dropped]
                + [f"changes column {n} from {old} to {new}" for n, old, new in self.retyped])


def diff(table: list[Column], output: list[Column]) -> SchemaChange:
    """What ``output`` changes relative to ``table`` (column names compared case-insensitively, as Spark does).

    >>> diff([("ds", "date"), ("a", "int")], [("ds", "date"), ("A", "bigint"), ("b", "string")])
    SchemaChange(added=(('b', 'string'),), dropped=(), retyped=(('a', 'int', 'bigint'),))
    """
    old = {n.lower(): (n, t) for n, t in table}
    new = {n.lower(): (n, t) for n, t in output}
    return SchemaChange(
        added=tuple(new[k] for k in new if k not in old),
        dropped=tuple(old[k] for k in old if k not in new),
        retyped=tuple((old[k][0], old[k][1], new[k][1]) for k in old if k in new and old[k][1] != new[k][1]),
    )


def verdict(change: SchemaChange, additive: str | None, destructive: str | None) -> tuple[list[str], list[str]]:
    """(refusals, warnings) under the model's policies.

    >>> verdict(diff([("a", "int")], [("b", "int")]), None, None)
    (['drops column a int'], [])
    >>> verdict(diff([("a", "int")], [("a", "int"), ("b", "int")]), "warn", None)
    ([], ['adds column b int'])
    """
    refused, warned = [], []
    for phrases, policy in ((_additive(change), additive or DEFAULT_ADDITIVE),
                            (_destructive(change), destructive or DEFAULT_DESTRUCTIVE)):
        if policy == "error":
            refused += phrases
        elif policy == "warn":
            warned += phrases
    return refused, warned


def projection(query_columns: list[str], change: SchemaChange, additive: str | None) -> tuple[tuple[str, str | None], ...]:
    """The query's output conformed to the kept table: (column, type to cast to, or None to keep as is).

    A column the table lacks is kept unless additive changes are ignored; a dropped one comes
    back as a typed NULL; a retyped one is cast to the table's type.

    >>> projection(["a", "c"], diff([("a", "int"), ("b", "string")], [("a", "bigint"), ("c", "int")]), "ignore")
    (('a', 'int'), ('b', 'string'))
    """
    added = {n.lower() for n, _ in change.added}
    casts = {n.lower(): old for n, old, _ in change.retyped}
    kept = [(c, casts.get(c.lower())) for c in query_columns
            if not (c.lower() in added and (additive or DEFAULT_ADDITIVE) == "ignore")]
    return tuple(kept) + tuple((n, t) for n, t in change.dropped)


def refusal(where: str, table: str | None, refused: list[str] | tuple[str, ...]) -> str:
    """The error of a forward-only change the policies refuse, naming each column change and the fix.

    >>> refusal("model s.t", "p.t", ["drops column a int"])
    'model s.t: its forward-only change to p.t is refused: drops column a int. Set on_destructive_change / on_additive_change to warn, allow or ignore, or apply it as a rebuild (forward_only false)'
    """
    return (f"{where}: its forward-only change to {table} is refused: " + "; ".join(refused)
            + ". Set on_destructive_change / on_additive_change to warn, allow or ignore, "
            "or apply it as a rebuild (forward_only false)")


def columns_to_add(change: SchemaChange, additive: str | None) -> tuple[Column, ...]:
    """The columns ``ALTER TABLE ... ADD COLUMNS`` adds: the new ones, unless additive changes are ignored.

    >>> columns_to_add(diff([("a", "int")], [("a", "int"), ("b", "string")]), None)
    (('b', 'string'),)
    """
    return () if (additive or DEFAULT_ADDITIVE) == "ignore" else change.added


def _additive(change: SchemaChange) -> list[str]:
    return SchemaChange(added=change.added).describe()


def _destructive(change: SchemaChange) -> list[str]:
    return SchemaChange(dropped=change.dropped, retyped=change.retyped).describe()
