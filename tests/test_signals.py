"""signals: an interval is built only when every signal of its model (and of its parents) says it is ready.

SQLMesh's Python signals (``signals/`` with ``@signal()``) and the SQL form
``signals (ready := 'SELECT <boolean> ...')``, through CALL statements as users run them.
"""

from __future__ import annotations

import shutil
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest
from chispa import assert_df_equality

from conftest import call as _call, state_rows
from pyspark_incr.errors import ModelDefinitionError, ModelQueryError
from pyspark_incr.intervals import Interval, IntervalSet, to_ms
from pyspark_incr.intervals.times import format_ms
from pyspark_incr.model.definition import parse_model, reparse
from pyspark_incr.model.fingerprint import data_hash, metadata_hash
from pyspark_incr.model.signals import SignalSource
from pyspark_incr.plan import readiness
from pyspark_incr.project.loader import load

SIGNALS = '''\
import typing as t
from sqlmesh import signal, DatetimeRanges, ExecutionContext


@signal()
def before(batch: DatetimeRanges, day: str) -> t.Union[bool, DatetimeRanges]:
    return [(start, end) for start, end in batch if start.strftime("%Y-%m-%d") < day]


@signal()
def has_rows(batch: DatetimeRanges, context: ExecutionContext, table: str) -> bool:
    return context.engine_adapter.fetchall(f"SELECT COUNT(*) FROM {table}")[0][0] > 0


@signal()
def broken(batch: DatetimeRanges) -> bool:
    raise RuntimeError("the feed's API is down")
'''


def _raw(spark, prefix: str, days: int) -> str:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.sql(f"DROP TABLE IF EXISTS {prefix}_raw.events")
    spark.sql(f"""CREATE TABLE {prefix}_raw.events USING parquet AS
        SELECT id, DATE_ADD(DATE'2024-01-01', CAST(id % {days} AS INT)) AS ds FROM range({days * 10})""")
    return f"{prefix}_raw.events"


def _daily(name: str, source: str, signals: str = "") -> str:
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01'"
            f"{', signals ' + signals if signals else ''});\n"
            f"SELECT ds, COUNT(*) AS n FROM {source} WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds\n")


def _project(tmp_path: Path, models: dict[str, str]) -> Path:
    root = tmp_path / "project"
    (root / "models").mkdir(parents=True)
    (root / "signals").mkdir()
    (root / "signals" / "__init__.py").write_text(SIGNALS)
    for file, text in models.items():
        (root / "models" / file).write_text(text)
    return root


def _steps(rows) -> list[tuple]:
    return [(r.model.split(".")[-1], r.action, format_ms(to_ms(r.start)) if r.start else None,
             format_ms(to_ms(r.end)) if r.end else None, r.status) for r in rows]


def _expect(spark, name: str, counts: dict[str, int]) -> None:
    want = spark.sql("SELECT CAST(ds AS DATE) AS ds, CAST(n AS BIGINT) AS n FROM VALUES "
                     + ", ".join(f"('{d}', {n})" for d, n in counts.items()) + " AS t(ds, n)")
    assert_df_equality(spark.table(name).select("ds", "n"), want, ignore_row_order=True, ignore_nullable=True)


def test_a_sql_signal_holds_back_a_day_until_its_data_lands_then_a_later_run_builds_it(spark, isolated):
    raw, name = _raw(spark, isolated, days=2), f"{isolated}.daily"
    ready = f"(ready := 'SELECT COUNT(*) > 0 FROM {raw} WHERE ds = @start_ds')"
    _call(spark, "create_model", definition=_daily(name, raw, ready))

    planned = _call(spark, "plan", execution_time="2024-01-04 01:00:00")
    first = _call(spark, "apply", execution_time="2024-01-04 01:00:00")
    spark.sql(f"INSERT INTO {raw} VALUES (900, DATE'2024-01-03'), (901, DATE'2024-01-03')")
    later = _call(spark, "run", execution_time="2024-01-04 01:00:00")

    assert "[2024-01-03, 2024-01-04) waits: signal ready says not ready" in planned[0].reason
    assert _steps(first) == [("daily", "build", "2024-01-01", "2024-01-03", "ok"),
                             ("daily", "wait", "2024-01-03", "2024-01-04", "waiting")]
    assert first[-1].message == "Signal ready says not ready; the next run checks again."
    assert _steps(later) == [("daily", "build", "2024-01-03", "2024-01-04", "ok")]
    _expect(spark, name, {"2024-01-01": 10, "2024-01-02": 10, "2024-01-03": 2})


