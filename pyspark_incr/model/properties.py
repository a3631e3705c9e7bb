"""Declarative property tables: which properties a MODEL block or a kind accepts, and how to read them.

One mechanism serves both levels: a table of :class:`Prop` entries, read by
:func:`read_properties`, which also refuses unknown properties with a
did-you-mean suggestion and reports missing required ones.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.block import Property
from pyspark_incr.model.values import Reader

#: What a property changes, which decides the fingerprint it belongs to.
DATA, METADATA, BUILD = "data", "metadata", "build"


@dataclass(frozen=True)
class Prop:
    """One accepted property.

    ``field`` is the record field the value goes to; a reader returning a tuple
    may fill several fields at once (``time_column (ds, '%Y%m%d')``). ``affects``
    says whether a change alters the rows (data), only how they are built
    (build: batching, lookback) or nothing stored (metadata).
    """

    name: str
    read: Reader
    affects: str = METADATA
    field: str | tuple[str, ...] = ""
    required: bool = False
    example: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def fields(self) -> tuple[str, ...]:
        if isinstance(self.field, tuple):
            return self.field
        return (self.field or self.name,)


def read_properties(
    props: dict[str, Property], table: tuple[Prop, ...], where: str, owner: str, at: str = ""
) -> dict[str, Any]:
    """Read ``props`` with ``table`` into ``{field: value}``.

    ``owner`` names what the properties belong to in messages ("MODEL", "kind SEED").
    """
    by_name = {name: p for p in table for name in (p.name, *p.aliases)}
    values: dict[str, Any] = {}
    seen: dict[str, str] = {}
    for key, prop in props.items():
        spec = by_name.get(key)
        if spec is None:
            raise unknown_property(prop, sorted(by_name), where, owner)
        if spec.name in seen:
            raise ModelDefinitionError(
                f"{where}: {prop.at}: {key!r} and {seen[spec.name]!r} are the same property of {owner}; give one"
            )
        seen[spec.name] = key
        value = spec.read(prop, where)
        if len(spec.fields) == 1:
            values[spec.fields[0]] = value
        else:
            values.update(zip(spec.fields, value))
    for spec in table:
        if spec.required and spec.name not in seen:
            example = f", e.g. {spec.example}" if spec.example else ""
            raise ModelDefinitionError(f"{where}{': ' + at if at else ''}: {owner} needs {spec.name}{example}")
    return values


def fields_affecting(table: tuple[Prop, ...], affects: str) -> tuple[str, ...]:
    """The record fields whose properties belong to one fingerprint category."""
    return tuple(f for p in table if p.affects == affects for f in p.fields)


def unknown_property(prop: Property, known: list[str], where: str, owner: str) -> ModelDefinitionError:
    """The error for a property ``owner`` does not have, with the closest known name."""
    hint = difflib.get_close_matches(prop.key, known, n=1, cutoff=0.6)
    also = f"; did you mean {hint[0]!r}?" if hint else ""
    listed = ", ".join(known) if known else "none"
    return ModelDefinitionError(f"{where}: {prop.at}: unknown {owner} property {prop.key!r}{also} ({owner} properties: {listed})")
