"""What the CLI prints a person can read: row texts are whole sentences, and the progress bar ends at its total.

The ``reason`` of plan rows and the ``message`` of apply/run rows are put together from phrases several modules
write; each scenario here checks them with one rule (:func:`assert_sentences`), through Spark SQL as a user calls.
"""

from __future__ import annotations

import io
import re

import pytest
from conftest import call as _call

from pyspark_incr.plan.sentences import clauses, sentence, sentences


def assert_sentences(text: str | None, where: str) -> None:
    """``text`` reads as whole sentences: capital first, period last, no empty part or dangling separator."""
    assert text, f"{where}: empty text"
    assert text == text.strip() and "  " not in text, f"{where}: stray blanks in {text!r}"
    assert not re.search(r"[;,:]\s*[;,:.]", text), f"{where}: an empty part or a dangling separator in {text!r}"
    assert text[0].isupper(), f"{where}: does not start with a capital letter: {text!r}"
    assert text.endswith("."), f"{where}: does not end with a period: {text!r}"


def _texts(rows, column: str) -> list[tuple[str, str]]:
    return [(f"{r.model} {column}", getattr(r, column)) for r in rows if getattr(r, column) is not None]


# --- the helper -------------------------------------------------------------------------------------------------


def test_sentences_drop_empty_parts_and_dangling_separators():
    assert sentences("new model", "", None, " ; ", "refused by the check;") == "New model. Refused by the check."
    assert sentences("", None) == ""
    assert sentence("warning: downgraded (allow_downgrade): ") == "Warning: downgraded (allow_downgrade)."


def test_a_sentence_opening_with_a_name_keeps_the_names_case():
    assert sentence("db.daily is missing") == "db.daily is missing."
    assert sentence("batch_size 3 is too big") == "batch_size 3 is too big."
    assert sentence("non-breaking: adds column b int") == "Non-breaking: adds column b int."


def test_clauses_keep_only_the_items_that_say_something():
    assert clauses(["adds column c int", "", None, " drops column b string.", ";"]) == \
        "adds column c int; drops column b string"
    assert clauses(["a message cut short..."]) == "a message cut short..."


# --- plan reasons -----------------------------------------------------------------------------------------------


@pytest.fixture()
def raw(spark, isolated):
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"CREATE TABLE {isolated}_raw.sales USING parquet AS SELECT * FROM VALUES "
              "(DATE'2024-01-01', 'a', 5), (DATE'2024-01-02', 'b', 3), (DATE'2024-01-03', 'a', 7) "
              "AS t(ds, shop, amount)")
    return f"{isolated}_raw.sales"


def _daily(name: str, raw: str, columns: str = "ds, shop, amount", extra: str = "", props: str = "") -> str:
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds{extra}), start '2024-01-01', "
            f"cron '@daily'{props}); SELECT {columns} FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds")


def test_plan_of_a_new_model_gives_its_reason_as_sentences(spark, isolated, raw):
    plain, noted = f"{isolated}.daily", f"{isolated}.by_shop"
    _call(spark, "create_model", definition=_daily(plain, raw))
    # batches sharing partitions cannot run at once: the plan says so in a second sentence
    _call(spark, "create_model", definition=_daily(noted, raw, extra=", batch_concurrency 2",
                                                   props=", partitioned_by shop"))

    rows = {r.model: r for r in _call(spark, "plan", execution_time="2024-01-04 00:00:00")}

    assert rows[plain].reason == "New model."
    assert_sentences(rows[noted].reason, noted)
    assert rows[noted].reason.startswith("New model. Batch concurrency forced to 1: "), rows[noted].reason


def test_plan_of_a_changed_model_and_its_child_gives_reasons_as_sentences(spark, isolated, raw):
    name, child = f"{isolated}.daily", f"{isolated}.totals"
    _call(spark, "create_model", definition=_daily(name, raw))
    _call(spark, "create_model", definition=(
        f"MODEL (name {child}, kind FULL); SELECT shop, SUM(amount) AS total FROM {name} GROUP BY shop"))
    _call(spark, "apply", execution_time="2024-01-04 00:00:00")
    _call(spark, "create_model", definition=_daily(name, raw, "ds, shop, amount, amount * 2 AS doubled"))

    rows = [r for r in _call(spark, "plan", execution_time="2024-01-04 00:00:00") if r.model in (name, child)]

    for where, text in _texts(rows, "reason"):
        assert_sentences(text, where)
    reasons = {r.model: r.reason for r in rows}
    assert reasons[name].startswith("Non-breaking: "), reasons
    assert reasons[child].startswith(f"Reads {name} (non-breaking)"), reasons


def test_plan_of_a_refused_model_gives_its_reason_as_sentences(spark, isolated, raw):
    name = f"{isolated}.ranked"
    _call(spark, "create_model", definition=_daily(name, raw, "ds, shop, ROW_NUMBER() OVER (ORDER BY amount) AS rn"))

    rows = [r for r in _call(spark, "plan", execution_time="2024-01-04 00:00:00") if r.model == name]

    assert rows
    for where, text in _texts(rows, "reason"):
        assert_sentences(text, where)
    assert rows[0].reason.startswith("New model. Refused by the incremental safety check"), rows[0].reason


