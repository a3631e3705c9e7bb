"""A Spark standalone cluster -- one master, one worker -- started from pyspark's own ``spark-class``.

The master and the worker are JVMs of their own on 127.0.0.1, and every application
submitted to ``spark://127.0.0.1:PORT`` gets executors the worker launches in further
JVMs, each in its own directory under ``work/`` (its stdout and stderr there say what
it ran). So a test on it has what local mode hides: a driver and executors that share
neither a JVM nor a class loader nor a Python.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pyspark

from services.metastore import free_port

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


@dataclass
class StandaloneCluster:
    """A running master and worker: the URL applications submit to, and the worker's directory."""

    port: int
    ui_port: int
    home: Path
    procs: tuple[subprocess.Popen, ...]

    @classmethod
    def start(cls, home: Path, spark_home: Path | None = None, cores: int = 1, memory: str = "1g",
              timeout: float = 120) -> "StandaloneCluster":
        """Start the master, then one worker with ``cores`` and ``memory``; returns once the worker is ALIVE."""
        home = Path(home).resolve()
        home.mkdir(parents=True, exist_ok=True)
        spark_home = Path(spark_home or Path(pyspark.__file__).parent)
        port, ui_port, worker_ui = free_port(), free_port(), free_port()
        env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_NO_DAEMONIZE": "1", "SPARK_LOG_DIR": str(home / "logs")}
        spark_class = ["bash", str(spark_home / "bin" / "spark-class")]
        master = _launch([*spark_class, MASTER, "--host", "127.0.0.1", "--port", str(port),
                          "--webui-port", str(ui_port)], env, home / "master.log")
        cluster = cls(port, ui_port, home, (master,))
        try:
            cluster._wait(lambda state: True, timeout, "the master did not answer")
            worker = _launch([*spark_class, WORKER, cluster.url, "--host", "127.0.0.1", "--cores", str(cores),
                              "--memory", memory, "--webui-port", str(worker_ui), "--work-dir", str(home / "work")],
                             env, home / "worker.log")
            cluster.procs = (master, worker)
            cluster._wait(lambda state: any(w["state"] == "ALIVE" for w in state["workers"]), timeout,
                          "no worker registered with the master")
        except BaseException:
            cluster.stop()
            raise
        return cluster

    @property
    def url(self) -> str:
        """What ``--master`` takes."""
        return f"spark://127.0.0.1:{self.port}"

    def state(self) -> dict:
        """The master's own account of workers and applications (its web UI's ``/json``)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json", timeout=5) as answer:
            return json.load(answer)

    def executor_logs(self, app_id: str) -> list[Path]:
        """The stderr of every executor the worker launched for ``app_id``."""
        return sorted((self.home / "work" / app_id).glob("*/stderr"))

    def app_ids(self) -> set[str]:
        """Every application the worker launched executors for."""
        work = self.home / "work"
        return {p.name for p in work.iterdir()} if work.is_dir() else set()

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"{what}: a cluster JVM exited ({proc.returncode}); see {self.home}/*.log")
            try:
                if ready(self.state()):
                    return
            except (OSError, ValueError, http.client.HTTPException):
                # A web UI just bound can answer before its pages do: a cut reply, or not yet JSON.
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{what} within {timeout:g} s; see {self.home}/*.log")

    def stop(self) -> None:
        """Stop the worker (and with it its executors), then the master."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def _launch(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
