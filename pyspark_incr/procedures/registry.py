"""The registry of CALL procedures and the one dispatch path every call takes.

Procedure modules register themselves with :func:`procedure`; the bridge calls
:func:`dispatch`. Nothing here knows any procedure by name.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable, Iterable

from pyspark_incr import timings
from pyspark_incr.errors import ArgumentError
from pyspark_incr.procedures.spec import Column, Param, ProcedureSpec

REGISTRY: dict[str, ProcedureSpec] = {}


def procedure(
    name: str, description: str, params: Iterable[Param], output: Iterable[Column]
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn(spark, **args)`` as ``CALL incr.<name>(...)``."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        REGISTRY[name] = ProcedureSpec(name, description, tuple(params), tuple(output), fn)
        return fn

    return register


def dispatch(spark: Any, name: str, args: dict[str, Any]) -> tuple[ProcedureSpec, list[tuple]]:
    """Run procedure ``name`` with ``args`` (declared parameter names only).

    Missing optional arguments take their declared default; rows come back as
    tuples in the declared output order.
    """
    spec = REGISTRY.get(name)
    if spec is None:
        known = ", ".join(sorted(REGISTRY))
        raise ArgumentError(f"unknown procedure incr.{name}; known procedures: {known}")
    declared = {p.name: p for p in spec.params}
    unknown = sorted(set(args) - set(declared))
    if unknown:
        raise ArgumentError(
            f"incr.{name}: unknown argument(s) {', '.join(unknown)}; "
            f"declared: {', '.join(declared)}"
        )
    call_args = {}
    for p in spec.params:
        value = args.get(p.name, None if p.required else p.default)
        if p.required and value is None:
            raise ArgumentError(f"incr.{name}: argument {p.name} is required ({p.description})")
        call_args[p.name] = value
    with timings.call(spark, name):  # spark.incr.profile: where the call's time goes (off: a no-op)
        rows = [_as_tuple(spec, row) for row in spec.fn(spark, **call_args)]
    return spec, rows


def _as_tuple(spec: ProcedureSpec, row: Any) -> tuple:
    if isinstance(row, dict):
        return tuple(row.get(c.name) for c in spec.output)
    row = tuple(row)
    if len(row) != len(spec.output):
        raise AssertionError(f"incr.{spec.name} returned {len(row)} values for {len(spec.output)} columns")
    return row


def encode_value(column: Column, value: Any) -> Any:
    """A JSON-safe value for the shim: timestamps become epoch microseconds.

    >>> encode_value(Column("t", "timestamp", ""), datetime(2024, 1, 1, tzinfo=timezone.utc))
    1704067200000000
    >>> encode_value(Column("n", "bigint", ""), 3)
    3
    """
    if value is None:
        return None
    if column.type == "timestamp" and isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        delta = value - datetime(1970, 1, 1, tzinfo=timezone.utc)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if column.type == "string" and not isinstance(value, str):
        return str(value)
    return value
