"""The quickstart: sql/quickstart.sql in-process and through pyspark's spark-sql.

The CLI across processes (a second process sees the first one's state and builds one more day) is
the quickstart page's own snippets, run each in a fresh process by tests/test_docs_run.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark_incr.bridge.session import spark_sql_command
from pyspark_incr.sqltext import split_statements
from services.warehouse import read_model

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "sql" / "quickstart.sql"
MODELS = {"daily_revenue": "event_date, customer_id", "customer_totals": "customer_id"}


@pytest.fixture(scope="module")
def in_process(spark):
    """Results of every CALL of the quickstart script, run through spark.sql in this process."""
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        results = {}
        for statement in split_statements(SCRIPT.read_text()):
            rows = spark.sql(statement).collect()
            results.setdefault(" ".join(statement.split()).split(" -- ")[-1], rows)
            results[statement] = rows
        return results
    finally:
        os.chdir(cwd)


def _calls(results: dict, prefix: str) -> list[list]:
    return [rows for statement, rows in results.items() if statement.strip().splitlines()[-1].startswith(prefix)]


def test_quickstart_backfills_then_processes_nothing_then_one_day(in_process):
    apply_rows, = _calls(in_process, "CALL incr.apply(")
    same_time, next_day = _calls(in_process, "CALL incr.run(")

    assert [(r.model, r.intervals, r.status) for r in apply_rows] == [
        ("quickstart.daily_revenue", 7, "ok"),
        ("quickstart.customer_totals", 1, "ok"),
        ("quickstart.top_customers", 0, "ok"),
    ]
    assert same_time == []
    assert [(r.model, r.start.date().isoformat(), r.end.date().isoformat()) for r in next_day] == [
        ("quickstart.daily_revenue", "2024-01-08", "2024-01-09"),
        ("quickstart.customer_totals", "2024-01-07", "2024-01-09"),
    ]


def test_quickstart_tables_hold_the_raw_data_aggregated(spark, in_process):
    expected = spark.sql(
        "SELECT event_date, customer_id, COUNT(*) AS orders, SUM(amount) AS revenue FROM quickstart_raw.events "
        "WHERE event_date < DATE'2024-01-09' GROUP BY event_date, customer_id"
    )
    actual = spark.table("quickstart.daily_revenue").select(*expected.columns)
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


@pytest.fixture(scope="module")
def cli_home(tmp_path_factory):
    """A separate embedded home (Derby admits one process) where spark-sql ran the quickstart script."""
    home = tmp_path_factory.mktemp("spark_sql_home")
    proc = subprocess.run(
        spark_sql_command(home, ["-f", str(SCRIPT)]), cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return home, proc.stdout


def test_spark_sql_cli_runs_the_quickstart_with_the_same_results(spark, in_process, cli_home):
    home, stdout = cli_home
    assert "quickstart.daily_revenue" in stdout
    for table, keys in MODELS.items():
        from_cli = read_model(spark, home / "warehouse", f"quickstart.{table}")
        in_proc = spark.table(f"quickstart.{table}")
        order = [c.strip() for c in keys.split(",")]
        assert_df_equality(
            from_cli.select(*in_proc.columns).orderBy(*order), in_proc.orderBy(*order), ignore_nullable=True
        )
