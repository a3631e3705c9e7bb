"""examples/notebooks/quickstart.ipynb runs in a real Jupyter kernel, and CALL results render as HTML tables.

The kernel is the ``python3`` kernelspec as nbclient resolves it (jupyter_client runs a
``python`` kernelspec with the Python running nbclient: this venv's). The notebook starts
its own JVM on a temporary home passed in through ``PYSPARK_INCR_NOTEBOOK_HOME``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "examples" / "notebooks" / "quickstart.ipynb"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook after a run, plus one cell appended by the test saying which Python the kernel runs."""
    home = tmp_path_factory.mktemp("notebook_home")
    ipython_dir = tmp_path_factory.mktemp("ipython")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import sys\nprint(sys.executable)"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYSPARK_INCR_NOTEBOOK_HOME", str(home))
        patch.setenv("IPYTHONDIR", str(ipython_dir))
        client = NotebookClient(nb, timeout=900, kernel_name="python3",
                                resources={"metadata": {"path": str(NOTEBOOK.parent)}})
        client.execute()
    return nb


def _cell(nb, source_start: str):
    matches = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(source_start)]
    assert len(matches) == 1, f"one cell starting with {source_start!r}"
    return matches[0]


def _html(cell) -> str:
    htmls = [o["data"]["text/html"] for o in cell.outputs if o.get("output_type") == "execute_result"
             and "text/html" in o.get("data", {})]
    assert len(htmls) == 1, cell.outputs
    return htmls[0]


def _table(html: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the one HTML table in ``html``."""
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    header = re.findall(r"<th>(.*?)</th>", rows[0])
    return header, [re.findall(r"<td>(.*?)</td>", r) for r in rows[1:]]


def test_the_kernel_runs_this_venvs_python(executed):
    printed = "".join(o.get("text", "") for o in executed.cells[-1].outputs)

    assert printed.strip() == sys.executable


def test_status_renders_as_an_html_table_with_the_procedures_columns(executed):
    header, rows = _table(_html(_cell(executed, "spark.sql(\"CALL incr.status(")))

    assert header == ["model", "kind", "state", "start", "end", "intervals", "table", "claimed_by", "reason"]
    daily = [r for r in rows if r[0] == "quickstart.daily_revenue"]
    assert [(r[2], r[3], r[4], r[5]) for r in daily] == [("covered", "2024-01-01 00:00:00", "2024-01-09 00:00:00", "8")]


def test_apply_backfills_seven_days_and_the_run_one_more(executed):
    _, applied = _table(_html(_cell(executed, "spark.sql(\"CALL incr.apply(project => '../quickstart', "
                                              "execution_time => '2024-01-08")))
    _, ran = _table(_html(_cell(executed, "spark.sql(\"CALL incr.run(")))

    daily = [r for r in applied if r[0] == "quickstart.daily_revenue"]
    assert len(daily) >= 1 and {r[7] for r in applied} == {"ok"}
    assert sum(int(r[5]) for r in daily) == 7
    assert [(r[3], r[4], r[7]) for r in ran if r[0] == "quickstart.daily_revenue"] == [
        ("2024-01-08 00:00:00", "2024-01-09 00:00:00", "ok")]


def test_other_dataframes_keep_pysparks_display(executed):
    plain = _cell(executed, "spark.table(\"quickstart.top_customers\")")
    shown = _cell(executed, "spark.sql(\"SELECT * FROM quickstart.top_customers\").show()")

    results = [o["data"] for o in plain.outputs if o.get("output_type") == "execute_result"]
    assert [sorted(r) for r in results] == [["text/plain"]]
    assert results[0]["text/plain"].startswith("DataFrame[customer_id: int")
    assert "customer_id" in "".join(o.get("text", "") for o in shown.outputs)


def test_attach_with_env_sends_calls_without_env_to_dev(executed):
    applied = _html(_cell(executed, "pyspark_incr.attach(spark, env=\"dev\")"))
    _, envs = _table(_html(_cell(executed, "spark.sql(\"CALL incr.environments()\")")))

    assert _table(applied)[1] == [] and "(no rows: nothing to do)" in applied, "dev reuses prod's versions"
    assert sorted((r[0], r[1]) for r in envs) == [("dev", "3"), ("prod", "3")]
