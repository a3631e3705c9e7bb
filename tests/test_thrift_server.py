"""``pyspark-incr thrift-server``: the quickstart through beeline and PyHive, and two JDBC sessions at once.

One server for the module, on its own home. Each JDBC connection is its own
SparkSession on the server (``spark.sql.hive.thriftServer.singleSession=false``),
and all of them are served by the one Python worker the server starts.
PyHive connects with ``auth='NONE'`` (SASL PLAIN, any user name, no password):
what the server's default ``hive.server2.authentication=NONE`` expects.
"""

from __future__ import annotations

import csv
import re
import subprocess
from pathlib import Path

import pyspark
import pytest
from chispa import assert_df_equality

from server_clients import (
    DEV_APPLY, EXECUTION_TIME, MODELS, NEXT_DAY_RUN, REPO, as_frame, at_once, expected_daily_revenue,
    calls_of, expected_top_customers, quickstart_statements, quoted, running_server,
)

hive = pytest.importorskip("pyhive.hive", reason="PyHive is the 'pyhive' extra: pip install -e '.[pyhive]'")

BEELINE = Path(pyspark.__file__).resolve().parent / "bin" / "beeline"
MARKER = "incr_statement"
DAILY_REVENUE = "SELECT event_date, customer_id, orders, revenue FROM {schema}.daily_revenue"
TOP_CUSTOMERS = "SELECT customer_id, revenue FROM {schema}.top_customers"
#: What a session sets to run the quickstart beside another one on the same server.
PYHIVE_SESSION = {"spark.incr.stateSchema": "pyhive_state", "spark.incr.physicalSchema": "pyhive_physical",
                  "spark.incr.defaultEnv": "pyhive"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server("thrift-server", tmp_path_factory.mktemp("thrift_home")) as running:
        yield running


def _beeline(server, script: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(BEELINE), "-u", f"jdbc:hive2://localhost:{server.port}", "-n", "incr", "--silent=true",
         "--showHeader=true", "--outputformat=csv2", "-f", str(script)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )


@pytest.fixture(scope="module")
def beeline_results(server, tmp_path_factory):
    """statement -> result rows (dicts) of the quickstart run by one beeline ``-f`` (one JVM start).

    After each statement a ``SELECT '<i>' AS incr_statement`` marks where its output ends.
    """
    statements = [*quickstart_statements(), DAILY_REVENUE.format(schema="quickstart")]
    script = tmp_path_factory.mktemp("beeline") / "quickstart.sql"
    script.write_text("".join(f"{s};\nSELECT '{i}' AS {MARKER};\n" for i, s in enumerate(statements)))
    done = _beeline(server, script)
    assert done.returncode == 0, done.stderr[-3000:] + server.log_tail()
    return dict(zip(statements, _sections(done.stdout, len(statements))))


def _sections(stdout: str, count: int) -> list[list[dict]]:
    """The CSV result of each statement: the lines before its marker, a header then rows."""
    sections, current = [], []
    # beeline's --silent mode prints a padded "null" line, then "null" glued to the next header
    lines = iter(re.sub(r"null *\nnull", "", stdout).splitlines())
    for line in lines:
        if line == MARKER:
            assert next(lines) == str(len(sections))
            rows = list(csv.reader(current))
            sections.append([dict(zip(rows[0], r)) for r in rows[1:]] if rows else [])
            current = []
        elif line.strip():
            current.append(line)
    assert len(sections) == count, stdout[-3000:]
    return sections


def test_beeline_runs_the_quickstart_and_gets_the_call_results_as_rows(beeline_results):
    [plan] = calls_of(beeline_results, "plan")
    [apply] = calls_of(beeline_results, "apply")
    same_time, next_day = calls_of(beeline_results, "run")
    [status] = calls_of(beeline_results, "status")

    assert [(r["model"], r["change"]) for r in plan] == [(m, "added") for m in MODELS]
    assert [(r["model"], r["intervals"], r["status"]) for r in apply] == [
        ("quickstart.daily_revenue", "7", "ok"), ("quickstart.customer_totals", "1", "ok"),
        ("quickstart.top_customers", "0", "ok"),
    ]
    assert same_time == []
    assert [(r["model"], r["start"][:10], r["end"][:10], r["status"]) for r in next_day] == [
        ("quickstart.daily_revenue", "2024-01-08", "2024-01-09", "ok"),
        ("quickstart.customer_totals", "2024-01-07", "2024-01-09", "ok"),
    ]
    assert [(r["model"], r["state"]) for r in status] == list(zip(MODELS, ("covered", "covered", "view")))


def test_beeline_quickstart_tables_hold_the_raw_data_aggregated(spark, beeline_results):
    daily = expected_daily_revenue(spark)
    top = expected_top_customers(spark)
    [top_rows] = [rows for s, rows in beeline_results.items() if "top_customers" in s and s.startswith("SELECT")]
    daily_rows = beeline_results[DAILY_REVENUE.format(schema="quickstart")]

    assert_df_equality(as_frame(spark, [list(r.values()) for r in daily_rows], daily), daily,
                       ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(as_frame(spark, [list(r.values()) for r in top_rows], top), top, ignore_nullable=True)


@pytest.fixture(scope="module")
def pyhive_results(server):
    """statement -> rows of the quickstart over PyHive, in a session set to its own state, tables and env."""
    connection = hive.connect("localhost", server.port, username="incr", auth="NONE")
    try:
        cursor = connection.cursor()
        for key, value in PYHIVE_SESSION.items():
            cursor.execute(f"SET {key}={value}")
        results = {}
        env_schema = "quickstart__" + PYHIVE_SESSION["spark.incr.defaultEnv"]
        statements = [*quickstart_statements(), DAILY_REVENUE.format(schema=env_schema),
                      TOP_CUSTOMERS.format(schema=env_schema)]
        for statement in statements:
            cursor.execute(statement)
            results[statement] = cursor.fetchall() if cursor.description else []
        return results
    finally:
        connection.close()


def test_pyhive_runs_the_quickstart_and_gets_the_call_results_as_rows(pyhive_results):
    [apply] = calls_of(pyhive_results, "apply")
    same_time, next_day = calls_of(pyhive_results, "run")

    # apply: model, kind, action, start, end, intervals, rows, status, ...
    assert [(r[0], r[5], r[7]) for r in apply] == [
        ("quickstart.daily_revenue", 7, "ok"), ("quickstart.customer_totals", 1, "ok"),
        ("quickstart.top_customers", 0, "ok"),
    ]
    assert same_time == []
    assert [(r[0], str(r[3])[:10], str(r[4])[:10]) for r in next_day] == [
        ("quickstart.daily_revenue", "2024-01-08", "2024-01-09"),
        ("quickstart.customer_totals", "2024-01-07", "2024-01-09"),
    ]


def test_pyhive_quickstart_tables_hold_the_raw_data_aggregated(spark, pyhive_results):
    daily = expected_daily_revenue(spark)
    top = expected_top_customers(spark)
    env_schema = "quickstart__" + PYHIVE_SESSION["spark.incr.defaultEnv"]

    assert_df_equality(as_frame(spark, pyhive_results[DAILY_REVENUE.format(schema=env_schema)], daily), daily,
                       ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(as_frame(spark, pyhive_results[TOP_CUSTOMERS.format(schema=env_schema)], top), top,
                       ignore_nullable=True)


def _query(cursor, statement: str) -> list[tuple]:
    cursor.execute(statement)
    return cursor.fetchall() if cursor.description else []


def test_two_jdbc_sessions_call_at_once_and_keep_their_own_settings(server, beeline_results):
    """While one session applies the quickstart to ``dev``, the other runs prod a day later."""
    connections = [hive.connect("localhost", server.port, username=u, auth="NONE") for u in ("alice", "bob")]
    try:
        dev, prod = (c.cursor() for c in connections)
        _query(dev, "SET spark.incr.defaultEnv=dev")
        results = at_once(server, {"dev": lambda: _query(dev, DEV_APPLY), "prod": lambda: _query(prod, NEXT_DAY_RUN)})

        assert results["dev"] == []  # dev takes prod's versions: views swapped, nothing to build
        assert [(r[0], str(r[3])[:10], r[7]) for r in results["prod"]] == [
            ("quickstart.daily_revenue", "2024-01-09", "ok"), ("quickstart.customer_totals", "2024-01-07", "ok"),
        ]
        assert _query(dev, "SET spark.incr.defaultEnv") == [("spark.incr.defaultEnv", "dev")]
        assert _query(prod, "SET spark.incr.defaultEnv") == [("spark.incr.defaultEnv", "<undefined>")]
        # status: model, kind, state, start, end, intervals, table (the environment's view)
        status = f"CALL incr.status(execution_time => '{EXECUTION_TIME}')"
        assert [r[6] for r in _query(dev, status)] == [
            quoted(m.replace("quickstart.", "quickstart__dev.")) for m in MODELS
        ]
        assert [r[6] for r in _query(prod, status)] == [quoted(m) for m in MODELS]
    finally:
        for c in connections:
            c.close()


def test_beeline_shows_a_refusal_in_one_line_with_its_class_and_sqlstate(server):
    done = subprocess.run(
        ["bash", str(BEELINE), "-u", f"jdbc:hive2://localhost:{server.port}", "-n", "incr",
         "-e", "CALL incr.run(select => 'nope.nothing')"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    output = (done.stdout + done.stderr).splitlines()
    assert done.returncode != 0 and len(output) <= 10, "\n".join(output)
    [error] = [line for line in output if "nope.nothing" in line]
    assert error.startswith("Error: [INCR_UNKNOWN_MODEL] No model matches 'nope.nothing' (argument select). "), error
    assert error.endswith(" SQLSTATE: 42P01 (state=42P01,code=0)"), error
    assert error.count("INCR_UNKNOWN_MODEL") == 1 and not [line for line in output if line.lstrip().startswith("at ")]
