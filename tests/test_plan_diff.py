"""incr.plan shows the change (pyspark_incr.plan.diff): per directly changed model, diffs of its SQL and
properties against the environment's version, and the models downstream it affects, with why.

One project is applied once; every test plans an edited copy of it (planning changes nothing).
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from conftest import call
from pyspark_incr import cli
from pyspark_incr.model.definition import parse_model
from pyspark_incr.model.fingerprint import data_hash
from pyspark_incr.plan import diff as plan_diff
from pyspark_incr.plan.categorize import categorize

T = "2024-01-04 00:00:00"
_WHERE = "WHERE ds BETWEEN @start_ds AND @end_ds"


def _events(p: str, columns: str = "ds, amount", where: str = _WHERE) -> str:
    return (f"MODEL (name {p}.events, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
            f"cron '@daily');\nSELECT {columns} FROM {p}_raw.sales {where}\n")


def _files(p: str) -> dict[str, str]:
    return {
        "events": _events(p),
        "totals": f"MODEL (name {p}.totals, kind FULL);\nSELECT ds, SUM(amount) AS total FROM {p}.events GROUP BY ds\n",
        "report": f"MODEL (name {p}.report, kind FULL);\nSELECT MAX(total) AS top FROM {p}.totals\n",
        "lonely": f"MODEL (name {p}.lonely, kind FULL);\nSELECT 1 AS one\n",
    }


class Baseline:
    """The applied project; ``edited`` changes its model files for a while (planning changes nothing)."""

    def __init__(self, spark, prefix: str, root) -> None:
        self.spark, self.p, self.root = spark, prefix, root

    def name(self, model: str) -> str:
        return f"{self.p}.{model}"

    @contextmanager
    def edited(self, **edits: str | None) -> Iterator[str]:
        """The project directory with these model files replaced (None: removed), as it was again after."""
        kept = {m: (self.root / "models" / f"{m}.sql") for m in edits}
        before = {m: path.read_text() if path.exists() else None for m, path in kept.items()}
        try:
            for model, text in edits.items():
                if text is None:
                    kept[model].unlink()
                else:
                    kept[model].write_text(text)
            yield str(self.root)
        finally:
            for model, text in before.items():
                if text is None:
                    kept[model].unlink(missing_ok=True)
                else:
                    kept[model].write_text(text)

    def plan(self, **edits: str | None) -> dict:
        """The first row of each model in the plan of the edited project (the row that carries the diff)."""
        with self.edited(**edits) as project:
            rows = call(self.spark, "plan", project=project, execution_time=T)
        first: dict = {}
        for row in rows:
            first.setdefault(row.model, row)
        return first


@pytest.fixture(scope="module")
def baseline(spark, module_isolated, tmp_path_factory):
    p = module_isolated
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {p}_raw")
    spark.sql(f"""CREATE TABLE {p}_raw.sales USING parquet AS SELECT * FROM VALUES
        (DATE'2024-01-01', 10), (DATE'2024-01-02', 20), (DATE'2024-01-03', 30) AS t(ds, amount)""")
    root = tmp_path_factory.mktemp("plan_diff")
    (root / "models").mkdir()
    for model, text in _files(p).items():
        (root / "models" / f"{model}.sql").write_text(text)
    call(spark, "apply", project=str(root), execution_time=T)
    return Baseline(spark, p, root)


def _lines(diff: str, sign: str) -> list[str]:
    """The diff's lines added (``+``) or removed (``-``), without their sign; headers left out."""
    return [line[1:] for line in diff.splitlines() if line.startswith(sign) and not line.startswith(sign * 3 + " ")]


def _affects(diff: str) -> dict[str, str]:
    """``affects <model>: <category>. <reason>`` lines, by model."""
    return dict(re.findall(r"^affects (\S+): (.*)$", diff, re.M))


def test_a_plan_without_changes_shows_no_diff_and_renders_nothing(baseline, monkeypatch):
    def refuse(*args):
        raise AssertionError("rendered a diff for a plan without changes")

    monkeypatch.setattr(plan_diff, "model_diff", refuse)

    planned = baseline.plan()

    assert {r.change for r in planned.values()} == {"unchanged"}
    assert [r.diff for r in planned.values()] == [None] * 4


