"""Fingerprints: a data hash (what the table holds) and a metadata hash (everything else).

A change to the data hash means a new version whose table must be rebuilt; a
metadata-only change keeps the table and its intervals. Which property goes
where is declared once, in the property tables (:mod:`pyspark_incr.model.properties`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from typing import Any, Mapping

from pyspark_incr.model.definition import MODEL_PROPS, Model
from pyspark_incr.model.kinds import KindBase
from pyspark_incr.model.properties import DATA, METADATA, fields_affecting

_MODEL_DATA = fields_affecting(MODEL_PROPS, DATA)
#: Fields added after hashes were first stored: hashed only when set, so models not using them keep their hash.
_WHEN_SET = ("safety_overrides", "signals",
             "session_properties", "virtual_properties", "on_virtual_update")
_MODEL_METADATA = tuple(f for f in fields_affecting(MODEL_PROPS, METADATA)
                        if f not in ("grain", "grains", "dialect", "ignored_rules", "formatting", *_WHEN_SET))


def data_hash(model: Model, parents: Mapping[str, str] | None = None) -> str:
    """Hash of what decides the rows: the normalized query, kind, data properties and the parents' data hashes.

    >>> from pyspark_incr.model.definition import parse_model
    >>> a = parse_model("MODEL (name a.b, kind FULL, description 'x'); SELECT 1 AS x -- one")
    >>> b = parse_model("MODEL (name a.b, kind FULL, description 'y'); select   1 as x")
    >>> data_hash(a) == data_hash(b), metadata_hash(a) == metadata_hash(b)
    (True, False)
    >>> t = "MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds{})); SELECT ds FROM x"
    >>> data_hash(parse_model(t.format(""))) == data_hash(parse_model(t.format(", batch_size 7")))
    True
    >>> data_hash(a, {"s.p": "1"}) == data_hash(a, {"s.p": "2"})
    False
    """
    kind = model.kind
    payload = {
        "query": model.query,
        "content": model.content_hash,
        "kind": kind.name,
        "kind_props": kind_fields(kind),
        "props": {f: getattr(model, f) for f in _MODEL_DATA},
        "parents": sorted((parents or {}).items()),
    }
    # as SQLMesh: pre/post-statements are data (a SET or a temporary view can change the rows); hashed only when
    # present, so models without them keep their hash
    for name in ("pre_statements", "post_statements"):
        if getattr(model, name):
            payload[name] = [s.fingerprint() for s in getattr(model, name)]
    return _hash(payload)


def kind_fields(kind: KindBase) -> dict[str, Any]:
    """The kind's data fields (not its class attributes, whose reprs hold memory addresses, nor build fields).

    Stable across processes, which a stored fingerprint relies on:

    >>> from pyspark_incr.model.definition import parse_model
    >>> kind_fields(parse_model("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds)); SELECT ds").kind)
    {'time_column': 'ds', 'time_column_format': None}
    """
    build = kind.build_fields()
    return {f.name: v for f in fields(kind) if f.name not in build
            and ((v := getattr(kind, f.name)) is not None or f.name not in kind.hashed_when_set)}


def metadata_hash(model: Model) -> str:
    """Hash of the properties that change no row: schedule, docs, tags, grains, audits, batching.

    The custom audits a model calls count too (their SQL checks rows, it writes none):

    >>> from pyspark_incr.model.audit_defs import AuditDef
    >>> from pyspark_incr.model.definition import parse_model
    >>> text = "MODEL (name a.b, kind FULL, audits (positive(column := x))); SELECT 1 AS x"
    >>> old = parse_model(text, audits=[AuditDef("positive", "SELECT * FROM __incr_macro__this_model WHERE x <= 0")])
    >>> new = parse_model(text, audits=[AuditDef("positive", "SELECT * FROM __incr_macro__this_model WHERE x < 0")])
    >>> data_hash(old) == data_hash(new), metadata_hash(old) == metadata_hash(new)
    (True, False)
    """
    payload = {
        "cron": model.schedule.cron,
        "unit": model.schedule.unit.value,
        "week_start": model.schedule.week_start,
        "grains": model.grains,
        "build": {f: v for f in model.kind.build_fields()
                  if (v := getattr(model.kind, f)) is not None or f not in model.kind.hashed_when_set},
        "props": {f: getattr(model, f) for f in _MODEL_METADATA if f not in ("cron", "interval_unit", "week_start")},
    }
    payload["props"].update({f: v for f in _WHEN_SET if (v := getattr(model, f))})
    if model.on_virtual_update:  # the statements, not where they stand in the file: reformatting changes nothing
        payload["props"]["on_virtual_update"] = [sql for sql, _ in model.on_virtual_update]
    if model.custom_audits:  # only then, so models without them keep the hash they were applied with
        payload["custom_audits"] = [a.fingerprint() for a in model.custom_audits]
    return _hash(payload)


def _hash(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]
