"""The CLI's verbs that hand files to a user: the quickstart to copy, the jar to give Spark."""

from __future__ import annotations

import zipfile

from pyspark_incr import cli, jar_path


def test_quickstart_writes_the_script_the_jobs_and_the_project_in_the_checkouts_layout(tmp_path, capsys):
    assert cli.main(["quickstart", str(tmp_path / "qs")]) == 0

    written = sorted(p.relative_to(tmp_path / "qs").as_posix() for p in (tmp_path / "qs").rglob("*") if p.is_file())
    assert written == ["examples/quickstart/README.md", "examples/quickstart/models/customer_totals.sql",
                       "examples/quickstart/models/daily_revenue.sql", "examples/quickstart/models/top_customers.sql",
                       "sql/jobs/run.sql", "sql/jobs/run_job.py", "sql/quickstart.sql"]
    assert "pyspark-incr spark-sql -f sql/quickstart.sql" in capsys.readouterr().out


def test_quickstart_refuses_a_directory_that_holds_its_files_and_changes_nothing(tmp_path, capsys):
    target = tmp_path / "qs"
    (target / "sql").mkdir(parents=True)
    (target / "sql" / "quickstart.sql").write_text("-- mine")

    assert cli.main(["quickstart", str(target)]) == 2

    assert "already holds sql/quickstart.sql" in capsys.readouterr().err
    assert [p.name for p in target.rglob("*")] == ["sql", "quickstart.sql"]
    assert (target / "sql" / "quickstart.sql").read_text() == "-- mine"


def test_jar_path_prints_a_jar_holding_the_shim(capsys):
    assert cli.main(["jar-path"]) == 0

    printed = capsys.readouterr().out.strip()
    assert printed == jar_path()
    assert "pysparkincr/IncrCatalog.class" in zipfile.ZipFile(printed).namelist()
