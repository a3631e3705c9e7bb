"""pyspark-incr, driven the way users drive it: ``CALL incr.apply(...)`` and ``CALL incr.run(...)`` in Spark SQL.

Each workload is a project of its own (``<home>/projects/<workload>/models``) with its own state and
physical schemas (``spark.incr.stateSchema`` / ``spark.incr.physicalSchema``), so a run of one never
looks at another's models.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    CHAIN_FIRST_SQL, CHAIN_NEXT_SQL, DAILY_SQL, SCD2_COLUMNS, SCD2_SQL, START, Tool, chain_name, chain_start,
    day_start, main,
)

TIME_RANGE = "kind INCREMENTAL_BY_TIME_RANGE (time_column ds{extra}), cron '@daily', start '{start}', partitioned_by ds"
SLICE = {"start": "@start_ds", "end": "@end_ds"}


class Incr(Tool):
    name = "incr"

    def __init__(self, spark, spec) -> None:
        super().__init__(spark, spec)
        #: The workload whose schemas the session's settings name now.
        self._using: str | None = None

    @classmethod
    def versions(cls) -> dict[str, str]:
        from importlib.metadata import version

        return {**super().versions(), "pyspark-incr": version("pyspark-incr")}

    def setup(self) -> None:
        for workload, models in self._projects().items():
            folder = self._project(workload) / "models"
            folder.mkdir(parents=True, exist_ok=True)
            for name, text in models.items():
                path = folder / f"{name}.sql"
                if not path.exists() or path.read_text() != text:
                    path.write_text(text)

    def _projects(self) -> dict[str, dict[str, str]]:
        daily = DAILY_SQL.format(**SLICE)
        linked = TIME_RANGE.format(extra="", start=chain_start(self.spec))
        chain = {chain_name(1): _model("bench." + chain_name(1), linked, CHAIN_FIRST_SQL.format(**SLICE))}
        for k in range(2, self.spec.chain + 1):
            query = CHAIN_NEXT_SQL.format(parent="bench." + chain_name(k - 1), **SLICE)
            chain[chain_name(k)] = _model("bench." + chain_name(k), linked, query)
        scd2 = f"kind SCD_TYPE_2_BY_COLUMN (unique_key item_id, columns [{', '.join(SCD2_COLUMNS)}]), cron '@daily'"
        return {
            "a": {"daily": _model("bench.daily", TIME_RANGE.format(extra="", start=START), daily)},
            "d": {"daily_b1": _model("bench.daily_b1", TIME_RANGE.format(extra=", batch_size 1", start=START), daily)},
            "e": chain,
            "f": {"items_scd2": _model("bench.items_scd2", scd2 + ", start '2024-01-01'", SCD2_SQL)},
        }

    def _project(self, workload: str) -> Path:
        return self.home / "projects" / workload

    def _use(self, workload: str) -> None:
        """Point the session at ``workload``'s state and physical schemas, unless it already is.

        A scheduled job sets them once, with its session; setting them again before every call put two
        py4j round trips (1.4 ms after an idle second, 0.4 back to back) into each timed run.
        """
        if self._using == workload:
            return
        self.spark.conf.set("spark.incr.stateSchema", f"incr_state_{workload}")
        self.spark.conf.set("spark.incr.physicalSchema", f"incr_physical_{workload}")
        self._using = workload

    def reset(self, workload: str) -> None:
        for schema in (f"incr_state_{workload}", f"incr_physical_{workload}"):
            self.spark.sql(f"DROP DATABASE IF EXISTS {schema} CASCADE")
        for name in self.objects(workload):
            self.spark.sql(f"DROP VIEW IF EXISTS {name}")

    keeps_state = True

    def create_state(self, workload: str) -> None:
        """The project's state schema and tables, as its first call creates them (any call reading state)."""
        self._use(workload)
        self.spark.sql("CALL incr.environments()").collect()

    def backfill(self, workload: str, days: int) -> None:
        self._use(workload)
        self._call(f"CALL incr.apply(project => '{self._project(workload)}', execution_time => '{_at(days)}')")

    def run(self, workload: str, newest: int) -> None:
        self._use(workload)
        if workload == "f" and not self.spark.catalog.tableExists(self.output("f")):
            return self.backfill("f", newest + 1)  # the first snapshot creates the model
        # As a scheduled job runs it: a failed step fails the statement, so no rows need reading (PySpark's
        # collect of a CALL's rows cost 2-20 ms here, docs/benchmarks.md: up to a no-op run's whole work).
        self.spark.sql(f"CALL incr.run(execution_time => '{_at(newest + 1)}', raise_on_failure => true)")

    def _call(self, sql: str) -> None:
        failed = [r for r in self.spark.sql(sql).collect() if r["status"] == "failed"]
        if failed:
            raise RuntimeError(f"{sql}: {failed[0]['model']}: {failed[0]['message']}")


def _model(name: str, properties: str, query: str) -> str:
    return f"MODEL (name {name}, {properties});\n\n{query}\n"


def _at(k: int) -> str:
    return f"{day_start(k):%Y-%m-%d %H:%M:%S}"


def _with_incr(builder):
    from pyspark_incr import configure_spark_with_incr

    return configure_spark_with_incr(builder)


if __name__ == "__main__":
    main(Incr, _with_incr)