def test_a_changed_query_shows_exactly_the_changed_lines(baseline):
    events = baseline.name("events")

    planned = baseline.plan(events=_events(baseline.p, where=_WHERE + " AND amount > 10"))
    diff = planned[events].diff

    assert _lines(diff, "-") == ["  ds BETWEEN @start_ds AND @end_ds"]
    assert _lines(diff, "+") == ["  ds BETWEEN @start_ds AND @end_ds AND amount > 10"]
    assert f"--- {events} sql (prod)" in diff and f"+++ {events} sql (plan)" in diff
    assert "properties" not in diff


def test_a_breaking_change_lists_every_model_downstream_as_rebuilt(baseline):
    events, totals, report = (baseline.name(m) for m in ("events", "totals", "report"))

    planned = baseline.plan(events=_events(baseline.p, where=_WHERE + " AND amount > 10"))

    assert planned[events].category == "breaking"
    assert _affects(planned[events].diff) == {
        totals: f"indirect breaking. Reads {events} (breaking): rebuild.",
        report: f"indirect breaking. Reads {totals} (breaking): rebuild.",
    }
    assert planned[totals].category == planned[report].category == "indirect breaking"
    assert planned[totals].diff is None and planned[report].diff is None
    assert baseline.name("lonely") not in _affects(planned[events].diff)


def test_a_non_breaking_change_lists_the_models_downstream_as_keeping_their_tables(baseline):
    events, totals, report = (baseline.name(m) for m in ("events", "totals", "report"))

    planned = baseline.plan(events=_events(baseline.p, columns="ds, amount * 2 AS doubled, amount"))
    diff = planned[events].diff

    assert planned[events].category == "non-breaking"
    assert _affects(diff) == {
        totals: f"indirect non-breaking. Reads {events} (non-breaking): keeps its table.",
        report: f"indirect non-breaking. Reads {totals} (indirect non-breaking): keeps its table.",
    }
    assert _lines(diff, "+") == ["  amount * 2 AS doubled,"] and _lines(diff, "-") == []


def test_a_property_only_change_shows_a_property_diff_and_no_sql_diff(baseline):
    lonely = baseline.name("lonely")

    planned = baseline.plan(lonely=f"MODEL (name {lonely}, kind FULL, owner 'ana', tags (finance));\nSELECT 1 AS one\n")
    diff = planned[lonely].diff

    assert planned[lonely].change == "metadata"
    assert _lines(diff, "+") == ["owner ana", "tags (finance)"] and _lines(diff, "-") == []
    assert f"--- {lonely} properties (prod)" in diff and " sql (" not in diff
    assert _affects(diff) == {}


def test_a_whitespace_and_comment_only_change_is_no_change_to_the_plan_or_to_categorize(baseline):
    events = baseline.name("events")
    reformatted = (f"MODEL (name {events}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
                   f"cron '@daily');\n-- the sales of each day\nselect ds,\n       amount  /* in cents */\n"
                   f"  from {baseline.p}_raw.sales\n where ds between @start_ds and @end_ds\n")

    planned = baseline.plan(events=reformatted)
    old, new = parse_model(_events(baseline.p)), parse_model(reformatted)

    assert planned[events].change == "unchanged" and planned[events].diff is None
    assert data_hash(old) == data_hash(new)
    assert categorize(old, new).reason == "no change to the query, kind or data properties"
    assert plan_diff.model_diff(old, new, "prod", "plan") == ""


def test_a_new_model_shows_its_whole_definition_as_added(baseline):
    fresh = baseline.name("fresh")

    planned = baseline.plan(fresh=f"MODEL (name {fresh}, kind FULL, owner 'bo');\nSELECT one + 1 AS two "
                                  f"FROM {baseline.name('lonely')}\n")
    diff = planned[fresh].diff

    assert planned[fresh].change == "added"
    assert _lines(diff, "+") == ["SELECT", "  one + 1 AS two", f"FROM {baseline.name('lonely')}",
                                 "kind FULL", "cron @daily", "interval_unit day", "owner bo"]
    assert _lines(diff, "-") == []


