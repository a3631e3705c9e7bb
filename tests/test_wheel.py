"""The wheel as a user installs it: a prebuilt jar, no compiler needed, the quickstart from any directory.

Each install is a fresh venv outside the checkout with only the wheel (and its
dependencies) in it, run on a PATH that has ``java`` and no ``javac``, no
``JAVA_HOME`` and an empty jar cache (tests/services/install.py). The jar is compiled
against the lowest pyspark pyproject.toml declares; here the quickstart runs on the
newest it allows, and ``bash bench/versions.sh`` runs this module on the lowest too
(``PYSPARK_INCR_TEST_PYSPARK`` pins the install's pyspark).
"""

from __future__ import annotations

import struct
import zipfile

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from services.install import JDK_ONLY
from services.pyspark_job import quickstart_in_pyspark, quickstart_statements
from services.warehouse import read_model

pytestmark = pytest.mark.slow

#: What the quickstart's CALLs print in spark-sql (tab-separated), model by model.
APPLY_ROWS = ["quickstart.daily_revenue\tINCREMENTAL_BY_TIME_RANGE\tbuild\t2024-01-01 00:00:00\t2024-01-08 00:00:00\t7\t49\tok",
              "quickstart.customer_totals\tFULL\tbuild\t2024-01-07 00:00:00\t2024-01-08 00:00:00\t1\t7\tok"]
NEXT_DAY_ROW = "quickstart.daily_revenue\tINCREMENTAL_BY_TIME_RANGE\tbuild\t2024-01-08 00:00:00\t2024-01-09 00:00:00\t1\t7\tok"


def test_the_wheel_carries_a_java_17_jar_and_no_java_sources(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "pyspark_incr/_jvm/pyspark-incr-shim.jar" in names
    assert not [n for n in names if n.endswith(".java")]
    assert {"pyspark_incr/_quickstart/sql/quickstart.sql", "pyspark_incr/_quickstart/sql/jobs/run_job.py",
            "pyspark_incr/_quickstart/examples/quickstart/models/daily_revenue.sql"} <= set(names)
    with zipfile.ZipFile(wheel) as outer, outer.open("pyspark_incr/_jvm/pyspark-incr-shim.jar") as inner:
        jar = zipfile.ZipFile(inner)
        classes = [n for n in jar.namelist() if n.endswith(".class")]
        majors = {struct.unpack(">H", jar.read(n)[6:8])[0] for n in classes}
    assert "pysparkincr/IncrCatalog.class" in classes
    assert majors == {61}  # Java 17 bytecode: runs on every Java Spark 4 supports


def test_the_installed_wheel_runs_the_quickstart_in_spark_sql_without_a_compiler_and_refuses_with_a_class(
        install_of, tmp_path):
    install = install_of(None)
    anywhere = tmp_path / "anywhere"
    anywhere.mkdir()
    assert not [c for c in JDK_ONLY if (install.bin_path / c).exists()]

    wrote = install.run(["pyspark-incr", "quickstart", "qs"], cwd=anywhere)
    assert wrote.returncode == 0, wrote.stderr
    jar = install.run(["pyspark-incr", "jar-path"], cwd=anywhere).stdout.strip()
    assert jar == str(install.venv / "lib" / "python3.11" / "site-packages" / "pyspark_incr" / "_jvm"
                      / "pyspark-incr-shim.jar")
    # The script ends in a refusal: its error class must reach spark-sql on this pyspark too.
    script = anywhere / "qs" / "sql" / "quickstart_then_a_mistake.sql"
    script.write_text((anywhere / "qs" / "sql" / "quickstart.sql").read_text()
                      + "\nCALL incr.run(select => 'nope.nothing');\n")
    done = install.run(["pyspark-incr", "--home", str(tmp_path / "home"), "spark-sql", "-f", str(script)],
                       cwd=anywhere / "qs")

    assert done.returncode == 1, done.stderr[-4000:]
    [refusal] = [line for line in done.stderr.splitlines() if "nope.nothing" in line]
    assert refusal.startswith("[INCR_UNKNOWN_MODEL] No model matches 'nope.nothing'") and refusal.endswith(
        "SQLSTATE: 42P01"), done.stderr[-4000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("quickstart.")]
    for expected in [*APPLY_ROWS, NEXT_DAY_ROW]:
        assert any(line.startswith(expected) for line in lines), (expected, done.stdout)
    assert list(install.cache.rglob("*.jar")) == []  # nothing was compiled: the wheel's jar served


def test_the_installed_wheel_runs_from_pyspark_in_any_directory_with_the_same_tables(spark, install_of, tmp_path):
    install = install_of()
    written = install.run(["pyspark-incr", "quickstart", str(tmp_path / "qs")], cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    statements = [*quickstart_statements(str(tmp_path / "qs" / "examples" / "quickstart")), "DESCRIBE PROCEDURE incr.run"]
    result = quickstart_in_pyspark(install, tmp_path / "qs", tmp_path / "home", elsewhere, master="local[1]",
                                   statements=statements)

    assert result["executors"] == 0
    described = "\n".join(str(v) for row in result["rows"][-1] for v in row.values())
    assert "Procedure:   run" in described
    if tuple(map(int, install.version("pyspark").split(".")[:2])) >= (4, 2):  # 4.1 describes no parameters
        assert "select" in described and "execution_time" in described  # from a jar compiled against 4.1
    apply_rows = result["rows"][3]  # CREATE DATABASE, CREATE TABLE, plan, apply
    assert [(r["model"], r["intervals"], r["status"]) for r in apply_rows] == [
        ("quickstart.daily_revenue", 7, "ok"), ("quickstart.customer_totals", 1, "ok"),
        ("quickstart.top_customers", 0, "ok")]
    warehouse = tmp_path / "home" / "warehouse"
    raw = spark.read.parquet(str(warehouse / "quickstart_raw.db" / "events"))
    expected = (raw.where("event_date < DATE'2024-01-09'").groupBy("event_date", "customer_id")
                .agg(F.count("*").alias("orders"), F.sum("amount").alias("revenue")))
    daily = read_model(spark, warehouse, "quickstart.daily_revenue").select(*expected.columns)
    assert_df_equality(daily, expected, ignore_row_order=True, ignore_nullable=True)
    assert list(install.cache.rglob("*.jar")) == []
