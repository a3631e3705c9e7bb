"""docs/operations.md's PostgreSQL-backed metastore, as an operator sets it up, shared by racing applications.

Needs a PostgreSQL server and a role that may create databases: ``INCR_TEST_POSTGRES`` (default
``postgresql://incr:incr@127.0.0.1:5432/postgres``; scripts/services.sh installs and starts one
with that role), ``psql``, and the JDBC driver of Debian's libpostgresql-jdbc-java. Skipped, with
the reason, when any of these is missing.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import race  # noqa: E402
from services.metastore import POSTGRES_JAR, Postgres, service_settings  # noqa: E402

DOCS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
SERVER = os.environ.get("INCR_TEST_POSTGRES", "postgresql://incr:incr@127.0.0.1:5432/postgres")


def _unavailable(server) -> str | None:
    if not POSTGRES_JAR.exists():
        return f"no PostgreSQL JDBC driver at {POSTGRES_JAR} (apt-get install libpostgresql-jdbc-java)"
    if shutil.which("psql") is None:
        return "no psql (apt-get install postgresql-client)"
    try:
        socket.create_connection((server.host, server.port), timeout=2).close()
    except OSError as error:
        return f"no PostgreSQL server at {server.host}:{server.port} ({error}); scripts/services.sh starts one"
    return None


def _psql(server, sql: str) -> None:
    env = {**os.environ, "PGPASSWORD": server.password}
    subprocess.run(["psql", "-h", server.host, "-p", str(server.port), "-U", server.user, "-d", server.database,
                    "-v", "ON_ERROR_STOP=1", "-c", sql], env=env, check=True, capture_output=True, timeout=60)


@pytest.fixture
def metastore_database():
    """A new, empty PostgreSQL database for one metastore; dropped afterwards."""
    server = race.postgres(SERVER)
    reason = _unavailable(server)
    if reason:
        pytest.skip(reason)
    name = f"incr_ms_{uuid.uuid4().hex[:10]}"
    _psql(server, f"CREATE DATABASE {name}")
    try:
        yield race.Postgres(server.host, server.port, name, server.user, server.password)
    finally:
        _psql(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.mark.slow
def test_applications_racing_on_a_postgresql_backed_metastore_build_each_interval_once(tmp_path, metastore_database):
    metastore_database.create_schema(tmp_path / "schema")
    lines: list[str] = []

    rounds = [("time_range_shared_partitions", "stall"), ("unique_key", "dropenv")]

    tally = race.trials(rounds, apps=2, seed=5, work=tmp_path, echo=lines.append, database=metastore_database)

    assert sum(n for _, n in tally.values()) == 2
    assert all(passed == total for passed, total in tally.values()), "\n".join(lines)


def _documented(block_start: str) -> str:
    text = DOCS.read_text()
    start = text.index(block_start)
    return text[start:text.index("```", start)]


def test_the_documented_hive_site_is_the_one_the_tested_service_runs_with():
    documented = dict(re.findall(r"<name>([^<]+)</name><value>([^<]*)</value>", _documented("<configuration>")))
    database = Postgres("db-host", 5432, "metastore", "hive", "...")

    assert documented == service_settings(Path("/shared/warehouse"), database)


def test_the_documented_schema_tool_properties_are_the_ones_the_tested_schema_is_made_with():
    block = _documented("javax.jdo.option.ConnectionURL=")
    documented = dict(line.strip().split("=", 1) for line in block.splitlines() if "=" in line and "PROPS" not in line)

    assert documented == Postgres("db-host", 5432, "metastore", "hive", "...").jdo()
