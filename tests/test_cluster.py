"""The installed wheel on a real cluster manager: a standalone master and worker, a shared metastore service.

The three ways a platform runs pyspark-incr -- pyspark's ``spark-sql`` with the
SQL-only settings of docs/operations.md, ``spark-submit sql/jobs/run_job.py``, and a
PySpark session made without the plugin then ``attach(spark)`` -- each from the fresh
venv of tests/test_wheel.py (no compiler, nothing of the checkout), one after the
other on one catalog: spark-sql runs the quickstart (through 2024-01-09), then
``sql/jobs/run.sql`` builds 2024-01-09, the job the next day, the attached session
the day after; each run a second time processes nothing (spark-sql's second run
gets the jar with ``--jars`` rather than ``--driver-class-path``). The tables then
equal those of the same sequence in local mode (chispa), and the worker's directory
shows every application's tasks ran in executor JVMs.
"""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from services.pyspark_job import quickstart_in_pyspark, quickstart_statements
from services.warehouse import read_model

pytestmark = pytest.mark.slow

MODELS = {"quickstart.daily_revenue": ["event_date", "customer_id"], "quickstart.customer_totals": ["customer_id"]}
RUN = "CALL incr.run(execution_time => '{}')"
#: The moments spark-sql's run.sql, spark-submit's run_job.py and the attached session each build a day at.
DAYS = ("2024-01-10 06:00:00", "2024-01-11 06:00:00", "2024-01-12 06:00:00")


@pytest.fixture(scope="module")
def deployed(standalone, install_of, tmp_path_factory):
    """The wheel's install, its quickstart files, and the settings every application on the cluster gets."""
    cluster, metastore = standalone
    install = install_of()
    work = tmp_path_factory.mktemp("deployed")
    assert install.run(["pyspark-incr", "quickstart", "qs"], cwd=work).returncode == 0
    jar = install.run(["pyspark-incr", "jar-path"], cwd=work).stdout.strip()
    shared = {**{k: v for k, v in metastore.spark_conf().items() if k != "spark.master"},
              "spark.sql.catalogImplementation": "hive", "spark.ui.enabled": "false",
              "spark.executor.memory": "512m", "spark.cores.max": "1"}
    return install, work / "qs", jar, shared


def _options(settings: dict[str, str]) -> list[str]:
    return [arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")]


def _sql_only(install, jar: str, shared: dict[str, str], name: str, jar_option: str = "--driver-class-path") -> list[str]:
    """spark-submit/spark-sql options of a SQL-only deployment, as docs/operations.md lists them."""
    plugin = {"spark.sql.extensions": "pysparkincr.IncrExtensions", "spark.sql.catalog.incr": "pysparkincr.IncrCatalog",
              "spark.incr.python": str(install.python), "spark.app.name": name}
    return [jar_option, jar, *_options({**shared, **plugin})]


@pytest.fixture(scope="module")
def on_cluster(standalone, deployed):
    """Run the three clients one after the other; what each printed, and the attached session's rows."""
    cluster, _ = standalone
    install, qs, jar, shared = deployed
    spark_sql = [str(install.command("spark-sql")), "--master", cluster.url]
    out = {}

    def run(key, argv):
        done = install.run(argv, cwd=qs)
        assert done.returncode == 0, f"{key}: {done.stderr[-4000:]}"
        out[key] = done.stdout

    run("spark-sql quickstart", [*spark_sql, *_sql_only(install, jar, shared, "incr-spark-sql"), "-f", "sql/quickstart.sql"])
    for key, name, option in (("spark-sql", "incr-spark-sql-run", "--driver-class-path"),
                              ("spark-sql again", "incr-spark-sql-again", "--jars")):
        run(key, [*spark_sql, *_sql_only(install, jar, shared, name, option), "-f", "sql/jobs/run.sql",
                  "--hivevar", f"execution_time={DAYS[0]}"])
    submit = [str(install.command("spark-submit")), "--master", cluster.url]
    for key in ("run_job", "run_job again"):
        run(key, [*submit, "--name", "incr-" + key.replace(" ", "-"), "--driver-class-path", jar, *_options(shared),
                  "sql/jobs/run_job.py", "--execution-time", DAYS[1]])
    attached = quickstart_in_pyspark(install, qs, None, qs, master=cluster.url, mode="attach",
                                     conf={**shared, "spark.app.name": "incr-attach"},
                                     statements=[RUN.format(DAYS[2]), RUN.format(DAYS[2])])
    return out, attached


@pytest.fixture(scope="module")
def local_mode(install_of, deployed, tmp_path_factory):
    """The same sequence in local mode, in one PySpark application of the same install: its warehouse."""
    install, qs, _, _ = deployed
    home = tmp_path_factory.mktemp("local-mode")
    statements = [*quickstart_statements(str(qs / "examples" / "quickstart")), *(RUN.format(day) for day in DAYS)]
    quickstart_in_pyspark(install, qs, home, home, master="local[1]", statements=statements)
    return home / "warehouse"


def _models(stdout: str) -> list[str]:
    return [line.split("\t")[0] for line in stdout.splitlines() if line.startswith("quickstart.")]


def _built(stdout: str) -> list[str]:
    """The start of every daily_revenue interval a client's output says it built (status ok)."""
    rows = [line.split("\t") for line in stdout.splitlines() if line.startswith("quickstart.daily_revenue\t")]
    return [r[3] for r in rows if len(r) > 7 and r[2] == "build" and r[7] == "ok"]


def test_each_client_builds_its_day_on_the_cluster_and_a_second_run_processes_nothing(on_cluster):
    out, attached = on_cluster
    assert _built(out["spark-sql quickstart"]) == ["2024-01-01 00:00:00", "2024-01-08 00:00:00"]  # apply, then run
    assert _built(out["spark-sql"]) == ["2024-01-09 00:00:00"]
    assert _models(out["spark-sql again"]) == []
    assert _built(out["run_job"]) == ["2024-01-10 00:00:00"]
    assert _models(out["run_job again"]) == []
    first, second = attached["rows"]
    assert [(r["model"], r["start"][:10], r["end"][:10], r["status"]) for r in first] == [
        ("quickstart.daily_revenue", "2024-01-11", "2024-01-12", "ok"),
        ("quickstart.customer_totals", "2024-01-07", "2024-01-12", "ok")]
    assert second == []
    assert attached["executors"] >= 1


def test_the_cluster_builds_the_same_tables_as_local_mode(spark, standalone, on_cluster, local_mode):
    _, metastore = standalone
    for model, keys in MODELS.items():
        on_the_cluster = read_model(spark, metastore.home / "warehouse", model)
        locally = read_model(spark, local_mode, model)
        assert_df_equality(on_the_cluster.select(*locally.columns).orderBy(*keys), locally.orderBy(*keys),
                           ignore_nullable=True)
    assert read_model(spark, local_mode, "quickstart.daily_revenue").count() == 7 * 11


def test_every_application_ran_its_tasks_in_executor_jvms_of_the_worker(standalone, on_cluster):
    cluster, _ = standalone
    apps = {app["name"]: app["id"] for app in cluster.state()["completedapps"]}
    assert {"incr-spark-sql-again", "incr-run_job-again"} <= set(apps)
    for name in ("incr-spark-sql", "incr-spark-sql-run", "incr-run_job", "incr-attach"):  # those that built
        assert name in apps, f"{name} never reached the master: {sorted(apps)}"
        logs = cluster.executor_logs(apps[name])
        assert logs, f"the worker launched no executor for {name}"
        assert any("Finished task" in log.read_text(errors="replace") for log in logs), name
