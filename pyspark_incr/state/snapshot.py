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
import importlib
import json
import math
from enum import Enum
from functools import lru_cache
from typing import Any

from pyspark_incr.model.definition import Model, reparse
from pyspark_incr.safety.judge import Judgement
from pyspark_incr.version import code_digest

#: Number of the encoding below; bump it when the JSON layout changes.
ENCODING = 1
_PACKAGE = "pyspark_incr"
#: The code that turns a definition into a record: a change there makes old snapshots stale.
_PARSING_CODE = ("model", "intervals")


class SnapshotError(ValueError):
    """A snapshot that cannot be written or must not be used (the definition is parsed instead)."""


def to_snapshot(model: Model, judgement: Judgement | None = None) -> str:
    """``model`` as JSON, with the format it was written in and, when given, its safety ``judgement`` (kept
    for a later plan judging it from the same: :func:`pyspark_incr.safety.judge.judge`); SnapshotError for a
    value JSON cannot hold."""
    data = {"format": format_version(), "model": _encode(model)}
    if judgement is not None and judgement.key:
        data["judgement"] = _encode(judgement)
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def from_snapshot(text: str) -> Model:
    """The record ``text`` holds; SnapshotError when it is not a snapshot of this exact format."""
    model = _decode(_data(text).get("model"))
    if type(model) is not Model:
        raise SnapshotError("not a model record")
    return model


def _data(text: str) -> dict:
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as e:
        raise SnapshotError(f"not JSON: {e}") from None
    if not isinstance(data, dict) or data.get("format") != format_version():
        raise SnapshotError("written in another format")
    return data


def snapshot_for(definition: str, source: str, context: str, judgement: Judgement | None = None) -> str | None:
    """The snapshot of a stored definition, with its ``judgement`` when given (None when the definition does
    not parse or cannot be encoded)."""
    try:
        return to_snapshot(reparse(definition, source, context), judgement)
    except Exception:  # noqa: BLE001 - a row without a snapshot is parsed again when read; never fail a write
        return None


#: Sized for the state, not a working set: a plan of N models asks for N of them every call, and a cache
#: smaller than N (8,192 until 2026-12-06) misses every one (a plan of 10,000 models parsed them all each call).
_MODELS = 65536


@lru_cache(maxsize=_MODELS)
def model_of(snapshot: str | None, definition: str, source: str, context: str) -> Model:
    """The model a state row holds: rebuilt from its snapshot when that is valid, else parsed again."""
    return _taken(snapshot, definition, source, context) or reparse(definition, source, context)


def holds(snapshot: str | None, definition: str, source: str, context: str) -> bool:
    """Whether this code takes ``snapshot`` for that definition (False: each process parses it again)."""
    return _taken(snapshot, definition, source, context) is not None


def _taken(snapshot: str | None, definition: str, source: str, context: str) -> Model | None:
    """The snapshot's model when it is valid and of exactly that definition."""
    model = _read(snapshot)[0] if snapshot else None
    if model is not None and (model.definition, model.source, model.context) == (definition, source, context):
        return model
    return None


@lru_cache(maxsize=_MODELS)
def judgement_of(snapshot: str | None) -> Judgement | None:
    """The safety judgement kept with a snapshot; None when it has none, or one that cannot be read (judged again).
    Its key says what it was judged from: the caller takes it only for the same (:func:`~pyspark_incr.safety.
    judge.judge`)."""
    raw = _read(snapshot)[1] if snapshot else None
    try:
        judgement = _decode(raw) if raw is not None else None
    except SnapshotError:
        return None
    return judgement if type(judgement) is Judgement else None


@lru_cache(maxsize=_MODELS)
def _read(snapshot: str) -> tuple[Model | None, Any]:
    """A snapshot's model (None when it is not one of this exact format) and its judgement, still as JSON."""
    try:
        data = _data(snapshot)
        model = _decode(data.get("model"))
    except SnapshotError:
        return None, None
    return (model if type(model) is Model else None), data.get("judgement")


@lru_cache(maxsize=1)
def format_version() -> str:
    """``<encoding>/<package version>/sqlglot <version>/<digest of the parsing code>``."""
    return f"{ENCODING}/{code_digest(*_PARSING_CODE)}"


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


#: What a snapshot holds as JSON has it (a record's fields are mostly these: decoded without a call each).
_AS_IS = frozenset({str, int, bool, type(None), float})


def _decode(value: Any) -> Any:
    kind = type(value)
    if kind in _AS_IS:
        return value
    if kind is list:
        return tuple(v if type(v) in _AS_IS else _decode(v) for v in value)
    if kind is dict and value.keys() == {"@", "fields"} and type(value["fields"]) is dict:
        return _record(_class(value["@"]), value["fields"])
    if kind is dict and value.keys() == {"@enum", "value"}:
        cls = _class(value["@enum"])
        try:
            return cls(_decode(value["value"]))
        except (ValueError, TypeError):
            raise SnapshotError(f"{value['value']!r} is no {cls.__name__}") from None
    raise SnapshotError(f"unexpected {kind.__name__} in a snapshot")


def _record(cls: type, values: dict[str, Any]) -> Any:
    """An instance of dataclass ``cls`` from exactly its fields (a missing or unknown one is an error)."""
    if values.keys() != _names(cls):
        raise SnapshotError(f"the fields of {cls.__name__} changed")
    init, later = _split(cls)
    try:
        record = cls(**{n: v if type(v := values[n]) in _AS_IS else _decode(v) for n in init})
    except (TypeError, ValueError) as e:
        raise SnapshotError(f"{cls.__name__} cannot be rebuilt: {e}") from None
    for name in later:
        object.__setattr__(record, name, _decode(values[name]))
    return record


def _path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


@lru_cache(maxsize=None)
def _fields(cls: type) -> tuple[dataclasses.Field, ...]:
    return dataclasses.fields(cls)


@lru_cache(maxsize=None)
def _names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in _fields(cls))


@lru_cache(maxsize=None)
def _split(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names of ``cls``'s fields its constructor takes, and of those it sets itself (``init=False``)."""
    return tuple(f.name for f in _fields(cls) if f.init), tuple(f.name for f in _fields(cls) if not f.init)


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
