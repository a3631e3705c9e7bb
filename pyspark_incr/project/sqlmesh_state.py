"""Reading a SQLMesh project's state: each model's physical table and built intervals in one environment.

Read from the file ``sqlmesh state export -o state.json`` writes, SQLMesh's own export format, so
whatever SQLMesh keeps its state in (PostgreSQL, MySQL, DuckDB, ...) the same command gets it here:
pyspark-incr never connects to SQLMesh's state database, and SQLMesh need not be installed where
Spark runs.

A model's physical table is named as SQLMesh names it (``sqlmesh.core.snapshot.definition.table_name``):
``<physical_schema>.<schema>__<table>__<version>`` by default, ``<table>__<version>`` with the
``table_only`` naming convention, ``sqlmesh_md5__<md5 of the default name>`` with ``hash_md5``.
Its intervals are those SQLMesh recorded for the version, minus those pending restatement.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlglot import exp

from pyspark_incr.errors import ArgumentError
from pyspark_incr.intervals.ranges import Interval, IntervalSet


@dataclass(frozen=True)
class SQLMeshTable:
    """One model as a SQLMesh environment holds it: its kind, physical table and built intervals."""

    model: str
    kind: str
    table: str
    intervals: IntervalSet


def read(path: str, env: str = "prod") -> dict[str, SQLMeshTable]:
    """The models SQLMesh environment ``env`` holds, by name (``schema.table``), from an export at ``path``."""
    document = _load(path)
    environments = document.get("environments") or {}
    found = environments.get(env)
    if found is None:
        raise ArgumentError(
            f"adopt_sqlmesh: {path} holds no SQLMesh environment {env!r} (it holds "
            f"{', '.join(sorted(environments)) or 'none'}); export it (sqlmesh state export -o {path}) or pass "
            "sqlmesh_env")
    infos = (found.get("environment") or found).get("snapshots") or []
    snapshots = {(s["name"], _key(s.get("fingerprint"))): s for s in document.get("snapshots") or []}
    held = {}
    for info in infos:  # an environment's entries name the tables; the snapshots hold their intervals
        table = physical_table(info)
        if table is None:
            continue
        snapshot = snapshots.get((info["name"], _key(info.get("fingerprint"))), {})
        name = model_name(info["name"])
        held[name] = SQLMeshTable(name, str(info.get("kind_name") or ""), table, built(snapshot))
    return held


def _load(path: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf8")
    except (OSError, ValueError) as e:  # ValueError: a path no file system holds (a NUL byte)
        why = getattr(e, "strerror", None) or str(e)
        raise ArgumentError(f"adopt_sqlmesh: cannot read SQLMesh's state export {path!r} ({why}); write it "
                            "with `sqlmesh state export -o state.json` in the SQLMesh project and pass its path "
                            "(relative to the Spark driver's working directory)") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as e:
        raise ArgumentError(f"adopt_sqlmesh: {path} is not JSON ({e}); pass the file `sqlmesh state export` "
                            "wrote") from None
    if not isinstance(document, dict) or "snapshots" not in document:
        raise ArgumentError(f"adopt_sqlmesh: {path} is not a SQLMesh state export (no 'snapshots'); pass the file "
                            "`sqlmesh state export` wrote")
    return document


def _key(fingerprint: Any) -> str:
    return json.dumps(fingerprint, sort_keys=True)


def model_name(name: str) -> str:
    """A SQLMesh snapshot name (``"spark_catalog"."shop"."daily"``) as a model name (``shop.daily``).

    >>> model_name('"spark_catalog"."shop"."daily"'), model_name("shop.daily")
    ('shop.daily', 'shop.daily')
    """
    table = exp.to_table(name, dialect="spark")
    return f"{table.db}.{table.name}" if table.db else table.name


def physical_table(snapshot: dict[str, Any]) -> str | None:
    """``schema.table`` of the physical table of an environment's entry (SQLMesh's ``SnapshotTableInfo``), the
    catalog left out (Spark's session catalog); None for kinds without one (external, embedded).

    >>> physical_table({"name": '"c"."shop"."daily"', "version": "21", "physical_schema": "sqlmesh__shop"})
    'sqlmesh__shop.shop__daily__21'
    >>> physical_table({"name": "s.d", "version": "21", "physical_schema": "p",
    ...                 "table_naming_convention": "table_only"})
    'p.d__21'
    >>> physical_table({"name": '"spark_catalog"."shop"."daily"', "version": "21", "physical_schema": "sqlmesh__shop",
    ...                 "table_naming_convention": "hash_md5"})  # as SQLMesh 0.236.4's table_name gives it
    'sqlmesh__shop.sqlmesh_md5__464c84bf59dd5cea9a2607f12ddc3649'
    """
    kind = str(snapshot.get("kind_name") or "").upper()
    if kind in ("EXTERNAL", "EMBEDDED") or not snapshot.get("version"):
        return None
    if str(snapshot.get("virtual_environment_mode") or "").lower() == "dev_only":
        return model_name(snapshot["name"])  # prod tables of dev-only mode are the model's own name
    schema = snapshot.get("physical_schema")
    base = exp.to_table(snapshot.get("base_table_name_override") or snapshot["name"], dialect="spark")
    convention = str(snapshot.get("table_naming_convention") or "schema_and_table").lower()
    parts = [base.db, base.name] if base.db else [base.name]
    full = "__".join(_sanitized(p) for p in parts) + f"__{snapshot['version']}"
    if convention == "table_only":
        full = f"{_sanitized(base.name)}__{snapshot['version']}"
    elif convention == "hash_md5":  # the MD5 of the name schema_and_table would give, catalog included
        catalog = exp.to_table(snapshot["name"], dialect="spark").catalog or None
        named = exp.table_(exp.to_identifier(full), db=exp.to_identifier(schema),
                           catalog=exp.to_identifier(catalog) if catalog else None)
        full = "sqlmesh_md5__" + hashlib.md5(exp.table_name(named).encode("utf-8")).hexdigest()
    elif convention != "schema_and_table":
        raise ArgumentError(f"adopt_sqlmesh: model {model_name(snapshot['name'])} uses SQLMesh's table naming "
                            f"convention {convention}, which this version does not read; adopt its table with "
                            "incr.adopt (`sqlmesh table_name <model>` prints its name)")
    return f"{schema}.{full}"


def _sanitized(part: str) -> str:
    return re.sub(r"[^\w]", "_", part)


def built(snapshot: dict[str, Any]) -> IntervalSet:
    """The intervals SQLMesh recorded built for a snapshot's version, less those pending restatement."""
    found = IntervalSet([Interval(int(s), int(e)) for s, e in snapshot.get("intervals") or []])
    pending = IntervalSet([Interval(int(s), int(e)) for s, e in snapshot.get("pending_restatement_intervals") or []])
    return found - pending
