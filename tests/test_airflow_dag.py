"""examples/airflow/incr_dag.py without Airflow installed: it compiles, and runs the tested job command.

Airflow is not installed here (it is large); its two imports are stubbed in ``sys.modules``
to load the DAG file and read its task.
"""

from __future__ import annotations

import importlib.util
import py_compile
import shlex
import sys
import types
from datetime import datetime, timezone
from pathlib import Path

import jinja2
import pytest

from pyspark_incr.intervals.times import to_ms
from test_jobs import job_args

DAG_FILE = Path(__file__).resolve().parents[1] / "examples" / "airflow" / "incr_dag.py"


class _Dag:
    current: "_Dag | None" = None

    def __init__(self, **kwargs):
        self.kwargs, self.tasks = kwargs, []

    def __enter__(self):
        _Dag.current = self
        return self

    def __exit__(self, *exc):
        _Dag.current = None


class _BashOperator:
    def __init__(self, task_id: str, bash_command: str, **kwargs):
        self.task_id, self.bash_command, self.kwargs = task_id, bash_command, kwargs
        _Dag.current.tasks.append(self)


@pytest.fixture()
def dag_module(monkeypatch):
    """The DAG file imported against stub Airflow 2 modules."""
    airflow = types.ModuleType("airflow")
    airflow.DAG = _Dag
    operators = types.ModuleType("airflow.operators")
    bash = types.ModuleType("airflow.operators.bash")
    bash.BashOperator = _BashOperator
    for name, module in (("airflow", airflow), ("airflow.operators", operators), ("airflow.operators.bash", bash)):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.delenv("PYSPARK_INCR_JOBS_DIR", raising=False)
    monkeypatch.setenv("PYSPARK_INCR_HOME", "/srv/incr")
    spec = importlib.util.spec_from_file_location("incr_dag_under_test", DAG_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_dag_file_compiles():
    py_compile.compile(str(DAG_FILE), doraise=True)


def test_the_dag_runs_the_tested_spark_sql_job_daily(dag_module):
    dag = dag_module.dag
    task, = dag.tasks

    assert (task.task_id, dag.kwargs["schedule"], dag.kwargs["catchup"]) == ("incr_run", "0 6 * * *", False)
    argv = shlex.split(task.bash_command)
    assert argv == ["pyspark-incr", "--home", "/srv/incr", "spark-sql", *job_args("prod", dag_module.EXECUTION_TIME)]


def test_the_execution_time_renders_as_incr_run_reads_it(dag_module):
    end = datetime(2024, 1, 9, 6, 0, tzinfo=timezone.utc)

    rendered = jinja2.Template(dag_module.RUN_COMMAND).render(data_interval_end=end)

    assert shlex.split(rendered)[-1] == "execution_time=2024-01-09 06:00:00"
    assert to_ms("2024-01-09 06:00:00") == int(end.timestamp() * 1000)
