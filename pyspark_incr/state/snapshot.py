"""Parsed models kept in state as JSON, so reading an environment needs no SQL parsing.

An environment row holds the model's definition text; parsing it again (sqlglot,
croniter) costs milliseconds per model, which for a thousand models is most of a
first plan. The row also holds a *snapshot*: the parsed :class:`Model` record as
JSON, rebuilt field by field into the same frozen dataclasses.

A snapshot is only a cache of ``reparse(definition, source, context)``:

- it is written from that very call, never from anything else;
- it is used only when its format matches this code exactly (:func:`format_version`:
  the encoding's number, the package and sqlglot versions and a digest of the parsing
  code) and it rebuilds a record of the row's own definition, source and context;
- anything else (no snapshot, another format, a field the record no longer has or
  lacks, a class that is not ours) and the definition is parsed again.

JSON only: state tables are writable by any catalog user, so loading a snapshot
must never run code. Only frozen dataclasses and enums of ``pyspark_incr`` are
rebuilt, from plain JSON values.

>>> from pyspark_incr.model.definition import reparse
>>> m = reparse("MODEL (name a.b, kind FULL, cron '@hourly'); SELECT 1 AS x", "registry", "")
>>> again = from_snapshot(to_snapshot(m))
>>> again == m, again.schedule.unit, again.definition == m.definition
(True, <IntervalUnit.HOUR: 'hour'>, True)
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import math
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any

from pyspark_incr.model.definition import Model, reparse

#: Number of the encoding below; bump it when the JSON layout changes.
ENCODING = 1
_PACKAGE = "pyspark_incr"
#: The code that turns a definition into a record: a change there makes old snapshots stale.
_PARSING_CODE = ("model", "intervals")


class SnapshotError(ValueError):
    """A snapshot that cannot be written or must not be used (the definition is parsed instead)."""


def to_snapshot(model: Model) -> str:
    """``model`` as JSON, with the format it was written in; SnapshotError for a value JSON cannot hold."""
    return json.dumps({"format": format_version(), "model": _encode(model)}, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False)


def from_snapshot(text: str) -> Model:
    """The record ``text`` holds; SnapshotError when it is not a snapshot of this exact format."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as e:
        raise SnapshotError(f"not JSON: {e}") from None
    if not isinstance(data, dict) or data.get("format") != format_version():
        raise SnapshotError("written in another format")
    model = _decode(data.get("model"))
    if type(model) is not Model:
        raise SnapshotError("not a model record")
    return model


def snapshot_for(definition: str, source: str, context: str) -> str | None:
    """The snapshot of a stored definition (None when it does not parse or cannot be encoded)."""
    try:
        return to_snapshot(reparse(definition, source, context))
    except Exception:  # noqa: BLE001 - a row without a snapshot is parsed again when read; never fail a write
        return None


@lru_cache(maxsize=8192)
def model_of(snapshot: str | None, definition: str, source: str, context: str) -> Model:
    """The model a state row holds: rebuilt from its snapshot when that is valid, else parsed again."""
    if snapshot:
        try:
            model = from_snapshot(snapshot)
        except SnapshotError:
            model = None
        if model is not None and (model.definition, model.source, model.context) == (definition, source, context):
            return model
    return reparse(definition, source, context)


@lru_cache(maxsize=1)
def format_version() -> str:
    """``<encoding>/<package version>/sqlglot <version>/<digest of the parsing code>``."""
    import sqlglot

    from pyspark_incr.version import __version__

    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for folder in _PARSING_CODE:
        for path in sorted((root / folder).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            try:
                digest.update(path.read_bytes())
            except OSError:  # an install without sources: the versions alone must do
                digest.update(b"?")
    return f"{ENCODING}/{__version__}/sqlglot {sqlglot.__version__}/{digest.hexdigest()[:16]}"


# --------------------------------------------------------------------------- encoding

_PLAIN = (str, int, bool, type(None))


def _encode(value: Any) -> Any:
    """Plain JSON values as they are, tuples as lists, frozen dataclasses and enums as tagged objects."""
    kind = type(value)
    if kind in _PLAIN or (kind is float and math.isfinite(value)):
        return value
    if kind is tuple:
        return [_encode(v) for v in value]
    if isinstance(value, Enum):
        return {"@enum": _path(kind), "value": _encode(value.value)}
    if dataclasses.is_dataclass(value) and kind.__dataclass_params__.frozen:
        return {"@": _path(kind), "fields": {f.name: _encode(getattr(value, f.name)) for f in _fields(kind)}}
    raise SnapshotError(f"a {kind.__name__} cannot be kept in a snapshot")


def _decode(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN or kind is float:
        return value
    if kind is list:
        return tuple(_decode(v) for v in value)
    if kind is dict and set(value) == {"@", "fields"} and type(value["fields"]) is dict:
        return _record(_class(value["@"]), value["fields"])
    if kind is dict and set(value) == {"@enum", "value"}:
        cls = _class(value["@enum"])
        try:
            return cls(_decode(value["value"]))
        except (ValueError, TypeError):
            raise SnapshotError(f"{value['value']!r} is no {cls.__name__}") from None
    raise SnapshotError(f"unexpected {kind.__name__} in a snapshot")


def _record(cls: type, values: dict[str, Any]) -> Any:
    """An instance of dataclass ``cls`` from exactly its fields (a missing or unknown one is an error)."""
    fields = _fields(cls)
    if set(values) != {f.name for f in fields}:
        raise SnapshotError(f"the fields of {cls.__name__} changed")
    decoded = {f.name: _decode(values[f.name]) for f in fields}
    try:
        record = cls(**{f.name: decoded[f.name] for f in fields if f.init})
    except (TypeError, ValueError) as e:
        raise SnapshotError(f"{cls.__name__} cannot be rebuilt: {e}") from None
    for f in fields:
        if not f.init:
            object.__setattr__(record, f.name, decoded[f.name])
    return record


def _path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


@lru_cache(maxsize=None)
def _fields(cls: type) -> tuple[dataclasses.Field, ...]:
    return dataclasses.fields(cls)


def _class(path: Any) -> type:
    """The class at ``module:QualName``: only frozen dataclasses and enums of this package."""
    if type(path) is not str or ":" not in path:
        raise SnapshotError("a class reference must be module:name")
    return _resolve(path)


@lru_cache(maxsize=256)
def _resolve(path: str) -> type:
    module_name, _, qualname = path.partition(":")
    if module_name != _PACKAGE and not module_name.startswith(_PACKAGE + "."):
        raise SnapshotError(f"{path} is not a class of {_PACKAGE}")
    try:
        target: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
    except Exception:  # noqa: BLE001 - no such module or attribute, or a name that is not one
        raise SnapshotError(f"{path} does not exist") from None
    if not isinstance(target, type) or target.__module__ != module_name or target.__qualname__ != qualname:
        raise SnapshotError(f"{path} is not a class defined there")
    frozen = dataclasses.is_dataclass(target) and target.__dataclass_params__.frozen
    if not (frozen or issubclass(target, Enum)):
        raise SnapshotError(f"{path} is neither a frozen dataclass nor an enum")
    return target
