"""The CLI's procedure verbs: their options are the procedures' parameters, and each prints its CALL's rows."""

from __future__ import annotations

import re

import pytest

from conftest import call
from pyspark_incr import cli
from pyspark_incr.cli_args import STATUS_PARAMS, VERBS, procedure_specs

T = "2024-01-04 00:00:00"


class _Recorder:
    """A stand-in session: records each statement, answers with no rows."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def sql(self, statement: str) -> "_Recorder":
        self.statements.append(statement)
        return self

    columns: list[str] = []

    def collect(self) -> list:
        return []


def _subparser(verb: str):
    return cli._parser()._subparsers._group_actions[0].choices[verb]


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_each_verb_takes_exactly_the_parameters_of_its_procedure(verb):
    spec = procedure_specs()[VERBS[verb]]
    actions = [a for a in _subparser(verb)._actions if a.dest != "help"]
    wanted = {p.name for p in spec.params if verb != "status" or p.name in STATUS_PARAMS}

    assert {a.dest for a in actions} - ({"png", "json", "table", "color"} - wanted) == wanted
    for param in spec.params:
        action = next((a for a in actions if a.dest == param.name), None)
        if action is None:
            continue
        flag = "--" + param.name.replace("_", "-")
        if param.required:
            assert action.option_strings == [], f"{verb}: required {param.name} is positional"
        elif param.type == "boolean":
            assert action.option_strings == [flag, "--no-" + flag[2:]]
        else:
            assert action.option_strings == [flag]


@pytest.mark.parametrize("argv, statement", [
    (["plan", "--env", "dev", "--select", "shop.*", "--start", "2024-01-01", "--end", "2024-01-02",
      "--execution-time", T, "--per-partition", "--allow-downgrade"],
     "CALL incr.plan(env => 'dev', select => 'shop.*', start => '2024-01-01', end => '2024-01-02', "
     f"execution_time => '{T}', per_partition => TRUE, allow_downgrade => TRUE)"),
    (["run", "--ignore-cron", "--concurrency", "3", "--no-fail-fast"],
     "CALL incr.run(ignore_cron => TRUE, concurrency => 3, fail_fast => FALSE)"),
    (["restate", "shop.*", "--start", "2024-01-01", "--raise-on-failure"],
     "CALL incr.restate(model => 'shop.*', start => '2024-01-01', raise_on_failure => TRUE)"),
    (["render", "--model", "shop.daily", "--start", "2024-01-02"],
     "CALL incr.render(model => 'shop.daily', start => '2024-01-02')"),
    (["history", "--model", "shop.daily", "--limit", "5"], "CALL incr.history(model => 'shop.daily', limit => 5)"),
    (["audit", "shop.daily", "--end", "2024-01-03"], "CALL incr.audit(model => 'shop.daily', end => '2024-01-03')"),
    (["janitor", "--older-than", "0 days", "--no-dry-run"],
     "CALL incr.janitor(older_than => '0 days', dry_run => FALSE)"),
    (["environments"], "CALL incr.environments()"),
])
def test_a_verb_makes_the_call_its_options_say_and_nothing_more(monkeypatch, argv, statement):
    session = _Recorder()
    monkeypatch.setattr(cli, "_session", lambda args: session)

    assert cli.main(argv) == 0

    assert session.statements == [statement]


def test_a_project_is_passed_as_an_absolute_path(monkeypatch, tmp_path):
    session = _Recorder()
    monkeypatch.setattr(cli, "_session", lambda args: session)
    monkeypatch.chdir(tmp_path)

    assert cli.main(["apply", "--project", "proj", "--concurrency", "1"]) == 0

    assert session.statements == [f"CALL incr.apply(project => '{tmp_path / 'proj'}', concurrency => 1)"]


def test_a_required_parameter_left_out_is_refused_before_spark_starts(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_session", lambda args: pytest.fail("Spark started for a call missing its model"))

    with pytest.raises(SystemExit) as exited:
        cli.main(["audit"])

    assert exited.value.code == 2
    assert "the following arguments are required: MODEL" in capsys.readouterr().err


# --- through Spark ----------------------------------------------------------------------------------------------


@pytest.fixture()
def applied(spark, isolated):
    """One daily model over three days of sales, applied to prod at ``T``; its name."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"""CREATE TABLE {isolated}_raw.sales USING parquet AS SELECT * FROM VALUES
        (DATE'2024-01-01', 10), (DATE'2024-01-02', 20), (DATE'2024-01-03', 30) AS t(ds, amount)""")
    name = f"{isolated}.daily"
    call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
        f"audits (not_null(columns := (amount)))); "
        f"SELECT ds, amount FROM {isolated}_raw.sales WHERE ds BETWEEN @start_ds AND @end_ds"))
    call(spark, "apply", execution_time=T)
    return name


def _shown(monkeypatch, spark, argv: list[str]) -> tuple[str, list]:
    """Run the CLI on ``spark``; the title and rows it printed."""
    printed = []
    monkeypatch.setattr(cli, "_session", lambda args: spark)
    monkeypatch.setattr(cli, "_show", lambda title, df, color=None: printed.append((title, df.collect())) or 0)
    assert cli.main(argv) == 0
    [(title, rows)] = printed
    return title, rows


def test_read_only_verbs_print_the_rows_of_their_call(spark, applied, monkeypatch):
    cases = [(["history", "--model", applied], "history", {"model": applied}),
             (["environments"], "environments", {}),
             (["render", "--model", applied, "--execution-time", T], "render", {"model": applied, "execution_time": T}),
             (["audit", applied, "--start", "2024-01-02", "--end", "2024-01-02"], "audit",
              {"model": applied, "start": "2024-01-02", "end": "2024-01-02"}),
             (["janitor"], "janitor", {})]
    for argv, procedure, args in cases:
        title, rows = _shown(monkeypatch, spark, argv)

        assert title == f"incr.{procedure}"
        assert rows == call(spark, procedure, **args), argv
    assert [(r.model, r.status) for r in call(spark, "audit", model=applied)] == [(applied, "ok")]
    assert [(r.env, r.models) for r in call(spark, "environments")] == [("prod", 1)]


def test_restate_builds_the_range_again_and_prints_its_batches(spark, applied, monkeypatch):
    title, rows = _shown(monkeypatch, spark, ["restate", applied, "--start", "2024-01-02", "--end", "2024-01-02",
                                              "--execution-time", T])

    assert title == "incr.restate"
    assert [(r.model, r.action, str(r.start), str(r.end), r.status) for r in rows] == [
        (applied, "build", "2024-01-02 00:00:00", "2024-01-03 00:00:00", "ok")]


def test_a_verbs_rows_are_printed_as_a_table(spark, applied, monkeypatch, capsys):
    monkeypatch.setattr(cli, "_session", lambda args: spark)

    assert cli.main(["environments"]) == 0

    out = capsys.readouterr().out
    assert "incr.environments" in out
    assert re.search(rf"│ prod +│ 1 +│ {applied.split('.')[0]} +│ 20", out), out
