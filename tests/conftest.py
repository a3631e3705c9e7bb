"""Shared fixtures: ONE embedded Spark session for the whole test run (a JVM start costs ~5 s).

``incr_home`` is the directory holding its Derby metastore and warehouse; the
session already has the plugin attached, so ``spark.sql("CALL incr.…")`` works.
"""

from __future__ import annotations

import hashlib
import re
from contextlib import contextmanager
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def incr_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("incr_home")


@pytest.fixture(scope="session")
def spark(incr_home: Path):
    from pyspark_incr.bridge.session import embedded_session

    session = embedded_session(incr_home)
    yield session
    session.stop()


@contextmanager
def _isolation(spark, name: str):
    """Point the session at a fresh state schema named after ``name``; restore the conf after."""
    # readable, and unique: parametrized cases share a long common start
    digest = hashlib.sha1(name.encode()).hexdigest()[:6]
    prefix = "t_" + re.sub(r"[^a-z0-9]+", "_", name.lower())[:34].strip("_") + "_" + digest
    keys = {"spark.incr.stateSchema": f"{prefix}_state", "spark.incr.physicalSchema": f"{prefix}_physical"}
    old = {key: spark.conf.get(key, None) for key in keys}
    for key, value in keys.items():
        spark.conf.set(key, value)
    try:
        yield prefix
    finally:
        for key, value in old.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@pytest.fixture()
def isolated(spark, request):
    """A fresh state schema and a unique schema prefix for this test."""
    with _isolation(spark, request.node.name) as prefix:
        yield prefix


@pytest.fixture(scope="module")
def module_isolated(spark, request):
    """A fresh state schema and a unique schema prefix shared by one test module."""
    with _isolation(spark, request.module.__name__.rpartition(".")[2]) as prefix:
        yield prefix


def state_rows(spark, prefix: str) -> dict[str, int]:
    """Row count of every state table of ``prefix`` that records data (empty when the schema does not exist yet).

    The ``locks`` table is left out: it holds who was writing (claims), not what was written.
    """
    if not spark.catalog.databaseExists(f"{prefix}_state"):
        return {}
    return {
        t.name: spark.table(f"{prefix}_state.{t.name}").count()
        for t in spark.catalog.listTables(f"{prefix}_state") if t.name != "locks"
    }


def tables_in(spark, *schemas: str) -> set[str]:
    """Names of the tables and views in ``schemas`` that exist."""
    return {
        f"{s}.{t.name}" for s in schemas if spark.catalog.databaseExists(s) for t in spark.catalog.listTables(s)
    }


def physical(spark, model: str, env: str = "prod") -> str:
    """The physical table (quoted) holding the version of ``model`` that ``env`` shows."""
    from pyspark_incr.state.store import StateStore

    return StateStore(spark).environment(env)[model].table_name


def hold_claim(spark, key: str, owner: str, lease_s: float, work=(), procedure: str = "run") -> None:
    """A claim on ``key`` as a call killed while holding it would have left it (never renewed, never released)."""
    from pyspark_incr.state import claims
    from pyspark_incr.state import tables as t
    from pyspark_incr.state.store import StateStore, table_location

    store = StateStore(spark)
    store.ensure()
    root = claims.root(table_location(spark, store.schema, t.LOCKS.name).toString())
    rec = claims.record(key, owner, procedure, "app-gone", int(lease_s * 1000), work, "prod")
    assert claims.attempt(spark, claims.key_dir(root, key), rec).claim is not None


def call(spark, procedure: str, **args) -> list:
    """``CALL incr.<procedure>(...)`` through Spark SQL, as a user types it; the result rows."""
    from pyspark_incr.sqltext import call_sql

    return spark.sql(call_sql(procedure, **args)).collect()
