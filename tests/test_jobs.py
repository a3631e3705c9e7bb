"""The scheduled-job templates run for real, and a failed batch makes them exit non-zero.

Four JVMs, one after the other on one embedded home (Derby admits one process at a time):

1. ``pyspark-incr spark-sql -i setup.sql -f sql/jobs/run.sql`` (setup: models applied through 2024-01-02)
   runs 2024-01-03;
2. ``spark-submit sql/jobs/run_job.py`` runs 2024-01-04;
3. ``spark-sql -i check.sql -f sql/jobs/run.sql`` reads the table, then reaches 2024-01-05, where the
   model fails;
4. ``spark-submit sql/jobs/run_job.py`` meets the same failure.

The Python job goes through pyspark's own ``bin/spark-submit``, as on a cluster.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from conftest import call
from pyspark_incr.bridge.jar import shim_jar
from pyspark_incr.bridge.session import embedded_conf

REPO = Path(__file__).resolve().parents[1]
RUN_SQL = REPO / "sql" / "jobs" / "run.sql"
RUN_JOB = REPO / "sql" / "jobs" / "run_job.py"
TIMEOUT = 600

SETUP = """
CREATE DATABASE IF NOT EXISTS jobs_raw;
CREATE TABLE jobs_raw.events USING parquet AS
SELECT id, DATE_ADD(DATE'2024-01-01', CAST(id DIV 4 AS INT)) AS ds FROM range(0, 40);
CALL incr.create_model(definition => 'MODEL (name jobs.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 1),
  start ''2024-01-01'', cron ''@daily'');
  SELECT id, ds, CASE WHEN ds = DATE''2024-01-05'' THEN raise_error(''corrupt input on 2024-01-05'') ELSE ''ok'' END
  AS note FROM jobs_raw.events WHERE ds BETWEEN @start_ds AND @end_ds');
CALL incr.create_model(definition => 'MODEL (name jobs.other, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 1),
  start ''2024-01-01'', cron ''@daily''); SELECT id, ds FROM jobs_raw.events WHERE ds BETWEEN @start_ds AND @end_ds');
CALL incr.apply(execution_time => '2024-01-03 00:00:00');
"""

CHECK = "SELECT 'built' AS probe, CAST(ds AS STRING) AS ds, COUNT(*) AS n FROM jobs.daily GROUP BY ds ORDER BY ds;\n"


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``argv`` in its own process group, killed whole if it outlives the timeout or the test fails."""
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None or _group_alive(proc.pid):
            _kill_group(proc.pid)
            proc.communicate()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except OSError:
        return False


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def job_args(env: str, execution_time: str) -> list[str]:
    """spark-sql's arguments for the template, as examples/airflow/incr_dag.py passes them."""
    return ["-f", str(RUN_SQL), "--hivevar", f"env={env}", "--hivevar", f"execution_time={execution_time}"]


def spark_sql_job(home: Path, *args: str) -> list[str]:
    """The documented spark-sql job command on the embedded ``home``."""
    return [sys.executable, "-m", "pyspark_incr.cli", "--home", str(home), "spark-sql", *args]


