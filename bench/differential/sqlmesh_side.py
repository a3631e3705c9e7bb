"""The SQLMesh side of the differential suite; runs in SQLMesh's venv (bench/out/venvs/sqlmesh).

    sqlmesh_side.py <project> <scenario.json> <work dir> <dump.json>

Drives SQLMesh through its Python API, as ``sqlmesh plan --auto-apply`` and ``sqlmesh run`` would, on
a local Spark session this script starts (``side_common.spark_conf``; SQLMesh's Spark connection
picks it up through ``SparkSession.builder.getOrCreate()``), with its state in a DuckDB file under the
work dir. The project's own ``config.yaml`` (model defaults, variables) is loaded as SQLMesh loads it;
only the gateway is replaced.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("SQLMESH__DISABLE_ANONYMIZED_ANALYTICS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from side_common import Side, main_args, play, spark_conf  # noqa: E402


def session(work: Path):
    """The local Spark session SQLMesh's Spark connection will find."""
    from pyspark.sql import SparkSession

    work.mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder
    for key, value in spark_conf(work).items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def quiet_console():
    """SQLMesh's silent console, keeping what it would print about failed models (for the report)."""
    from sqlmesh.core.console import NoopConsole, _format_node_errors

    class Recording(NoopConsole):
        def __init__(self) -> None:
            super().__init__()
            self.failures: list[str] = []

        def log_failed_models(self, errors) -> None:
            for node, message in _format_node_errors(errors).items():
                lines = [line.strip() for line in message.splitlines() if line.strip()]
                self.failures.append(f"{node}: {lines[-1] if lines else 'failed'}")

    return Recording()


class SQLMeshSide(Side):
    def __init__(self, project: Path, work: Path) -> None:
        from sqlmesh.core.console import set_console

        self.project, self.work, self.ctx = project, work, None
        self.console = quiet_console()
        set_console(self.console)

    def load(self) -> None:
        """A Context on the project: Spark engine (one task at a time), DuckDB state in the work dir."""
        from sqlmesh import Context
        from sqlmesh.core.config import Config, DuckDBConnectionConfig, GatewayConfig, SparkConnectionConfig
        from sqlmesh.core.config.loader import load_config_from_paths

        config = load_config_from_paths(Config, project_paths=[self.project / "config.yaml"], personal_paths=[])
        gateway = GatewayConfig(
            connection=SparkConnectionConfig(concurrent_tasks=1),
            state_connection=DuckDBConnectionConfig(database=str(self.work / "state.duckdb"), concurrent_tasks=1),
        )
        config = config.model_copy(update={"gateways": {"spark": gateway}, "default_gateway": "spark",
                                           "disable_anonymized_analytics": True})
        self.ctx = Context(paths=str(self.project), config=config)

    def plan(self, execution_time: str) -> None:
        try:
            self.ctx.plan(execution_time=execution_time, auto_apply=True, no_prompts=True, skip_tests=True)
        except Exception as e:
            raise self._failed(e) from e

    def run(self, execution_time: str) -> None:
        if self.ctx.run(execution_time=execution_time).is_failure:
            raise self._failed(RuntimeError(f"sqlmesh run at {execution_time} failed"))

    def _failed(self, error: Exception) -> Exception:
        """``error``, or the first failed model and its error when SQLMesh reported one."""
        failures, self.console.failures = self.console.failures, []
        return RuntimeError(failures[0]) if failures else error

    def models(self) -> list[str]:
        from sqlglot import exp

        tables = [exp.to_table(m.name) for m in self.ctx.models.values() if not m.kind.is_symbolic]
        return [f"{t.db}.{t.name}".lower() for t in tables]


def main() -> None:
    project, scenario, work, out = main_args(sys.argv[1:])
    sys.stdout = sys.stderr  # SQLMesh's console prints progress: keep it in the side's log
    import sqlmesh

    spark = session(work)
    play(spark, scenario, SQLMeshSide(project, work), out, {"sqlmesh": sqlmesh.__version__, "pyspark": spark.version})


if __name__ == "__main__":
    main()
