"""The incremental safety gate in plan/apply/run: refusal, allow_downgrade, safety_overrides, batch classes,
and the grouped constructs it admits (distinct aggregates and HAVING grouped by the time column)."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from pyspark_incr.intervals import Interval, to_ms
from pyspark_incr.model.render import render_query
from conftest import call as _call, physical, state_rows, tables_in

T = "2024-01-04 00:00:00"  # days 2024-01-01 .. 2024-01-03 are due
LATER = "2024-01-06 00:00:00"  # two more days
RANKED = ("MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds{kind_extra}), start '2024-01-01', "
          "cron '@daily'{extra});\n"
          "SELECT ds, shop, amount,\n"
          "       ROW_NUMBER() OVER (ORDER BY amount, shop, ds) AS rn\n"
          "FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds")


@pytest.fixture()
def raw(spark, isolated):
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"CREATE TABLE {isolated}_raw.sales USING parquet AS SELECT * FROM VALUES "
              "(DATE'2024-01-01', 'a', 5), (DATE'2024-01-01', 'b', 3), (DATE'2024-01-02', 'a', 7), "
              "(DATE'2024-01-03', 'b', 1), (DATE'2024-01-04', 'a', 2), (DATE'2024-01-05', 'b', 9) "
              "AS t(ds, shop, amount)")
    return f"{isolated}_raw.sales"


def _ranked(isolated: str, raw: str, extra: str = "", kind_extra: str = "") -> tuple[str, str]:
    name = f"{isolated}.ranked"
    return name, RANKED.format(name=name, raw=raw, extra=extra, kind_extra=kind_extra)


def _table(spark, name: str):
    """The model's rows in the query's column order (a partitioned table keeps its partition column last)."""
    return spark.table(name).select("ds", "shop", "amount", "rn")


def _expected_ranking(spark, raw: str, until: str):
    """ROW_NUMBER over all rows up to ``until``: what a full refresh computes."""
    return spark.sql(f"SELECT ds, shop, amount, ROW_NUMBER() OVER (ORDER BY amount, shop, ds) AS rn "
                     f"FROM {raw} WHERE ds < DATE'{until}'")


def test_apply_refuses_an_unsafe_model_naming_each_construct_and_writes_nothing(spark, isolated, raw):
    name, definition = _ranked(isolated, raw)
    _call(spark, "create_model", definition=definition)
    before = state_rows(spark, isolated)

    with pytest.raises(Exception) as refused:
        _call(spark, "apply", execution_time=T)

    message = str(refused.value)
    assert f"Incremental safety check refused model '{name}'" in message
    assert "line 3, column 8: ROW_NUMBER() OVER (ORDER BY amount, shop, ds)" in message
    assert "safety_overrides (allow_window_functions = true)" in message and "allow_downgrade => true" in message
    assert tables_in(spark, f"{isolated}_physical", isolated) == set()
    after = state_rows(spark, isolated)
    assert after.get("intervals", 0) == before.get("intervals", 0) == 0
    assert after.get("environments", 0) == before.get("environments", 0)


def test_plan_shows_the_refusal_without_failing(spark, isolated, raw):
    name, definition = _ranked(isolated, raw)
    _call(spark, "create_model", definition=definition)

    rows = [r for r in _call(spark, "plan", execution_time=T) if r.model == name]

    assert rows and "Refused by the incremental safety check" in rows[0].reason


def test_allow_downgrade_rebuilds_the_model_whole_in_one_job_and_says_so(spark, isolated, raw):
    name, definition = _ranked(isolated, raw)
    _call(spark, "create_model", definition=definition)

    rows = _call(spark, "apply", execution_time=T, allow_downgrade=True)

    built = [r for r in rows if r.model == name]
    assert [(r.action, str(r.start), str(r.end), r.intervals) for r in built] == [
        ("full refresh", "2024-01-01 00:00:00", "2024-01-04 00:00:00", 3)]
    assert built[0].message.startswith("Warning: downgraded to a full refresh (allow_downgrade)")
    assert_df_equality(_table(spark, name), _expected_ranking(spark, raw, "2024-01-04"),
                       ignore_row_order=True, ignore_nullable=True)


def test_a_downgrade_holds_for_its_call_only(spark, isolated, raw):
    name, definition = _ranked(isolated, raw)
    _call(spark, "create_model", definition=definition)
    _call(spark, "apply", execution_time=T, allow_downgrade=True)
    table = physical(spark, name)
    kept = spark.table(table).collect()

    with pytest.raises(Exception, match="Incremental safety check refused model"):
        _call(spark, "run", execution_time=LATER)
    assert sorted(spark.table(table).collect()) == sorted(kept)

    rows = _call(spark, "run", execution_time=LATER, allow_downgrade=True)
    assert [(r.action, str(r.start), str(r.end)) for r in rows if r.model == name] == [
        ("full refresh", "2024-01-01 00:00:00", "2024-01-06 00:00:00")]
    assert_df_equality(_table(spark, name), _expected_ranking(spark, raw, "2024-01-06"),
                       ignore_row_order=True, ignore_nullable=True)


def _jobs(rows, name: str) -> list[tuple[str, int]]:
    """The build jobs of ``name`` in a call's result rows: (first day, days built)."""
    return sorted((str(r.start)[:10], r.intervals) for r in rows if r.model == name and r.action == "build")


