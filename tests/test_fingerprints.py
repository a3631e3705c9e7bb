"""Fingerprints are stored in state and compared by later processes: they must not depend on the process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from pyspark_incr.model.definition import parse_model
from pyspark_incr.model.fingerprint import data_hash, kind_fields, metadata_hash

DEFINITIONS = [
    "MODEL (name a.t, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 3)); SELECT ds FROM raw.e",
    "MODEL (name a.u, kind INCREMENTAL_BY_UNIQUE_KEY (unique_key id)); SELECT id FROM raw.e",
    "MODEL (name a.c, kind INCREMENTAL_BY_CURSOR (cursor_column ts)); SELECT ts FROM raw.e WHERE ts > @last_value",
    "MODEL (name a.s, kind SCD_TYPE_2 (unique_key id)); SELECT id, updated_at FROM raw.e",
    "MODEL (name a.f, kind FULL, safety_overrides (allow_limit)); SELECT 1 AS x",
    "MODEL (name raw.e, kind EXTERNAL (time_column ds))",
]
SCRIPT = """
import json, sys
from pyspark_incr.model.definition import parse_model
from pyspark_incr.model.fingerprint import data_hash, metadata_hash
print(json.dumps([[data_hash(m), metadata_hash(m)] for m in map(parse_model, json.loads(sys.argv[1]))]))
"""


def _hashes() -> list[list[str]]:
    return [[data_hash(m), metadata_hash(m)] for m in map(parse_model, DEFINITIONS)]


def test_fingerprints_are_the_same_in_another_process():
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # another set/dict layout than this process
    out = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(DEFINITIONS)], env=env, capture_output=True,
                         text=True, check=True)

    assert json.loads(out.stdout) == _hashes()


def test_an_unset_time_column_of_an_external_model_is_not_hashed():
    # so EXTERNAL models (and every model reading them) keep their fingerprints from before the property existed
    assert kind_fields(parse_model("MODEL (name raw.e, kind EXTERNAL)").kind) == {}
    assert kind_fields(parse_model("MODEL (name raw.e, kind EXTERNAL (time_column ds))").kind) == {}  # a build field


def test_a_safety_override_changes_the_metadata_hash_only():
    plain = parse_model("MODEL (name a.f, kind FULL); SELECT 1 AS x")
    vouched = parse_model("MODEL (name a.f, kind FULL, safety_overrides (allow_limit)); SELECT 1 AS x")

    assert data_hash(plain) == data_hash(vouched)
    assert metadata_hash(plain) != metadata_hash(vouched)