def test_a_downgraded_build_says_so_in_sentences(spark, isolated, raw):
    name = f"{isolated}.ranked"
    _call(spark, "create_model", definition=_daily(name, raw, "ds, shop, ROW_NUMBER() OVER (ORDER BY amount) AS rn"))

    rows = [r for r in _call(spark, "apply", execution_time="2024-01-04 00:00:00", allow_downgrade=True)
            if r.model == name]

    assert [r.action for r in rows] == ["full refresh"]
    assert_sentences(rows[0].message, f"{name} message")
    assert rows[0].message.startswith("Warning: downgraded to a full refresh (allow_downgrade): ")


# --- a run with a failed batch and skipped ones -----------------------------------------------------------------


@pytest.fixture(scope="module")
def failed_run(spark, module_isolated):
    """A run at 2024-01-04 after day 1 was applied: ``bad`` fails on day 2 (so day 3 never starts), ``child``
    reads it and is skipped, ``good`` builds days 2 and 3, and the view ``v`` has nothing to do.

    Returns the names, the run's rows, every progress event of the run and the progress bar's feed.
    """
    from rich.console import Console

    from pyspark_incr.cli_progress import progress_bar
    from pyspark_incr.run import progress

    raw, p = f"{module_isolated}_raw.events", module_isolated
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {p}_raw")
    spark.range(0, 12).selectExpr("id", "date_add(DATE'2024-01-01', CAST(id DIV 4 AS INT)) AS ds") \
        .write.format("parquet").saveAsTable(raw)
    names = {k: f"{p}.{k}" for k in ("bad", "good", "child", "v")}
    for key, source, column in (("bad", raw, "CASE WHEN id = 999 THEN raise_error('corrupt day') ELSE 1 END"),
                                ("good", raw, "1"), ("child", names["bad"], "x")):
        _call(spark, "create_model", definition=(
            f"MODEL (name {names[key]}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 1), "
            f"start '2024-01-01', cron '@daily'); "
            f"SELECT id, ds, {column} AS x FROM {source} WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "create_model", definition=f"MODEL (name {names['v']}, kind VIEW); SELECT id FROM {names['good']}")
    _call(spark, "apply", execution_time="2024-01-02 00:00:00")
    spark.sql(f"INSERT INTO {raw} VALUES (999, DATE'2024-01-02')")

    events: list = []
    unsubscribe = progress.subscribe(events.append)
    console = Console(file=io.StringIO(), width=200, force_terminal=False)
    try:
        with progress_bar(console=console) as feed:
            rows = _call(spark, "run", execution_time="2024-01-04 00:00:00", concurrency=1)
    finally:
        unsubscribe()
    return {"names": names, "rows": rows, "events": events, "feed": feed, "printed": console.file.getvalue()}


def test_a_run_with_a_failure_gives_every_message_as_sentences(failed_run):
    rows, names = failed_run["rows"], failed_run["names"]

    texts = _texts(rows, "message")
    for where, text in texts:
        assert_sentences(text, where)
    by_model = {r.model: (r.status, r.message) for r in rows if r.status != "ok"}
    assert by_model[names["bad"]][0] == "failed"
    assert by_model[names["bad"]][1].startswith("Spark error: [USER_RAISED_EXCEPTION] corrupt day"), by_model
    assert by_model[names["child"]] == ("skipped", "A parent model failed.")


def test_progress_of_a_run_with_a_failure_ends_at_its_total(failed_run):
    from rich.console import Console

    events, feed, names = failed_run["events"], failed_run["feed"], failed_run["names"]
    [task] = feed.progress.tasks

    # bad: days 2, 3; child: days 2, 3; good: days 2, 3; the view: one step with nothing to do
    assert {e.total for e in events} == {7}
    done = [e.done for e in events]
    assert done == sorted(done) and done[-1] == 7, done
    assert (task.completed, task.total) == (7, 7)
    assert (task.fields["failed"], task.fields["skipped"]) == ("1 failed", "3 skipped")
    shown = io.StringIO()
    Console(file=shown, width=200, force_terminal=False).print(feed.progress.make_tasks_table([task]))
    assert re.search(r"building .* 7/7 steps 1 failed 3 skipped \d:\d\d:\d\d", shown.getvalue()), shown.getvalue()
    assert f"failed {names['bad']} [2024-01-02, 2024-01-03): Spark error: [USER_RAISED_EXCEPTION]" in \
        failed_run["printed"], "the failure is printed with Spark's error class, not eaten as markup"


def test_progress_says_which_steps_were_skipped_and_which_had_nothing_to_do(failed_run):
    from pyspark_incr.run import progress

    names = failed_run["names"]
    settled = {(e.model, e.steps, e.status) for e in failed_run["events"] if isinstance(e, progress.Settled)}

    assert settled == {(names["bad"], 1, "skipped"), (names["child"], 1, "skipped"), (names["v"], 1, "up to date")}
