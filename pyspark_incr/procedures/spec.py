"""Declarative procedure specs: what the JVM shim shows for each CALL procedure.

The shim holds no per-procedure code. It asks Python for :func:`registry_json`
and declares each procedure's parameters and output schema from it.

>>> p = Param("env", "string", "Environment to plan.", default="prod")
>>> p.sql_default
"'prod'"
>>> Param("n", "int", "A count.", default=3).sql_default
'3'
>>> Param("flag", "boolean", "A flag.", default=False).sql_default
'false'
>>> Param("x", "string", "Optional.").sql_default
'NULL'
>>> Param("name", "string", "Required.", required=True).sql_default is None
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

#: Types a parameter or output column may have (Spark SQL type names).
TYPES = ("string", "boolean", "int", "bigint", "double", "timestamp")


@dataclass(frozen=True)
class Param:
    """One procedure parameter. Optional parameters default to ``default`` (NULL if None)."""

    name: str
    type: str
    description: str
    default: Any = None
    required: bool = False

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"parameter {self.name}: type {self.type!r} is not one of {TYPES}")

    @property
    def sql_default(self) -> str | None:
        """The default as a Spark SQL literal, or None for a required parameter."""
        if self.required:
            return None
        if self.default is None:
            return "NULL"
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        if isinstance(self.default, (int, float)):
            return repr(self.default)
        escaped = str(self.default).replace("\\", "\\\\").replace("'", "\\'")
        return f"'{escaped}'"


@dataclass(frozen=True)
class Column:
    """One column of a procedure's result rows."""

    name: str
    type: str
    description: str

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"column {self.name}: type {self.type!r} is not one of {TYPES}")


@dataclass(frozen=True)
class ProcedureSpec:
    """A CALL procedure: its signature, its result schema and the Python function behind it.

    ``fn(spark, **args)`` returns an iterable of tuples (or dicts) matching ``output``.
    Timestamps are returned as ``datetime`` (UTC) or epoch microseconds.
    """

    name: str
    description: str
    params: tuple[Param, ...]
    output: tuple[Column, ...]
    fn: Callable[..., Any] = field(compare=False, repr=False)

    def to_json(self) -> dict:
        """The shape the JVM shim reads (see ``jvm-shim``)."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": [
                {"name": p.name, "type": p.type, "default": p.sql_default, "description": p.description}
                for p in self.params
            ],
            "output": [{"name": c.name, "type": c.type, "description": c.description} for c in self.output],
        }


def registry_json(specs: dict[str, ProcedureSpec]) -> str:
    """Serialize a registry for the shim: ``{"procedures": [...]}`` in name order."""
    return json.dumps({"procedures": [specs[n].to_json() for n in sorted(specs)]})