def test_a_safety_override_keeps_the_batching_a_safe_model_gets(spark, isolated, raw):
    aligned = ("MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds{kind_extra}), start '2024-01-01', "
               "cron '@daily'); SELECT ds, shop, ROW_NUMBER() OVER (PARTITION BY ds ORDER BY amount) AS rn "
               "FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds")
    override = ", safety_overrides (allow_window_functions = true)"
    for suffix, kind_extra in (("", ""), ("_by2", ", batch_size 2")):
        _call(spark, "create_model", definition=aligned.format(name=f"{isolated}.safe{suffix}", raw=raw,
                                                               kind_extra=kind_extra))
        _call(spark, "create_model", definition=RANKED.format(name=f"{isolated}.vouched{suffix}", raw=raw,
                                                              extra=override, kind_extra=kind_extra))

    rows = _call(spark, "apply", execution_time=T)

    assert _jobs(rows, f"{isolated}.vouched") == _jobs(rows, f"{isolated}.safe") == [("2024-01-01", 3)]
    assert _jobs(rows, f"{isolated}.vouched_by2") == _jobs(rows, f"{isolated}.safe_by2") == [
        ("2024-01-01", 2), ("2024-01-03", 1)]
    # one job over the three days ranks them together: what the override vouched for
    assert_df_equality(_table(spark, f"{isolated}.vouched"), _expected_ranking(spark, raw, "2024-01-04"),
                       ignore_row_order=True, ignore_nullable=True)


def test_a_partition_aligned_window_is_admitted_and_batched(spark, isolated, raw):
    name = f"{isolated}.aligned"
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', cron '@daily'); "
        f"SELECT ds, shop, ROW_NUMBER() OVER (PARTITION BY ds ORDER BY amount) AS rn FROM {raw} "
        f"WHERE ds BETWEEN @start_ds AND @end_ds"))

    rows = _call(spark, "apply", execution_time=T)

    assert [(r.action, r.intervals) for r in rows if r.model == name] == [("build", 3)]


def test_a_refused_model_stops_the_whole_run_before_any_model_is_written(spark, isolated, raw):
    safe = f"{isolated}.safe"
    _call(spark, "create_model", definition=(
        f"MODEL (name {safe}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01', cron '@daily'); "
        f"SELECT ds, shop, amount FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds"))
    _call(spark, "apply", execution_time=T)
    name, definition = _ranked(isolated, raw)
    _call(spark, "create_model", definition=definition)
    _call(spark, "apply", execution_time=T, allow_downgrade=True, select=name)
    intervals = state_rows(spark, isolated)["intervals"]

    with pytest.raises(Exception, match=f"refused model '{name}'"):
        _call(spark, "run", execution_time=LATER)

    assert state_rows(spark, isolated)["intervals"] == intervals
    assert spark.table(safe).where("ds >= DATE'2024-01-04'").count() == 0


def test_an_unknown_safety_override_is_refused_with_the_known_ones(spark, isolated, raw):
    name, definition = _ranked(isolated, raw, extra=", safety_overrides (allow_windows = true)")

    with pytest.raises(Exception, match=r"unknown safety override 'allow_windows'; did you mean allow_window_functions"):
        _call(spark, "create_model", definition=definition)


