"""Errors as Spark users know them: one catalogue of error classes, shown once and without a trace.

The catalogue (``pyspark_incr.errors.CATALOGUE``) and docs/errors.md stay equal; spark-sql prints a
refusal as one line ``[CLASS] message SQLSTATE: X``. beeline and Spark Connect are tried beside their
servers (tests/test_thrift_server.py, tests/test_connect_server.py), PySpark in tests/test_bridge.py.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from pyspark_incr.bridge.session import spark_sql_command
from pyspark_incr.errors import CATALOGUE, IncrError, UnknownModelError

REPO = Path(__file__).resolve().parents[1]
UNKNOWN_MODEL = ("[INCR_UNKNOWN_MODEL] No model matches 'nope.nothing' (argument select). Known models: none. "
                 "SQLSTATE: 42P01")


def test_every_error_class_has_its_own_condition_and_a_five_character_sqlstate():
    conditions = [cls.condition for cls in CATALOGUE]
    assert len(set(conditions)) == len(conditions), conditions
    for cls in CATALOGUE:
        assert re.fullmatch(r"INCR_[A-Z_]+", cls.condition), cls
        assert re.fullmatch(r"[0-9A-Z]{5}", cls.sqlstate), cls


def test_no_error_class_is_defined_outside_the_catalogue():
    import pyspark_incr.procedures as procedures

    procedures.load_all()
    import pyspark_incr.cli, pyspark_incr.coverage_plot, pyspark_incr.plan.safety  # noqa: E401, F401

    found, pending = set(), [IncrError]
    while pending:
        cls = pending.pop()
        found.add(cls)
        pending.extend(cls.__subclasses__())
    assert found == set(CATALOGUE), {c.__qualname__ for c in found - set(CATALOGUE)}


def test_the_errors_page_lists_the_catalogue():
    page = (REPO / "docs" / "errors.md").read_text()
    rows = re.findall(r"^\| `(INCR_[A-Z_]+)` \| `?([0-9A-Z]{5})`? \| `(\w+)` \|", page, flags=re.M)
    assert rows == [(cls.condition, cls.sqlstate, cls.__name__) for cls in CATALOGUE]


def test_python_callers_read_the_class_as_from_a_pyspark_exception():
    error = UnknownModelError("No model matches 'x'.")
    assert (error.getCondition(), error.getSqlState()) == ("INCR_UNKNOWN_MODEL", "42P01")


@pytest.fixture(scope="module")
def spark_sql_refusal(tmp_path_factory):
    """spark-sql -e: a query, then a CALL naming a model that does not exist (one JVM start)."""
    home = tmp_path_factory.mktemp("errors_home")
    argv = spark_sql_command(home, ["-e", "SELECT 42 AS answer; CALL incr.run(select => 'nope.nothing')"])
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)


def test_spark_sql_prints_a_refusal_once_in_one_line_with_its_class_and_sqlstate(spark_sql_refusal):
    done = spark_sql_refusal
    assert done.returncode == 1, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    assert len(lines) <= 10, done.stderr
    assert lines.count(UNKNOWN_MODEL) == 1 and done.stderr.count("nope.nothing") == 1, done.stderr
    assert not [line for line in lines if line.lstrip().startswith("at ") or "Exception" in line], done.stderr


def test_spark_sql_prints_headers_and_no_warnings_from_the_launcher(spark_sql_refusal):
    done = spark_sql_refusal
    assert done.stdout.splitlines()[:2] == ["answer", "42"], done.stdout
    assert not [line for line in done.stderr.splitlines() if " WARN " in line], done.stderr


def _refused_metastore(spark):
    """What Hive's client raises when no metastore listens at its address (one attempt, no delay)."""
    from services.metastore import free_port

    conf = spark._jvm.org.apache.hadoop.hive.conf.HiveConf()
    conf.set("hive.metastore.uris", f"thrift://127.0.0.1:{free_port()}")
    conf.set("hive.metastore.connect.retries", "1")
    conf.set("hive.metastore.client.connect.retry.delay", "0s")
    spark._jvm.org.apache.hadoop.hive.metastore.HiveMetaStoreClient(conf)


def test_a_call_that_cannot_reach_the_metastore_says_so_and_is_not_called_a_bug(spark, monkeypatch):
    import pyspark_incr.bridge.handler as handler

    def dispatch(session, procedure, args):  # the procedure's first catalog read meets a metastore gone
        _refused_metastore(session)

    monkeypatch.setattr(handler, "dispatch", dispatch)
    with pytest.raises(Exception) as info:
        spark.sql("CALL incr.environments()").collect()

    message = str(info.value)
    assert message.startswith("[INCR_METASTORE_UNAVAILABLE] incr.environments cannot reach the Hive metastore: "
                              "Could not connect to meta store"), message
    assert "Connection refused. Check that the metastore service is up" in message
    assert message.rstrip().endswith("SQLSTATE: 08006") and "bug" not in message
    assert (info.value.getCondition(), info.value.getSqlState()) == ("INCR_METASTORE_UNAVAILABLE", "08006")


def test_only_a_metastore_out_of_reach_is_named_so():
    from pyspark_incr.spark_errors import unreachable_metastore

    text = RuntimeError("Unable to instantiate client\nMetaException(message:Could not connect to meta store using "
                        "any of the URIs provided. Most recent failure: TTransportException)\n\tat ...")
    assert unreachable_metastore(text) == ("MetaException(message:Could not connect to meta store using any of "
                                           "the URIs provided. Most recent failure: TTransportException)")
    assert unreachable_metastore(RuntimeError("java.net.ConnectException: Connection refused (a NameNode)")) is None
    assert unreachable_metastore(ValueError("division by zero")) is None
