"""incr.adopt and incr.adopt_sqlmesh: existing tables become models' physical tables, without a rebuild."""

from __future__ import annotations

from typing import Any

from pyspark_incr.errors import UnknownModelError
from pyspark_incr.intervals.times import to_end_ms, to_ms
from pyspark_incr.plan.planner import plan_changes, plan_run
from pyspark_incr.plan.sources import desired_models, select_models
from pyspark_incr.procedures.common import ENV, EXECUTION_TIME, PROJECT, WAIT, env_arg, ts, wait_arg, window_arg
from pyspark_incr.procedures.registry import procedure
from pyspark_incr.procedures.spec import Column, Param
from pyspark_incr.project import sqlmesh_state
from pyspark_incr.project.loader import load
from pyspark_incr.run import adopt as adoption
from pyspark_incr.state.store import StateStore

OUTPUT = (
    Column("model", "string", "Model name."),
    Column("kind", "string", "Model kind."),
    Column("table", "string", "The adopted table: now the physical table of the model's version."),
    Column("start", "timestamp", "Start of a range recorded built (UTC, inclusive)."),
    Column("end", "timestamp", "End of that range (UTC, exclusive)."),
    Column("intervals", "bigint", "Number of the model's intervals in the range."),
    Column("view", "string", "The view the environment shows the model in, now reading the table."),
    Column("message", "string", "What was done, and the table the environment held the model in before (if any)."),
)


@procedure(
    "adopt",
    "Make an existing table (built by another tool) the physical table of a model's version in an environment, "
    "in place, and record start..end built: the next run builds only what is missing. The table's format, "
    "partitioning and columns are checked against the model first; on any problem nothing changes.",
    params=(
        Param("model", "string", "The model (from project, the registered models, or the environment).", required=True),
        Param("table", "string", "The existing table, as schema.table.", required=True),
        Param("end", "string", "End of the range the table holds (UTC, ISO, exclusive; a bare date means through "
                               "that day). Must end one of the model's intervals, at most the last complete one due.",
              required=True),
        Param("start", "string", "First moment the table holds the model's rows for (UTC, ISO; default: the "
                                 "model's start). Must start one of the model's intervals."),
        ENV, PROJECT, EXECUTION_TIME, WAIT,
    ),
    output=OUTPUT,
)
def adopt(spark: Any, model: str, table: str, end: str, start: str | None, env: str | None, project: str | None,
          execution_time: str | None, wait: str | None = None) -> list[tuple]:
    request = adoption.Request(model.strip().lower(), adoption.table_arg(table), end_ms=to_end_ms(end, "end"),
                               start_ms=to_ms(start, "start") if start else None)
    planner = _planner(spark, project, env, execution_time, [request.model])
    return _rows(adoption.adopt(spark, planner, [request], "adopt", wait_arg("adopt", wait)))


@procedure(
    "adopt_sqlmesh",
    "Move a SQLMesh project over without rebuilding: every model of the project that a SQLMesh environment "
    "holds gets SQLMesh's physical table adopted (as incr.adopt), with the intervals SQLMesh recorded built. "
    "SQLMesh's state is read from its export file (sqlmesh state export -o state.json).",
    params=(
        Param("state", "string", "The JSON file `sqlmesh state export` wrote, relative to the Spark driver's "
                                 "working directory.", required=True),
        Param("project", "string", "The SQLMesh project directory (its models are loaded as pyspark-incr loads "
                                   "a project).", required=True),
        Param("sqlmesh_env", "string", "The SQLMesh environment whose tables are adopted.", default="prod"),
        Param("select", "string", "Only these models (a selector as for incr.plan); default: all the project's "
                                  "models SQLMesh holds with a table."),
        ENV, EXECUTION_TIME, WAIT,
    ),
    output=OUTPUT,
)
def adopt_sqlmesh(spark: Any, state: str, project: str, sqlmesh_env: str, select: str | None, env: str | None,
                  execution_time: str | None, wait: str | None = None) -> list[tuple]:
    tables = sqlmesh_state.read(state, sqlmesh_env or "prod")
    loaded = load(project)
    models = {m.name: m for m in loaded.models}
    chosen = set(models) if not select else select_models(models, select)
    requests = [adoption.Request(name, adoption.table_arg(found.table, f"SQLMesh's table of {name}"),
                                 intervals=found.intervals)
                for name, found in sorted(tables.items()) if name in chosen and found.intervals]
    if not requests:
        raise UnknownModelError(
            f"adopt_sqlmesh: SQLMesh environment {sqlmesh_env} in {state} holds no built table of a model of "
            f"{project}{' chosen by select' if select else ''} (it holds {', '.join(sorted(tables)) or 'none'}); "
            "check state, project and sqlmesh_env")
    planner = _planner(spark, project, env, execution_time, [r.model for r in requests])
    return _rows(adoption.adopt(spark, planner, requests, "adopt_sqlmesh", wait_arg("adopt_sqlmesh", wait)))


def _planner(spark: Any, project: str | None, env: str | None, execution_time: str | None, names: list[str]) -> Any:
    """A function planning the environment for ``names`` (and what they read), with a fresh read of state."""
    env_name = env_arg(spark, env)
    window = window_arg(None, None, execution_time)

    def make() -> tuple[StateStore, Any]:
        loaded = load(project) if project else None
        store = StateStore(spark, loaded.config.settings.get("state_schema") if loaded else None)
        desired = desired_models(store, loaded)
        if all(n in desired.models for n in names):
            physical = loaded.config.settings.get("physical_schema") if loaded else None
            pattern = ",".join(f"+{n}" for n in names)
            return store, plan_changes(store, desired, env_name, window, pattern, physical)
        held = store.environment(env_name)
        unknown = [n for n in names if n not in held]
        if unknown:
            known = sorted({*desired.models, *held})
            raise UnknownModelError(
                f"adopt: no model named {', '.join(unknown)} in {'project ' + project if project else 'the registry'}"
                f" or environment {env_name} (known: {', '.join(known) or 'none'}); check the name, or pass "
                "project => the project directory")
        return store, plan_run(store, env_name, window, ",".join(names), signals=False)

    return make


def _rows(done: list[adoption.Adopted]) -> list[tuple]:
    rows = []
    for a in done:
        before = f"; the environment held it in {a.previous_table} before" if a.previous_table else ""
        for interval in a.intervals:
            count = a.schedule.unit.count(interval.start, interval.end)
            rows.append((a.model, a.kind, a.table, ts(interval.start), ts(interval.end), count, a.view,
                         f"adopted in place: {interval} recorded built{before}"))
    return rows
