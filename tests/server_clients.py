"""Helpers of the client/server tests: start a server of the embedded default, and what the quickstart must give.

A server runs as ``pyspark-incr --home <tmp> <kind> --port P`` in its own process
group (the JVM and the Python worker it starts), from the repository root (the
quickstart names its project by a path relative to the server's cwd).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from pyspark.sql import functions as F
from sqlglot import exp, parse_one

from pyspark_incr.sqltext import split_statements

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "sql" / "quickstart.sql"
EXECUTION_TIME = "2024-01-09 06:00:00"
#: prod's scheduled job a day after the quickstart's last run: builds 2024-01-09.
NEXT_DAY_RUN = "CALL incr.run(execution_time => '2024-01-10 06:00:00')"
#: dev's apply of the quickstart, made while prod runs NEXT_DAY_RUN.
DEV_APPLY = f"CALL incr.apply(project => 'examples/quickstart', execution_time => '{EXECUTION_TIME}')"
MODELS = ("quickstart.daily_revenue", "quickstart.customer_totals", "quickstart.top_customers")
START_TIMEOUT = 240


@dataclass(frozen=True)
class Server:
    """A running server: where to reach it and where it logs."""

    port: int
    home: Path
    log: Path

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@contextmanager
def running_server(kind: str, home: Path) -> Iterator[Server]:
    """``pyspark-incr --home home kind --port P`` until the block ends; the whole process group is killed then."""
    port = free_port()
    server = Server(port, home, home / "server.log")
    home.mkdir(parents=True, exist_ok=True)
    with open(server.log, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pyspark_incr.cli", "--home", str(home), kind, "--port", str(port)],
            cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        _wait_for_port(proc, server)
        yield server
    finally:
        _kill_group(proc)


def _wait_for_port(proc: subprocess.Popen, server: Server) -> None:
    deadline = time.time() + START_TIMEOUT
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited with {proc.returncode}:\n{server.log_tail()}")
        try:
            with socket.create_connection(("localhost", server.port), timeout=1):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"the server did not listen on {server.port} within {START_TIMEOUT} s:\n{server.log_tail()}")


def _kill_group(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            # the group outlives its leader while the JVM's worker shuts down
            time.sleep(0.5)
        except subprocess.TimeoutExpired:
            continue


def quickstart_statements() -> list[str]:
    """The statements of ``sql/quickstart.sql``, without their comment lines."""
    return [
        "\n".join(line for line in s.splitlines() if not line.strip().startswith("--"))
        for s in split_statements(QUICKSTART.read_text(encoding="utf-8"))
    ]


def calls_of(results: dict[str, Any], procedure: str) -> list[Any]:
    """The results of the statements calling ``procedure``, in order (``results``: statement -> result)."""
    return [rows for statement, rows in results.items() if is_call(statement, procedure)]


def is_call(statement: str, procedure: str) -> bool:
    return statement.startswith(f"CALL incr.{procedure}(")


# --- what the quickstart must give, from its raw data ---------------------------------------


def raw_events(spark: Any) -> Any:
    """The quickstart's raw events, computed in ``spark`` from the script's own generating query."""
    [ctas] = [s for s in quickstart_statements() if s.upper().startswith("CREATE TABLE")]
    return spark.sql(parse_one(ctas, read="spark").expression.sql("spark"))


def expected_daily_revenue(spark: Any) -> Any:
    """daily_revenue after the quickstart: every day before 2024-01-09, per customer."""
    return (raw_events(spark).where(F.col("event_date") < F.lit("2024-01-09").cast("date"))
            .groupBy("event_date", "customer_id").agg(F.count("*").alias("orders"), F.sum("amount").alias("revenue")))


def expected_top_customers(spark: Any) -> Any:
    """top_customers after the quickstart: the five highest revenues over those days."""
    return (raw_events(spark).where(F.col("event_date") < F.lit("2024-01-09").cast("date"))
            .groupBy("customer_id").agg(F.sum("amount").alias("revenue"))
            .orderBy(F.desc("revenue"), "customer_id").limit(5))


def as_frame(spark: Any, rows: list[Any], like: Any) -> Any:
    """``rows`` (as any client returns them: strings, numbers, dates) as a DataFrame typed like ``like``."""
    columns = like.columns
    text = spark.createDataFrame([[None if v is None else str(v) for v in row] for row in rows],
                                 ", ".join(f"`{c}` string" for c in columns))
    return text.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in like.schema.fields])


def quoted(name: str) -> str:
    """``db.t`` as Spark quotes a table name."""
    return exp.to_table(name, dialect="spark").sql("spark", identify=True)


def at_once(server: Server, calls: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Run every call in its own thread, released together; their results by name.

    Fails with the server's log when any call raised.
    """
    results, errors = {}, []
    barrier = threading.Barrier(len(calls))

    def run(name: str, call: Callable[[], Any]) -> None:
        try:
            barrier.wait(30)
            results[name] = call()
        except Exception as e:  # reported below, with the server's log
            errors.append(e)

    threads = [threading.Thread(target=run, args=item) for item in calls.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, f"{errors}\n{server.log_tail()}"
    return results
