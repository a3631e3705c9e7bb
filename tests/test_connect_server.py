"""``pyspark-incr connect-server``: the quickstart from a Spark Connect client, and two Connect sessions at once.

One server for the module, on its own home. The client sessions are made with
the Connect builder's ``create()``: it leaves this process's classic session
(the ``spark`` fixture) and its mode alone, where ``SparkSession.builder.remote``
would switch the process to Connect.
"""

from __future__ import annotations

import os

import pytest
from chispa import assert_df_equality

from server_clients import (
    DEV_APPLY, EXECUTION_TIME, MODELS, NEXT_DAY_RUN, as_frame, at_once, expected_daily_revenue,
    calls_of, expected_top_customers, quickstart_statements, quoted, running_server,
)

pytest.importorskip("grpc", reason="the Spark Connect client is the 'connect' extra: pip install -e '.[connect]'")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server("connect-server", tmp_path_factory.mktemp("connect_home")) as running:
        yield running


def _connect(server):
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    return RemoteSparkSession.builder.remote(f"sc://localhost:{server.port}").create()


@pytest.fixture(scope="module")
def client(server):
    session = _connect(server)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def results(client):
    """statement -> collected rows of the quickstart, run statement by statement over Spark Connect."""
    return {s: client.sql(s).collect() for s in quickstart_statements()}


def test_connect_client_runs_the_quickstart_and_gets_the_call_results_as_rows(results):
    [plan] = calls_of(results, "plan")
    [apply] = calls_of(results, "apply")
    same_time, next_day = calls_of(results, "run")
    [status] = calls_of(results, "status")

    assert [(r.model, r.change) for r in plan] == [(m, "added") for m in MODELS]
    assert [(r.model, r.intervals, r.status) for r in apply] == [
        ("quickstart.daily_revenue", 7, "ok"), ("quickstart.customer_totals", 1, "ok"),
        ("quickstart.top_customers", 0, "ok"),
    ]
    assert same_time == []
    assert [(r.model, r.start.date().isoformat(), r.end.date().isoformat()) for r in next_day] == [
        ("quickstart.daily_revenue", "2024-01-08", "2024-01-09"),
        ("quickstart.customer_totals", "2024-01-07", "2024-01-09"),
    ]
    assert [(r.model, r.state) for r in status] == list(zip(MODELS, ("covered", "covered", "view")))
    assert "SPARK_CONNECT_MODE_ENABLED" not in os.environ  # the classic session of this process is untouched


def test_connect_quickstart_tables_hold_the_raw_data_aggregated(spark, client, results):
    daily = expected_daily_revenue(spark)
    top = expected_top_customers(spark)
    [top_rows] = [rows for s, rows in results.items() if "top_customers" in s and s.startswith("SELECT")]
    daily_rows = client.sql("SELECT event_date, customer_id, orders, revenue FROM quickstart.daily_revenue").collect()

    assert_df_equality(as_frame(spark, daily_rows, daily), daily, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(as_frame(spark, top_rows, top), top, ignore_nullable=True)


def test_attach_on_a_connect_session_says_to_use_the_connect_server(client):
    from pyspark_incr.bridge.session import attach
    from pyspark_incr.errors import BridgeError

    with pytest.raises(BridgeError, match="pyspark-incr connect-server"):
        attach(client)


def test_two_connect_sessions_call_at_once_and_keep_their_own_settings(server, results):
    """While one session applies the quickstart to ``dev``, the other runs prod a day later."""
    dev, prod = _connect(server), _connect(server)
    try:
        dev.sql("SET spark.incr.defaultEnv=dev").collect()
        found = at_once(server, {"dev": lambda: dev.sql(DEV_APPLY).collect(),
                                 "prod": lambda: prod.sql(NEXT_DAY_RUN).collect()})

        assert found["dev"] == []  # dev takes prod's versions: views swapped, nothing to build
        assert [(r.model, r.start.date().isoformat(), r.status) for r in found["prod"]] == [
            ("quickstart.daily_revenue", "2024-01-09", "ok"), ("quickstart.customer_totals", "2024-01-07", "ok"),
        ]
        assert dev.conf.get("spark.incr.defaultEnv") == "dev"
        assert prod.conf.get("spark.incr.defaultEnv", None) is None
        status = f"CALL incr.status(execution_time => '{EXECUTION_TIME}')"
        assert [r.table for r in dev.sql(status).collect()] == [
            quoted(m.replace("quickstart.", "quickstart__dev.")) for m in MODELS
        ]
        assert [r.table for r in prod.sql(status).collect()] == [quoted(m) for m in MODELS]
    finally:
        dev.stop()
        prod.stop()


def test_a_connect_client_gets_the_refusal_with_its_class_sqlstate_and_no_jvm_frames(client):
    from pyspark.errors import IllegalArgumentException

    with pytest.raises(IllegalArgumentException) as raised:
        client.sql("CALL incr.run(select => 'nope.nothing')").collect()
    error = raised.value
    assert (error.getCondition(), error.getSqlState()) == ("INCR_UNKNOWN_MODEL", "42P01")
    first, *rest = str(error).splitlines()
    assert first.startswith("[INCR_UNKNOWN_MODEL] No model matches 'nope.nothing' (argument select). "), first
    assert first.endswith(" SQLSTATE: 42P01"), first
    assert not [line for line in rest if line.lstrip().startswith("at ")], str(error)