def test_a_python_signal_with_arguments_keeps_a_subset_and_the_models_reading_it_wait_too(spark, isolated, tmp_path):
    raw = _raw(spark, isolated, days=5)
    root = _project(tmp_path, {
        "daily.sql": _daily(f"{isolated}.daily", raw, "(before(day := '2024-01-03'), "
                                                       f"has_rows(table := '{raw}'))"),
        "totals.sql": _daily(f"{isolated}.totals", f"{isolated}.daily"),
        "other.sql": _daily(f"{isolated}.other", raw),
    })

    rows = _call(spark, "apply", project=str(root), execution_time="2024-01-05 01:00:00")

    assert sorted(_steps(rows)) == [
        ("daily", "build", "2024-01-01", "2024-01-03", "ok"),
        ("daily", "wait", "2024-01-03", "2024-01-05", "waiting"),
        ("other", "build", "2024-01-01", "2024-01-05", "ok"),
        ("totals", "build", "2024-01-01", "2024-01-03", "ok"),
        ("totals", "wait", "2024-01-03", "2024-01-05", "waiting"),
    ]
    waits = {r.model.split(".")[-1]: r.message for r in rows if r.action == "wait"}
    assert waits["daily"].startswith("Signal before says not ready")
    assert waits["totals"].startswith(f"Waits for {isolated}.daily, whose interval is not ready")
    _expect(spark, f"{isolated}.daily", {"2024-01-01": 10, "2024-01-02": 10})


def test_a_scheduled_run_evaluates_the_stored_signal_code_with_the_project_directory_deleted(
        spark, isolated, tmp_path):
    raw = _raw(spark, isolated, days=5)
    root = _project(tmp_path, {"daily.sql": _daily(f"{isolated}.daily", raw, "(before(day := '2024-01-02'))")})
    _call(spark, "apply", project=str(root), execution_time="2024-01-03 01:00:00")
    shutil.rmtree(root)
    reparse.cache_clear()  # as in another Spark application: nothing of the project in memory
    readiness._function.cache_clear()

    rows = _call(spark, "run", execution_time="2024-01-05 01:00:00")

    assert _steps(rows) == [("daily", "wait", "2024-01-02", "2024-01-05", "waiting")]
    assert rows[0].message.startswith("Signal before says not ready")


def test_a_signal_that_raises_fails_its_model_by_name_skips_its_readers_and_other_models_go_on(
        spark, isolated, tmp_path):
    raw = _raw(spark, isolated, days=2)
    root = _project(tmp_path, {
        "daily.sql": _daily(f"{isolated}.daily", raw, "(broken())"),
        "totals.sql": _daily(f"{isolated}.totals", f"{isolated}.daily"),
        "other.sql": _daily(f"{isolated}.other", raw),
    })

    rows = _call(spark, "apply", project=str(root), execution_time="2024-01-03 01:00:00")

    by_model = {r.model.split(".")[-1]: r for r in rows}
    assert (by_model["daily"].action, by_model["daily"].status) == ("check signals", "failed")
    assert f"Model {isolated}.daily: signal broken failed: RuntimeError: the feed's API is down" in \
        by_model["daily"].message
    assert (by_model["totals"].status, by_model["totals"].message) == ("skipped", "A parent model failed.")
    assert (by_model["other"].action, by_model["other"].status) == ("build", "ok")


def _status(rows) -> dict[str, list[tuple]]:
    found: dict[str, list[tuple]] = {}
    for r in rows:
        found.setdefault(r.model.split(".")[-1], []).append(
            (r.state, format_ms(to_ms(r.start))[:10], format_ms(to_ms(r.end))[:10], r.reason))
    return found


