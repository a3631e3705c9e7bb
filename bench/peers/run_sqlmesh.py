"""SQLMesh with its Spark engine, state in its default local DuckDB state connection.

One SQLMesh project per workload under ``<home>/projects/<workload>``, each with its own DuckDB state
file and its own physical schema (``sqlmesh__<workload>``), so a ``run`` of one workload never sees
another's models and a reset of one leaves the others alone. SQLMesh runs in this process through its
Python API (``Context.plan`` / ``Context.run``) on the SparkSession ``common.session`` made: its Spark
connection asks ``SparkSession.builder.getOrCreate()``, which returns that session (checked in
:meth:`SQLMesh._context`).

What SQLMesh does on Spark (0.236.4, Parquet tables): a plan creates each physical table with an empty
``CREATE TABLE ... AS SELECT ... WHERE FALSE`` and points a view ``bench.<model>`` (what users read) at
it; an INCREMENTAL_BY_TIME_RANGE batch is one ``INSERT OVERWRITE`` with dynamic partition overwrite (its
Spark connection turns that mode on) of the model's query filtered once more to the interval; batches
of one model (d) run up to ``concurrent_tasks`` at a time; an SCD type 2 run copies the whole table to
a temporary table and rewrites the whole table from it and the source (one ``INSERT OVERWRITE``).
Every ``run`` starts with SQLMesh's janitor (expired snapshots and environments), as ``sqlmesh run`` does.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

# no usage reporting over the network from inside a timed step
os.environ.setdefault("SQLMESH__DISABLE_ANONYMIZED_ANALYTICS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    CHAIN_FIRST_SQL, CHAIN_NEXT_SQL, DAILY_SQL, SCD2_COLUMNS, OUTPUTS, SCD2_SQL, START, Tool, chain_name, chain_start,
    day_start, main,
)

WORKLOADS = ("a", "d", "e", "f")
#: SQLMesh's default for a Spark connection: up to 4 model batches evaluated at once on the one session
CONCURRENT_TASKS = 4
#: the properties every model shares (the task's: daily, from day 0, Spark dialect, Parquet tables)
COMMON_PROPERTIES = "  cron '@daily',\n  start '{start}',\n  storage_format parquet,\n  dialect spark"
#: SQLMesh's inclusive interval bounds as ``yyyy-mm-dd`` strings
BOUNDS = {"start": "@start_ds", "end": "@end_ds"}


def model_file(name: str, kind: str, query: str, partitioned: bool = True, start: object = START) -> str:
    """The text of one SQLMesh SQL model file."""
    partition = "  partitioned_by ds,\n" if partitioned else ""
    return f"MODEL (\n  name {name},\n  kind {kind},\n{partition}{COMMON_PROPERTIES.format(start=start)}\n);\n\n{query}\n"


def by_time(batch_size: int | None = None) -> str:
    """An INCREMENTAL_BY_TIME_RANGE kind on ``ds`` (SQLMesh's default batching unless ``batch_size``)."""
    batch = f", batch_size {batch_size}" if batch_size else ""
    return f"INCREMENTAL_BY_TIME_RANGE (time_column ds{batch})"


class SQLMesh(Tool):
    name = "sqlmesh"
    cannot: dict[str, str] = {}

    def __init__(self, spark, spec) -> None:
        super().__init__(spark, spec)
        self.contexts: dict[str, Any] = {}

    @classmethod
    def versions(cls) -> dict[str, str]:
        import sqlmesh

        return {**super().versions(), "sqlmesh": sqlmesh.__version__}

    # ------------------------------------------------------------------ project files

    def setup(self) -> None:
        """Write the four projects (their contexts load lazily: a cold job loads only its own)."""
        from sqlmesh.core.console import NoopConsole, set_console

        set_console(NoopConsole())  # SQLMesh's progress bars and tables would land on stdout
        for workload in WORKLOADS:
            models = self._project(workload) / "models"
            shutil.rmtree(models, ignore_errors=True)
            models.mkdir(parents=True)
            for file_name, text in self._models(workload).items():
                (models / file_name).write_text(text)

    def _project(self, workload: str) -> Path:
        """``workload``'s SQLMesh project directory."""
        return self.home.resolve() / "projects" / workload

    def _state_file(self, workload: str) -> Path:
        """``workload``'s DuckDB state database (one per project: no run sees another's models)."""
        return self.home.resolve() / "state" / f"{workload}.duckdb"

    def _models(self, workload: str) -> dict[str, str]:
        """File name -> model text of ``workload``'s project."""
        if workload in ("a", "d"):
            name = OUTPUTS[workload]
            kind = by_time(1 if workload == "d" else None)
            return {f"{name.split('.')[1]}.sql": model_file(name, kind, DAILY_SQL.format(**BOUNDS))}
        if workload == "e":
            files = {}
            for k in range(1, self.spec.chain + 1):
                query = (CHAIN_FIRST_SQL if k == 1 else CHAIN_NEXT_SQL).format(
                    parent=f"bench.{chain_name(k - 1)}", **BOUNDS)
                files[f"{chain_name(k)}.sql"] = model_file(f"bench.{chain_name(k)}", by_time(), query,
                                                           start=chain_start(self.spec))
            return files
        columns = ", ".join(SCD2_COLUMNS)
        kind = f"SCD_TYPE_2_BY_COLUMN (unique_key item_id, columns [{columns}])"
        return {"items_scd2.sql": model_file(OUTPUTS["f"], kind, SCD2_SQL, partitioned=False)}

    def _config(self, workload: str):
        """The project's config: Spark engine on our session, DuckDB state in its own file."""
        from sqlmesh.core.config import (
            Config, DuckDBConnectionConfig, GatewayConfig, ModelDefaultsConfig, SparkConnectionConfig,
        )

        self._state_file(workload).parent.mkdir(parents=True, exist_ok=True)
        gateway = GatewayConfig(
            connection=SparkConnectionConfig(concurrent_tasks=CONCURRENT_TASKS),
            # as many state threads as Spark ones: what SQLMesh would switch to itself (with a warning)
            state_connection=DuckDBConnectionConfig(database=str(self._state_file(workload)),
                                                    concurrent_tasks=CONCURRENT_TASKS),
        )
        return Config(
            gateways={"spark": gateway},
            default_gateway="spark",
            model_defaults=ModelDefaultsConfig(dialect="spark"),
            # each workload's physical tables in a schema of its own, so reset can drop it whole
            physical_schema_mapping={"^bench$": f"sqlmesh__{workload}"},
            disable_anonymized_analytics=True,
        )

    # ------------------------------------------------------------------ contexts

    def _context(self, workload: str):
        """``workload``'s long-lived Context (loaded on first use)."""
        if workload not in self.contexts:
            from sqlmesh import Context

            context = Context(paths=str(self._project(workload)), config=self._config(workload))
            self._check_session(context)
            self.contexts[workload] = context
        return self.contexts[workload]

    def _check_session(self, context) -> None:
        """SQLMesh must run on the session every contender shares, not one of its own."""
        theirs = context.engine_adapter.spark
        same = theirs._jsparkSession.equals(self.spark._jsparkSession)
        if not same or theirs.conf.get("spark.app.name") != f"bench-{self.name}":
            raise RuntimeError("SQLMesh is not using the benchmark's SparkSession")

    def _close(self, workload: str) -> None:
        """Close ``workload``'s Context, releasing its DuckDB state file (the Spark session stays)."""
        context = self.contexts.pop(workload, None)
        if context is not None:
            context.close()

    # ------------------------------------------------------------------ steps

    def reset(self, workload: str) -> None:
        """Drop the workload's views, its physical schema and its state; then load a fresh Context."""
        self._close(workload)
        for view in self.objects(workload):  # the views of SQLMesh's virtual layer
            self.spark.sql(f"DROP VIEW IF EXISTS {view}")
        self.spark.sql(f"DROP DATABASE IF EXISTS sqlmesh__{workload} CASCADE")
        state = self._state_file(workload)
        for path in (state, state.with_name(state.name + ".wal")):
            path.unlink(missing_ok=True)
        shutil.rmtree(self._project(workload) / ".cache", ignore_errors=True)
        self._context(workload)  # loading the project is setup, not backfill

    keeps_state = True

    def create_state(self, workload: str) -> None:
        """The project's DuckDB state, migrated as its first plan would (Context.state_sync does it)."""
        self._context(workload).state_sync

    def backfill(self, workload: str, days: int) -> None:
        """``sqlmesh plan`` of the new project, auto-applied: creates the tables and fills days [0, days)."""
        self._plan(workload, days)

    def _plan(self, workload: str, days: int) -> None:
        """Plan and apply prod at midnight starting day ``days`` (fills every missing day before it)."""
        # a prod plan takes no start/end: it fills from each model's start (day 0) to the execution time
        self._context(workload).plan(
            execution_time=day_start(days), auto_apply=True, no_prompts=True, skip_tests=True,
        )

    def run(self, workload: str, newest: int) -> None:
        """``sqlmesh run`` at midnight after day ``newest``; f's first run is its first plan."""
        context = self._context(workload)
        if workload == "f" and context.state_reader.get_environment("prod") is None:
            return self._plan(workload, newest + 1)
        status = context.run(execution_time=day_start(newest + 1))
        if status.is_failure:
            raise RuntimeError(f"sqlmesh run of {workload} at {day_start(newest + 1)} failed")


if __name__ == "__main__":
    main(SQLMesh)
