"""pyspark's own Thrift JDBC/ODBC and Spark Connect servers, on the embedded default, with the plugin.

Both are SQL-only JVMs: no Python runs in them until the first ``CALL incr.*``,
when the shim starts the worker (``pyspark_incr.bridge.worker``), which then
serves every client session of the server.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pyspark_incr.bridge.session import plugin_submit_command


@dataclass(frozen=True)
class Server:
    """One server kind: what it serves, its main class, its default port and how its address is given."""

    title: str
    main_class: str
    default_port: int
    address_args: Callable[[str, int], list[str]]


def _thrift_address(host: str, port: int) -> list[str]:
    return ["--hiveconf", f"hive.server2.thrift.bind.host={host}", "--hiveconf", f"hive.server2.thrift.port={port}"]


def _connect_address(host: str, port: int) -> list[str]:
    return ["--conf", f"spark.connect.grpc.binding.address={host}", "--conf", f"spark.connect.grpc.binding.port={port}"]


SERVERS: dict[str, Server] = {
    "thrift-server": Server("Thrift JDBC/ODBC server (beeline, JDBC tools, PyHive)",
                            "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2", 10000, _thrift_address),
    "connect-server": Server("Spark Connect server",
                             "org.apache.spark.sql.connect.service.SparkConnectServer", 15002, _connect_address),
}

#: Only this machine can connect unless told otherwise: the servers run any SQL, unauthenticated.
DEFAULT_HOST = "localhost"


def server_command(kind: str, home: Path | str, port: int | None = None, host: str = DEFAULT_HOST,
                   args: list[str] | None = None) -> list[str]:
    """argv running server ``kind`` (a key of :data:`SERVERS`) in the foreground on the embedded ``home``.

    ``args`` pass through to spark-submit and the server (``--conf k=v``, ``--hiveconf k=v``, ...).
    """
    server = SERVERS[kind]
    address = server.address_args(host, server.default_port if port is None else port)
    return plugin_submit_command(home, server.main_class, [*address, *(args or [])])
