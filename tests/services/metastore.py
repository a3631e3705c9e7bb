"""A Hive Metastore thrift service, started from the jars pyspark ships, shared by separate Spark applications.

Derby runs *inside* the service (embedded Derby admits one process; the service is that one
process), so any number of applications share the catalog through thrift, as they would share a
production metastore.
"""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pyspark

from pyspark_incr.bridge.session import embedded_conf

MAIN = "org.apache.hadoop.hive.metastore.HiveMetaStore"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class MetastoreService:
    """A running service: its port, directory (Derby, warehouse, log) and process."""

    port: int
    home: Path
    proc: subprocess.Popen

    @classmethod
    def start(cls, home: Path, timeout: float = 120) -> "MetastoreService":
        """Start the service on a free port under ``home``; returns once it accepts connections."""
        home = Path(home).resolve()
        home.mkdir(parents=True, exist_ok=True)
        port = free_port()
        settings = {
            # Hive's main would switch log4j to async loggers, whose disruptor jar pyspark does not ship
            "hive.async.log.enabled": "false",
            "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
            "datanucleus.schema.autoCreateAll": "true",
            "hive.metastore.schema.verification": "false",
            "hive.metastore.warehouse.dir": str(home / "warehouse"),
        }
        argv = ["java", "-Xmx512m", f"-Dderby.system.home={home}", "-cp", str(Path(pyspark.__file__).parent / "jars" / "*"),
                MAIN, "-p", str(port)]
        for key, value in settings.items():
            argv += ["-hiveconf", f"{key}={value}"]
        log = open(home / "metastore.log", "ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        service = cls(port, home, proc)
        service._wait(timeout)
        return service

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the metastore service exited ({self.proc.returncode}); see {self.home}/metastore.log")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the metastore service did not listen within {timeout:g} s; see {self.home}/metastore.log")

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def spark_conf(self, warehouse: Path | None = None) -> dict[str, str]:
        """What an application needs to use the service: the embedded default's settings, the metastore
        swapped for this service, one core, and the shared warehouse."""
        conf = {k: v for k, v in embedded_conf(self.home).items()
                if not k.startswith("spark.hadoop.javax.jdo") and k != "spark.driver.extraJavaOptions"}
        conf.update({
            "spark.master": "local[1]",
            "spark.hadoop.hive.metastore.uris": self.uri,
            "spark.sql.warehouse.dir": str(warehouse or self.home / "warehouse"),
            "spark.driver.memory": "768m",
        })
        return conf

    def stop(self) -> None:
        """Stop the service and wait for its JVM to end."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
