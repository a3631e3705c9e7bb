"""Fingerprints: a data hash (what the table holds) and a metadata hash (everything else).

A change to the data hash means a new version whose table must be rebuilt; a
metadata-only change keeps the table and its intervals.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from pyspark_incr.model.definition import Model


def data_hash(model: Model) -> str:
    """Hash of what decides the rows: kind and its properties, the normalized query.

    >>> from pyspark_incr.model.definition import parse_model
    >>> a = parse_model("MODEL (name a.b, kind FULL, description 'x'); SELECT 1 AS x")
    >>> b = parse_model("MODEL (name a.b, kind FULL, description 'y'); select   1 as x")
    >>> data_hash(a) == data_hash(b), metadata_hash(a) == metadata_hash(b)
    (True, False)
    >>> t = "MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds{})); SELECT ds FROM x"
    >>> data_hash(parse_model(t.format(""))) == data_hash(parse_model(t.format(", batch_size 7")))
    True
    """
    kind = {k: v for k, v in asdict(model.kind).items() if k not in model.kind.build_fields}
    return _hash({"kind": model.kind.name, "kind_props": kind, "query": model.query})


def metadata_hash(model: Model) -> str:
    """Hash of the properties that change no row: schedule, description, grains, owner, tags, batching."""
    return _hash(
        {
            "build": {k: getattr(model.kind, k) for k in model.kind.build_fields},
            "cron": model.schedule.cron,
            "unit": model.schedule.unit.value,
            "start": model.start_ms,
            "end": model.end_ms,
            "description": model.description,
            "grains": model.grains,
            "owner": model.owner,
            "tags": model.tags,
        }
    )


def _hash(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]