def test_a_removed_model_shows_its_whole_definition_as_removed(baseline):
    lonely = baseline.name("lonely")

    planned = baseline.plan(lonely=None)
    diff = planned[lonely].diff

    assert planned[lonely].change == "removed"
    assert _lines(diff, "-") == ["SELECT", "  1 AS one", "kind FULL", "cron @daily", "interval_unit day"]
    assert _lines(diff, "+") == []


def test_a_kind_property_change_shows_as_its_own_line_under_the_kind():
    text = "MODEL (name s.m, kind INCREMENTAL_BY_TIME_RANGE (time_column ds{})); SELECT ds FROM raw.t"
    old, new = parse_model(text.format("")), parse_model(text.format(", lookback 2, batch_size 7"))

    shown = plan_diff.model_diff(old, new, "prod", "plan")

    assert _lines(shown, "+") == ["  batch_size 7", "  lookback 2"] and _lines(shown, "-") == []
    assert " sql (" not in shown


def test_a_changed_pre_statement_shows_in_the_sql_diff_beside_an_unchanged_query():
    text = "MODEL (name s.m, kind FULL); SET spark.sql.shuffle.partitions = {}; SELECT a FROM raw.t"
    old, new = parse_model(text.format(4)), parse_model(text.format(8))

    shown = plan_diff.model_diff(old, new, "prod", "plan")

    assert _lines(shown, "-") == ["SET spark.sql.shuffle.partitions = 4;"]
    assert _lines(shown, "+") == ["SET spark.sql.shuffle.partitions = 8;"]


def test_the_example_in_the_environments_page_is_what_the_plan_shows():
    page = (Path(__file__).resolve().parents[1] / "docs" / "environments.md").read_text()
    example = page.split("## What changed: the plan's diff", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    text = ("MODEL (name shop.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', "
            "cron '@daily'{}); SELECT ds, SUM(amount) AS revenue FROM raw.orders "
            "WHERE ds BETWEEN @start_ds AND @end_ds{} GROUP BY ds")
    old, new = parse_model(text.format("", "")), parse_model(text.format(", owner 'ana'", " AND status = 'paid'"))

    assert example.split("\n", 1)[1] == plan_diff.model_diff(old, new, "prod", "plan") + "\n"


_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _cli_plan(baseline, monkeypatch, capsys, *flags: str) -> str:
    """``pyspark-incr plan`` of a breaking change and a new model, in this test session; its stdout."""
    monkeypatch.setattr(cli, "_session", lambda args: baseline.spark)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    edits = {"events": _events(baseline.p, where=_WHERE + " AND amount > 10"),
             "fresh": f"MODEL (name {baseline.name('fresh')}, kind FULL);\nSELECT 2 AS fresh_column\n"}
    with baseline.edited(**edits) as project:
        assert cli.main(["plan", "--project", project, "--execution-time", T, *flags]) == 0
    return capsys.readouterr().out


def test_cli_plan_colours_added_lines_green_and_removed_lines_red_when_forced(baseline, monkeypatch, capsys):
    out = _cli_plan(baseline, monkeypatch, capsys, "--color")
    green = re.search(r"\x1b\[32m\s*\+  ds BETWEEN @start_ds AND @end_ds AND amount > 10", out)
    red = re.search(r"\x1b\[31m\s*-  ds BETWEEN @start_ds AND @end_ds\s*\x1b\[0m", out)

    assert green and red, out
    assert re.search(rf"\x1b\[1m\s*--- {re.escape(baseline.name('events'))} sql \(prod\)", out)


@pytest.mark.parametrize("flags", [("--no-color",), ()], ids=["no-color", "not-a-terminal"])
def test_cli_plan_without_colour_prints_the_same_diff_without_escape_codes(baseline, monkeypatch, capsys, flags):
    out = _cli_plan(baseline, monkeypatch, capsys, *flags)
    events = baseline.name("events")

    assert "\x1b[" not in out
    assert f"Directly modified: {events} (breaking)" in out
    assert "  +  ds BETWEEN @start_ds AND @end_ds AND amount > 10" in out
    assert f"  affects {baseline.name('totals')}: indirect breaking." in out
    assert f"Added models: {baseline.name('fresh')}" in out and "fresh_column" not in out, "a new model: its name only"
    assert not re.search(r"[┃│|] *diff *[┃│|]", out), "the diff column is printed below the table, not in it"
