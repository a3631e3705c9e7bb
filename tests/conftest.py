"""Shared fixtures: ONE embedded Spark session for the whole test run (a JVM start costs ~5 s).

``incr_home`` is the directory holding its Derby metastore and warehouse; the
session already has the plugin attached, so ``spark.sql("CALL incr.…")`` works.
"""

from __future__ import annotations

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
