"""A PySpark application as a user writes one: SQL statements in order, the rows of each printed as JSON.

    python pyspark_job.py SPEC_JSON

The spec: ``conf`` (the builder's settings, ``spark.master`` among them), ``mode``
(``configure``: ``configure_spark_with_incr(builder)``; ``attach``: a plain session,
then ``pyspark_incr.attach(spark)``, as in a notebook), ``statements``. It imports
nothing but pyspark and pyspark_incr, so it runs in any venv that has the wheel.
The last line of stdout is ``{"rows": [[row, ...], ...], "executors": N}``.

``quickstart_in_pyspark`` (the parent's side) runs it with an installed wheel
(tests/services/install.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def main(spec: dict) -> None:
    from pyspark.sql import SparkSession

    import pyspark_incr

    builder = SparkSession.builder
    for key, value in spec["conf"].items():
        builder = builder.config(key, value)
    if spec["mode"] == "configure":
        spark = pyspark_incr.configure_spark_with_incr(builder).getOrCreate()
    else:
        spark = pyspark_incr.attach(builder.getOrCreate())
    results = [[row.asDict() for row in spark.sql(statement).collect()] for statement in spec["statements"]]
    # executors other than the driver that registered with it (0 in local mode, where the driver runs tasks)
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    spark.stop()
    print(json.dumps({"rows": results, "executors": executors}, default=str))


# --- the parent's side ---------------------------------------------------------------------------


def quickstart_statements(project: str) -> list[str]:
    """sql/quickstart.sql's statements, with the project named by an absolute path."""
    from pyspark_incr.sqltext import split_statements

    text = (REPO / "sql" / "quickstart.sql").read_text(encoding="utf-8")
    return [s.replace("'examples/quickstart'", f"'{project}'") for s in split_statements(text)]


def quickstart_in_pyspark(install, quickstart_dir, home, cwd, master: str, mode: str = "configure",
                          conf: dict[str, str] | None = None, statements: list[str] | None = None) -> dict:
    """Run the quickstart (or ``statements``) in a PySpark application of ``install``; its JSON result.

    Without ``conf`` the application gets a persistent catalog of its own in ``home`` (Hive in Derby).
    """
    settings = {"spark.master": master, "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                **(conf or {})}
    if conf is None:  # a persistent catalog of its own, in ``home``
        settings.update({"spark.sql.catalogImplementation": "hive",
                         "spark.sql.warehouse.dir": str(home / "warehouse"),
                         "spark.hadoop.javax.jdo.option.ConnectionURL":
                             f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
                         "spark.driver.extraJavaOptions": f"-Dderby.system.home={home}"})
    spec = {"conf": settings, "mode": mode,
            "statements": statements or quickstart_statements(str(quickstart_dir / "examples" / "quickstart"))}
    script = Path(cwd) / "pyspark_job.py"  # a copy: nothing runs from the checkout
    script.write_text(Path(__file__).read_text())
    done = install.run([str(install.python), str(script), json.dumps(spec)], cwd=cwd)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
