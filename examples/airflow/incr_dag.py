"""An Airflow DAG running the pyspark-incr scheduled job: ``sql/jobs/run.sql`` through spark-sql.

Every day at 06:00 UTC, ``CALL incr.run(...)`` builds what is due in ``prod`` as of
the end of the DAG run's data interval, so a retry or a cleared task rebuilds the
same moment. ``run.sql`` calls with ``raise_on_failure``: a failed batch makes
spark-sql exit with code 1, the task fails (naming the model in its log) and
Airflow retries it; a retry builds only what is still missing.

Deploy: pyspark-incr installed where the task runs (the ``pyspark-incr`` command),
and ``run.sql`` reachable: ``$PYSPARK_INCR_JOBS_DIR``, else ``sql/jobs`` of the
checkout this file sits in (outside a checkout, ``pyspark-incr quickstart DIR``
writes ``DIR/sql/jobs``). ``$PYSPARK_INCR_HOME`` is the embedded catalog
directory the CLI uses; on a cluster, replace ``pyspark-incr --home ... spark-sql``
with your ``spark-sql`` and the plugin's ``--conf`` settings (see docs/jobs.md).
"""

from __future__ import annotations

import os
import shlex
from datetime import datetime, timedelta, timezone
from pathlib import Path

try:  # Airflow 3
    from airflow.providers.standard.operators.bash import BashOperator
    from airflow.sdk import DAG
except ImportError:  # Airflow 2
    from airflow import DAG
    from airflow.operators.bash import BashOperator

JOBS_DIR = Path(os.environ.get("PYSPARK_INCR_JOBS_DIR") or Path(__file__).resolve().parents[2] / "sql" / "jobs")
INCR_HOME = os.environ.get("PYSPARK_INCR_HOME", "/var/lib/pyspark-incr")
ENV = "prod"
#: The moment the run builds up to: the end of the DAG run's data interval (UTC), as incr.run reads it.
#: No single quote in it: shlex.join below single-quotes the argument, and Jinja renders inside those quotes.
EXECUTION_TIME = '{{ data_interval_end.strftime("%Y-%m-%d %H:%M:%S") }}'


def spark_sql_job(env: str, execution_time: str) -> list[str]:
    """The job's spark-sql arguments: the template and its variables (an empty one means the default)."""
    return ["-f", str(JOBS_DIR / "run.sql"), "--hivevar", f"env={env}", "--hivevar", f"execution_time={execution_time}"]


#: The shell command of the task (Jinja fills in the execution time).
RUN_COMMAND = shlex.join(["pyspark-incr", "--home", INCR_HOME, "spark-sql", *spark_sql_job(ENV, EXECUTION_TIME)])

with DAG(
    dag_id="pyspark_incr_run",
    description="pyspark-incr: build the due intervals of prod (sql/jobs/run.sql)",
    schedule="0 6 * * *",
    start_date=datetime(2024, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,  # runs lock what they write anyway; one at a time keeps the log readable
    default_args={"retries": 2, "retry_delay": timedelta(minutes=10)},
    tags=["pyspark-incr"],
) as dag:
    run = BashOperator(task_id="incr_run", bash_command=RUN_COMMAND)
