"""A Spark application in a process of its own (its own JVM), driven by JSON commands over a pipe.

The parent starts it (``App.start``), sends commands -- ``{"sql": ...}``, ``{"python": ...}`` (run
with ``spark`` in scope; the variable ``result``, if set, comes back), ``{"conf": {...}}`` -- and
reads one answer per command. Answers are lines on a file descriptor of their own, so whatever
Spark prints cannot corrupt them. ``pause``/``resume``/``kill`` act on the whole process group:
the Python driver and the JVM it started, as a GC pause or a crash would.

    python tests/services/app.py CONF_JSON   (the child; the parent passes its answer fd)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class App:
    """The parent's handle on one application process."""

    name: str
    proc: subprocess.Popen
    answers: Any

    @classmethod
    def start(cls, conf: dict[str, str], name: str, workdir: Path, env: dict[str, str] | None = None,
              timeout: float = 180) -> "App":
        """Start the application and wait until its Spark session is up."""
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        read_fd, write_fd = os.pipe()
        log = open(workdir / f"{name}.log", "ab")
        root = Path(__file__).resolve().parents[2]
        child_env = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(
            [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]), "INCR_ANSWER_FD": str(write_fd)}
        proc = subprocess.Popen([sys.executable, __file__, json.dumps({**conf, "spark.app.name": name})],
                                stdin=subprocess.PIPE, stdout=log, stderr=log, env=child_env, cwd=workdir,
                                pass_fds=(write_fd,), start_new_session=True, text=True)
        os.close(write_fd)
        app = cls(name, proc, os.fdopen(read_fd, "r"))
        ready = app.receive(timeout)
        if not ready.get("ok"):
            app.kill()
            raise RuntimeError(f"application {name} did not start: {ready.get('error')} (log: {workdir / name}.log)")
        return app

    def send(self, command: dict) -> None:
        """Send a command without waiting for its answer (several applications may then work at once)."""
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 600) -> dict:
        """The answer to the oldest command not yet answered."""
        import select

        ready, _, _ = select.select([self.answers], [], [], timeout)
        line = self.answers.readline() if ready else ""
        if not line:
            return {"ok": False, "error": f"application {self.name} gave no answer (exit {self.proc.poll()})"}
        return json.loads(line)

    def request(self, command: dict, timeout: float = 600) -> dict:
        self.send(command)
        return self.receive(timeout)

    def sql(self, text: str, timeout: float = 600) -> list[list]:
        """Run ``text``; its rows (lists), or RuntimeError with the application's error."""
        answer = self.request({"sql": text}, timeout)
        if not answer.get("ok"):
            raise RuntimeError(answer.get("error"))
        return answer["rows"]

    def python(self, code: str) -> Any:
        answer = self.request({"python": code})
        if not answer.get("ok"):
            raise RuntimeError(answer.get("error"))
        return answer.get("value")

    def conf(self, values: dict[str, str]) -> None:
        answer = self.request({"conf": values})
        if not answer.get("ok"):
            raise RuntimeError(answer.get("error"))

    def pause(self) -> None:
        """SIGSTOP the whole process group: Python driver and JVM stop mid-step."""
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.proc.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL the whole group and wait until none of its processes is alive."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        deadline = time.monotonic() + 60
        while group_alive(self.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)

    def close(self) -> None:
        """Stop the application: ask it to end, then kill what is left."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(30)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()


def group_alive(pgid: int) -> bool:
    """Whether a non-zombie process of group ``pgid`` exists (zombies may never be reaped in a container)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _child(conf: dict[str, str]) -> None:
    """The application: a session with the plugin, then one answer per command line on stdin."""
    out = os.fdopen(int(os.environ["INCR_ANSWER_FD"]), "w")

    def answer(**values: Any) -> None:
        out.write(json.dumps(values, default=str) + "\n")
        out.flush()

    try:
        from pyspark.sql import SparkSession

        from pyspark_incr.bridge.session import configure_spark_with_incr

        builder = SparkSession.builder
        for key, value in conf.items():
            builder = builder.config(key, value)
        spark = configure_spark_with_incr(builder.enableHiveSupport()).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
    except Exception as e:  # noqa: BLE001 - the parent shows it
        answer(ok=False, error=f"{type(e).__name__}: {e}")
        return
    answer(ok=True, app_id=spark.sparkContext.applicationId)
    for line in sys.stdin:
        command = json.loads(line)
        try:
            if "sql" in command:
                df = spark.sql(command["sql"])
                answer(ok=True, columns=df.columns, rows=[list(r) for r in df.collect()])
            elif "python" in command:
                scope = {"spark": spark}
                exec(command["python"], scope)  # noqa: S102 - the parent is the test harness
                answer(ok=True, value=scope.get("result"))
            elif "conf" in command:
                for key, value in command["conf"].items():
                    spark.conf.set(key, value)
                answer(ok=True)
        except Exception as e:  # noqa: BLE001 - every failure is an answer
            answer(ok=False, error=f"{type(e).__name__}: {str(e)[:2000]}", trace=traceback.format_exc()[-3000:])
    spark.stop()


if __name__ == "__main__":
    _child(json.loads(sys.argv[1]))
