"""The pyspark-incr side of the differential suite; runs in our venv (.venv).

    incr_side.py <project> <scenario.json> <work dir> <dump.json>

Drives pyspark-incr as a PySpark user does: an embedded session (``embedded_builder``) on the
work dir with the suite's Spark settings, ``CALL incr.apply(project => ..., execution_time => ...)``
for a plan step and ``CALL incr.run(execution_time => ...)`` for a run step.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from side_common import Side, main_args, play, spark_conf  # noqa: E402


def session(work: Path):
    """The embedded session on ``work``, with the settings the SQLMesh side uses too."""
    from pyspark_incr.bridge.session import embedded_builder

    builder = embedded_builder(work)
    for key, value in spark_conf(work).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class IncrSide(Side):
    def __init__(self, spark, project: Path) -> None:
        self.spark, self.project, self.names = spark, project, []

    def load(self) -> None:
        """The project as pyspark-incr's loader reads it: its buildable models' names."""
        from pyspark_incr.project.loader import load

        self.names = [m.name for m in load(self.project).models if m.kind.builds_object]

    def plan(self, execution_time: str) -> None:
        self._call("apply", project=str(self.project), execution_time=execution_time)

    def run(self, execution_time: str) -> None:
        self._call("run", execution_time=execution_time)

    def models(self) -> list[str]:
        return self.names

    def _call(self, procedure: str, **args: str) -> None:
        from pyspark_incr.sqltext import call_sql

        rows = self.spark.sql(call_sql(procedure, **args)).collect()
        failed = [r for r in rows if r["status"] == "failed"]
        if failed:
            raise RuntimeError(f"incr.{procedure}: {failed[0]['model']}: {failed[0]['message']}")


def main() -> None:
    project, scenario, work, out = main_args(sys.argv[1:])
    from importlib.metadata import version

    spark = session(work)
    versions = {"pyspark-incr": version("pyspark-incr"), "pyspark": spark.version}
    play(spark, scenario, IncrSide(spark, project), out, versions)


if __name__ == "__main__":
    main()