def test_status_shows_what_a_run_would_leave_waiting_naming_the_signal_and_writes_nothing(spark, isolated,
                                                                                         monkeypatch):
    from pyspark_incr.coverage import coverages, render_text

    raw, feed = _raw(spark, isolated, days=2), f"{isolated}_raw.feed"
    spark.sql(f"CREATE TABLE {feed} USING parquet AS SELECT 1 AS x")
    names = {k: f"{isolated}.{k}" for k in ("daily", "totals", "fed")}
    _call(spark, "create_model", definition=_daily(
        names["daily"], raw, f"(ready := 'SELECT COUNT(*) > 0 FROM {raw} WHERE ds = @start_ds')"))
    _call(spark, "create_model", definition=_daily(names["totals"], names["daily"]))
    _call(spark, "create_model", definition=_daily(names["fed"], raw, f"(ready := 'SELECT COUNT(*) > 0 FROM {feed}')"))
    _call(spark, "apply", execution_time="2024-01-03 01:00:00")
    spark.sql(f"INSERT INTO {raw} VALUES (900, DATE'2024-01-03')")  # 01-03 lands, 01-04 does not
    spark.sql(f"DROP TABLE {feed}")  # fed's signal now fails
    before = state_rows(spark, isolated)
    check, asked = readiness.check, []
    monkeypatch.setattr(readiness, "check", lambda spark, model, missing, *rest: asked.append(
        (model.name.split(".")[-1], str(missing))) or check(spark, model, missing, *rest))

    rows = _call(spark, "status", execution_time="2024-01-05 01:00:00")

    assert state_rows(spark, isolated) == before, "looking wrote no state"
    assert sorted(asked) == [("daily", "[2024-01-03, 2024-01-05)"), ("fed", "[2024-01-03, 2024-01-05)")], \
        "only the models with signals, only over their missing intervals"
    monkeypatch.undo()
    assert _status(rows)["daily"] == [("covered", "2024-01-01", "2024-01-03", None),
                                      ("missing", "2024-01-03", "2024-01-04", None),
                                      ("waiting", "2024-01-04", "2024-01-05", "Signal ready says not ready.")]
    assert _status(rows)["totals"][1:] == [
        ("missing", "2024-01-03", "2024-01-04", None),
        ("waiting", "2024-01-04", "2024-01-05", f"Waits for {names['daily']}, whose interval is not ready.")]
    [(state, *_, failed)] = _status(rows)["fed"][1:]
    assert state == "missing" and failed.startswith(f"Model {names['fed']}: signal ready failed: AnalysisException")
    drawn = render_text(coverages([r for r in rows if r.model == names["daily"]]), to_ms("2024-01-05 01:00:00"), 90)
    assert "▒ waiting for a signal" in drawn and "2/4 built, 1 gap, 1 waiting" in drawn
    # what status said waits is what a run leaves waiting; what it said missing, the run builds
    ran = _call(spark, "run", execution_time="2024-01-05 01:00:00", select=f"{names['daily']}, {names['totals']}")
    assert sorted(_steps(ran)) == [("daily", "build", "2024-01-03", "2024-01-04", "ok"),
                                   ("daily", "wait", "2024-01-04", "2024-01-05", "waiting"),
                                   ("totals", "build", "2024-01-03", "2024-01-04", "ok"),
                                   ("totals", "wait", "2024-01-04", "2024-01-05", "waiting")]


def test_the_timeline_marks_waiting_intervals_apart_from_gaps_and_says_how_many_wait():
    from pyspark_incr.coverage import coverages, render_text

    rows = [{"model": "db.daily", "kind": "K", "state": s, "start": a, "end": b, "intervals": n, "table": None}
            for s, a, b, n in (("covered", "2024-01-01", "2024-01-05", 4), ("missing", "2024-01-05", "2024-01-06", 1),
                               ("covered", "2024-01-06", "2024-01-08", 2), ("waiting", "2024-01-08", "2024-01-10", 2))]

    drawn = render_text(coverages(rows), to_ms("2024-01-10"), 100)

    line = next(text for text in drawn.splitlines() if text.startswith("db.daily"))
    bar = line.split()[2]
    assert bar.count("░") and bar.count("▒") and bar.index("░") < bar.index("▒"), line
    assert line.endswith("6/9 built, 1 gap, 2 waiting")
    assert drawn.splitlines()[-1] == "█ built   ░ missing   · not complete yet   ▒ waiting for a signal"


# --- parsing and checking, without Spark ------------------------------------------------------------


def test_an_unknown_signal_is_refused_by_model_file_line_and_column(tmp_path):
    root = _project(tmp_path, {"daily.sql": _daily("s.daily", "raw.e", "(\n  befor(day := '2024-01-03'))")})

    with pytest.raises(ModelDefinitionError) as error:
        load(root)

    message = str(error.value)
    assert "model s.daily" in message and "daily.sql" in message and "line 1, column " in message
    assert "unknown signal 'befor' (known signals: before, broken, has_rows)" in message


