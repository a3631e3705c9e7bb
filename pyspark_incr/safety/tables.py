"""Table-name normalization shared by the classifier and the bounds derivation."""

from __future__ import annotations

from sqlglot import exp


def table_key(name: str) -> tuple[str, ...]:
    """``db.table`` of a dotted name; a leading catalog does not change which table it is.

    >>> table_key("cat.`Raw`.events"), table_key("events")
    (('raw', 'events'), ('events',))
    """
    return tuple(p.strip("`").lower() for p in name.split("."))[-2:]


def table_name(table: exp.Table) -> str:
    """Lowercased ``catalog.db.name`` of a table node, as far as it is written."""
    return ".".join(p for p in (table.catalog, table.db, table.name) if p).lower()