def submit_job(home: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """pyspark's ``spark-submit`` running ``sql/jobs/run_job.py`` on the embedded ``home``, and its environment."""
    spark_home = Path(pyspark.__file__).resolve().parent
    env = {**os.environ, "SPARK_HOME": str(spark_home), "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    argv = ["bash", str(spark_home / "bin" / "spark-submit"), "--driver-class-path", str(shim_jar())]
    for key, value in embedded_conf(home).items():
        argv += ["--conf", f"{key}={value}"]
    return [*argv, str(RUN_JOB), *args], env


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """The four job runs, in order, on one home."""
    home = tmp_path_factory.mktemp("jobs_home")
    setup, check = home / "setup.sql", home / "check.sql"
    setup.write_text(SETUP)
    check.write_text(CHECK)
    results = {}
    results["sql_ok"] = _run(spark_sql_job(home, "-i", str(setup), "-f", str(RUN_SQL),
                                           "--hivevar", "execution_time=2024-01-04 00:00:00"))
    results["submit_ok"] = _run(*submit_job(home, "--execution-time", "2024-01-05 00:00:00"))
    results["sql_failed"] = _run(spark_sql_job(home, "-i", str(check), *job_args("prod", "2024-01-07 00:00:00")))
    results["submit_failed"] = _run(*submit_job(home, "--execution-time", "2024-01-07 00:00:00", "--env", "prod"))
    for key, done in results.items():  # kept for a failing test's reader
        (home / f"{key}.stdout").write_text(done.stdout)
        (home / f"{key}.stderr").write_text(done.stderr)
    return results


def _tsv(out: str) -> list[list[str]]:
    return [line.split("\t") for line in out.splitlines() if "\t" in line]


def test_spark_sql_job_exits_zero_and_builds_the_due_day(jobs):
    done = jobs["sql_ok"]

    assert done.returncode == 0, done.stderr[-3000:]
    built = [(r[0], r[3], r[7]) for r in _tsv(done.stdout) if len(r) == 10 and r[0].startswith("jobs.")]
    # the setup's apply printed its rows first (2024-01-01 and 02); the job's run comes last
    assert sorted(built[-2:]) == [("jobs.daily", "2024-01-03 00:00:00", "ok"),
                                  ("jobs.other", "2024-01-03 00:00:00", "ok")]
    assert len(built) == 6 and {b[2] for b in built} == {"ok"}


def test_spark_submit_job_exits_zero_and_prints_the_rows(jobs):
    done = jobs["submit_ok"]

    assert done.returncode == 0, done.stderr[-3000:]
    rows = _tsv(done.stdout)
    assert rows[0][:3] == ["model", "kind", "action"]
    assert sorted((r[0], r[3], r[7]) for r in rows[1:]) == [
        ("jobs.daily", "2024-01-04 00:00:00", "ok"), ("jobs.other", "2024-01-04 00:00:00", "ok")]


def test_the_successful_jobs_built_the_table(jobs):
    built = [r[1:] for r in _tsv(jobs["sql_failed"].stdout) if r[0] == "built"]

    assert built == [["2024-01-01", "4"], ["2024-01-02", "4"], ["2024-01-03", "4"], ["2024-01-04", "4"]]


def test_spark_sql_job_exits_non_zero_naming_the_failed_model(jobs):
    done = jobs["sql_failed"]

    assert done.returncode != 0
    assert "jobs.daily [2024-01-05 00:00:00, 2024-01-06 00:00:00)" in done.stderr
    assert "corrupt input on 2024-01-05" in done.stderr
    assert "incr.history" in done.stderr


def test_spark_submit_job_exits_non_zero_naming_the_failed_model(jobs):
    done = jobs["submit_failed"]

    assert done.returncode == 1, done.stderr[-3000:]
    assert "run_job: model jobs.daily [2024-01-05 00:00:00, 2024-01-06 00:00:00) failed: " \
           "Spark error: [USER_RAISED_EXCEPTION] corrupt input on 2024-01-05" in done.stderr
    assert "run_job:" not in done.stdout, "errors go to stderr, not into spark-submit's stdout"
    # the independent model went on in the spark-sql run; nothing of it is left to do
    assert [r[0] for r in _tsv(done.stdout)[1:]] == ["jobs.daily"]


# --- raise_on_failure in process -------------------------------------------------------------------------------


@pytest.fixture()
def failing(spark, isolated):
    """``bad`` fails on any day holding the corrupt record (id 999); ``good`` is independent of it.

    ``names["corrupt"]()`` adds that record on 2024-01-02.
    """
    raw = f"{isolated}_raw.events"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.range(0, 12).selectExpr("id", "date_add(DATE'2024-01-01', CAST(id DIV 4 AS INT)) AS ds") \
        .write.format("parquet").saveAsTable(raw)
    names = {k: f"{isolated}.{k}" for k in ("bad", "good")}
    for key, column in (("bad", "CASE WHEN id = 999 THEN raise_error('corrupt day') ELSE 1 END"), ("good", "1")):
        call(spark, "create_model", definition=(
            f"MODEL (name {names[key]}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 1), start '2024-01-01', "
            f"cron '@daily'); SELECT id, ds, {column} AS x FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds"))
    names["corrupt"] = lambda: spark.sql(f"INSERT INTO {raw} VALUES (999, DATE'2024-01-02')")
    return names


def _error_of(spark, procedure: str, **args) -> str:
    with pytest.raises(Exception) as caught:
        call(spark, procedure, **args)
    return str(caught.value)


def test_raise_on_failure_fails_the_call_after_recording_the_state(spark, failing):
    failing["corrupt"]()

    message = _error_of(spark, "apply", execution_time="2024-01-04 00:00:00", concurrency=1, raise_on_failure=True)

    assert f"incr.apply in environment prod: 1 step(s) failed (raise_on_failure): model {failing['bad']} " \
           "[2024-01-02 00:00:00, 2024-01-03 00:00:00): " in message
    assert "corrupt day" in message and "incr.history" in message
    history = call(spark, "history", limit=20)
    assert sorted((str(h.start.date()), h.status) for h in history if h.model == failing["bad"]) == [
        ("2024-01-01", "ok"), ("2024-01-02", "failed")]
    assert spark.table(failing["good"]).count() == 13, "independent work finished"


def test_without_raise_on_failure_the_failure_is_a_row(spark, failing):
    failing["corrupt"]()

    rows = call(spark, "apply", execution_time="2024-01-04 00:00:00", concurrency=1)

    assert [r.status for r in rows if r.model == failing["bad"]] == ["ok", "failed"]


def test_the_session_setting_makes_run_raise_and_the_argument_wins(spark, failing):
    call(spark, "apply", execution_time="2024-01-02 00:00:00")
    failing["corrupt"]()
    spark.conf.set("spark.incr.raiseOnFailure", "true")
    try:
        message = _error_of(spark, "run", execution_time="2024-01-04 00:00:00")
        rows = call(spark, "run", execution_time="2024-01-04 00:00:00", raise_on_failure=False)
    finally:
        spark.conf.unset("spark.incr.raiseOnFailure")

    assert "incr.run in environment prod: 1 step(s) failed" in message and failing["bad"] in message
    assert [r.status for r in rows if r.model == failing["bad"]] == ["failed"]


def test_restate_raises_when_a_rebuilt_interval_fails(spark, failing):
    call(spark, "apply", execution_time="2024-01-04 00:00:00")
    failing["corrupt"]()

    message = _error_of(spark, "restate", model=failing["bad"], start="2024-01-01", end="2024-01-03",
                        execution_time="2024-01-04 00:00:00", raise_on_failure=True)

    assert "incr.restate in environment prod: 1 step(s) failed" in message
    assert "[2024-01-02 00:00:00, 2024-01-03 00:00:00): " in message and "corrupt day" in message


def test_a_bad_session_setting_names_itself(spark, failing):
    spark.conf.set("spark.incr.raiseOnFailure", "yes")
    try:
        message = _error_of(spark, "run", execution_time="2024-01-02 00:00:00")
    finally:
        spark.conf.unset("spark.incr.raiseOnFailure")

    assert "spark.incr.raiseOnFailure is 'yes'; set it to true or false" in message