@pytest.mark.parametrize("signals, says", [
    ("(ready := 1)", "SQL signal 'ready' must be a quoted query"),
    ("(ready := 'SELECT FROM WHERE')", "SQL signal 'ready'"),
    ("(ready := 'SELECT @nope > 0')", "SQL signal 'ready' uses @nope"),
    ("(before(2024))", "signal before: arguments are written name := value"),
    ("(1 + 1)", "is neither a SQL nor a Python signal"),
    ("(ready := 'SELECT TRUE', ready := 'SELECT FALSE')", "signal 'ready' is given twice"),
])
def test_a_malformed_signals_property_is_refused_naming_model_line_and_column(signals, says):
    text = "MODEL (name s.daily, kind FULL,\n  signals " + signals + ");\nSELECT 1 AS x"

    with pytest.raises(ModelDefinitionError) as error:
        parse_model(text, "models/daily.sql", signals={"before": SignalSource("s.py", SIGNALS)})

    assert str(error.value).startswith("model s.daily (models/daily.sql): line 2, column 3: ")
    assert says in str(error.value)


def test_signals_are_metadata_and_only_a_model_with_a_python_signal_carries_its_code():
    plain = parse_model(_daily("s.daily", "raw.e"))
    sql = parse_model(_daily("s.daily", "raw.e", "(ready := 'SELECT TRUE')"))
    python = parse_model(_daily("s.daily", "raw.e", "(before(day := '2024-01-03'))"),
                         signals={"before": SignalSource("signals/__init__.py", SIGNALS)})

    assert data_hash(plain) == data_hash(sql) == data_hash(python)
    assert len({metadata_hash(plain), metadata_hash(sql), metadata_hash(python)}) == 3
    assert plain.context == sql.context == ""
    assert '"signals": {"before": ["signals/__init__.py"' in python.context


def _model_with(source: str):
    code = "from sqlmesh import signal\n@signal()\ndef check(batch, **kw):\n" + textwrap.indent(source, "    ")
    return parse_model(_daily("s.daily", "raw.e", "(check(limit := 2))"), signals={"check": SignalSource("s.py", code)})


def _days(a: str, b: str) -> IntervalSet:
    return IntervalSet([Interval(to_ms(a), to_ms(b))])


def test_a_python_signal_gets_contiguous_batches_and_its_sub_list_says_which_days_are_ready():
    model = _model_with("return batch[:kw['limit']]\n")
    missing = _days("2024-01-01", "2024-01-05") | [Interval(to_ms("2024-01-07"), to_ms("2024-01-08"))]

    found = readiness.check(None, model, missing, 0, {}, {})

    assert str(found.ready) == "[2024-01-01, 2024-01-03), [2024-01-07, 2024-01-08)"
    assert [(str(i), why) for i, why in found.waiting] == [("[2024-01-03, 2024-01-05)", "signal check says not ready")]


@pytest.mark.parametrize("body, says", [
    ("return [(batch[0][0], batch[0][0])]\n", "which is not an interval of its batch"),
    ("return 'yes'\n", "returned str; a signal returns True, False or a sub-list of its batch"),
])
def test_a_python_signal_returning_something_else_is_an_error_naming_model_and_signal(body, says):
    with pytest.raises(ModelQueryError) as error:
        readiness.check(None, _model_with(body), _days("2024-01-01", "2024-01-03"), 0, {}, {})

    assert str(error.value).startswith("model s.daily: signal check")
    assert says in str(error.value)


ONE_WEEK_AGO = '''\
import typing as t

from sqlmesh import signal, DatetimeRanges
from sqlmesh.utils.date import to_datetime


# signal that returns only intervals that are <= 1 week ago
@signal()
def one_week_ago(batch: DatetimeRanges) -> t.Union[bool, DatetimeRanges]:
    dt = to_datetime("1 week ago")

    return [
        (start, end)
        for start, end in batch
        if start <= dt
    ]
'''


def test_the_sqlmesh_guides_one_week_ago_signal_loads_unedited_and_keeps_the_days_before_a_week_ago():
    model = parse_model("MODEL (name s.daily, kind FULL, signals (one_week_ago())); SELECT 1 AS x",
                        signals={"one_week_ago": SignalSource("signals/__init__.py", ONE_WEEK_AGO)})
    today = to_ms(datetime.now(timezone.utc).date())
    old, recent = Interval(today - 10 * 86_400_000, today - 9 * 86_400_000), Interval(today - 86_400_000, today)

    found = readiness.check(None, model, IntervalSet([old, recent]), 0, {}, {})

    assert list(found.ready) == [old]
    assert [(i, why) for i, why in found.waiting] == [(recent, "signal one_week_ago says not ready")]