def test_models_of_other_kinds_are_not_judged(spark, isolated, raw):
    name = f"{isolated}.latest"
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind FULL); SELECT shop, MAX(amount) AS top FROM {raw} GROUP BY shop LIMIT 10"))

    rows = _call(spark, "apply", execution_time=T)

    assert [r.status for r in rows if r.model == name] == ["ok"]


GROUPED = ("MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 1), start '2024-01-01', "
           "cron '@daily');\n{query}")


def _sliced_build_equals_full_recomputation(spark, isolated, raw, query: str) -> None:
    """Build a model of ``query`` a day per job, by an apply and a later run, and compare it with ``query`` run
    once over all days up to the run (its macros spanning them)."""
    name = f"{isolated}.grouped"
    _call(spark, "create_model", definition=GROUPED.format(name=name, query=query.format(raw=raw)))

    applied = _call(spark, "apply", execution_time=T)
    ran = _call(spark, "run", execution_time=LATER)

    assert [(r.action, r.intervals) for r in applied + ran if r.model == name] == [("build", 1)] * 5
    days = Interval(to_ms("2024-01-01"), to_ms(LATER))
    full = render_query(query.format(raw=raw), days, to_ms(LATER), where="full recomputation")
    expected = spark.sql(full.sql("spark"))
    assert expected.count() > 0
    assert_df_equality(spark.table(name).select(*expected.columns), expected, ignore_row_order=True,
                       ignore_nullable=True)


def test_a_count_distinct_grouped_by_the_time_column_is_admitted_and_built_in_slices(spark, isolated, raw):
    # the shops of a day repeat on other days: a distinct count across slices would differ
    _sliced_build_equals_full_recomputation(spark, isolated, raw, (
        "SELECT ds, COUNT(DISTINCT shop) AS shops, COUNT(DISTINCT amount) AS amounts FROM {raw} "
        "WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds"))


def test_a_having_grouped_by_the_time_column_is_admitted_and_built_in_slices(spark, isolated, raw):
    # only 2024-01-01 has two sales: HAVING keeps that day's group and drops the others
    _sliced_build_equals_full_recomputation(spark, isolated, raw, (
        "SELECT ds, COUNT(*) AS n, SUM(amount) AS total FROM {raw} "
        "WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds HAVING COUNT(*) > 1"))


MONTHLY = ("MODEL (\n  name {name},\n  kind INCREMENTAL_BY_TIME_RANGE (time_column ds),\n  start '2024-01-01',\n"
           "  cron '{cron}'\n);\n\n"
           "SELECT DATE_TRUNC('MONTH', ds) AS ds, SUM(amount) AS total\nFROM {raw}\n"
           "WHERE ds BETWEEN @start_ds AND @end_ds\nGROUP BY 1\n")


def test_a_time_column_written_coarser_than_the_interval_is_refused_until_the_interval_fits(
        spark, isolated, raw, tmp_path):
    # daily slices of a month label: each would hold one day's sum, kept on the month's first day only
    name, model = f"{isolated}.monthly", tmp_path / "models" / "monthly.sql"
    model.parent.mkdir()
    model.write_text(MONTHLY.format(name=name, raw=raw, cron="@daily"))

    planned = [r for r in _call(spark, "plan", project=str(tmp_path), execution_time=T) if r.model == name]
    with pytest.raises(Exception) as refused:
        _call(spark, "apply", project=str(tmp_path), execution_time=T)

    assert planned and "Refused by the incremental safety check" in planned[0].reason
    message = str(refused.value)
    assert f"refused model '{name}' ({model})" in message
    assert ("line 8, column 8: DATE_TRUNC('MONTH', ds) AS ds: a time column written coarser than the model's "
            "interval") in message
    assert ("set interval_unit to month and a cron no more frequent (cron @monthly alone sets both), or write the "
            "time column ds at its own grain") in message
    assert tables_in(spark, f"{isolated}_physical", isolated) == set()
    assert state_rows(spark, isolated).get("intervals", 0) == 0

    model.write_text(MONTHLY.format(name=name, raw=raw, cron="@monthly"))
    _call(spark, "apply", project=str(tmp_path), execution_time="2024-02-01")

    expected = spark.sql(f"SELECT DATE_TRUNC('MONTH', ds) AS ds, SUM(amount) AS total FROM {raw} GROUP BY 1")
    assert_df_equality(spark.table(name).select("ds", "total"), expected, ignore_nullable=True)
