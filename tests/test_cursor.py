"""INCREMENTAL_BY_CURSOR through CALL statements: each due run appends the rows above MAX(cursor_column)."""

from __future__ import annotations

import random
from datetime import datetime

import pytest
from chispa import assert_df_equality

from conftest import call as _call

DAY2, DAY3, DAY4, DAY5 = (f"2024-01-0{d} 01:00:00" for d in (2, 3, 4, 5))


def _raw(spark, prefix: str) -> str:
    """Source events: one an hour from 2024-01-01 01:00, plus one exactly at and one before the initial value."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.sql(f"DROP TABLE IF EXISTS {prefix}_raw.events")
    spark.sql(f"""CREATE TABLE {prefix}_raw.events USING parquet AS
        SELECT id, TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, CAST(id AS INT), 0, 0) AS ts
        FROM range(0, 6) UNION ALL SELECT -1, TIMESTAMP'2023-12-31 12:00:00'""")
    return f"{prefix}_raw.events"


def _add(spark, raw: str, *rows: tuple[int, str]) -> None:
    values = ", ".join(f"({i}, TIMESTAMP'{ts}')" for i, ts in rows)
    spark.sql(f"INSERT INTO {raw} VALUES {values}")


def _ts_model(name: str, raw: str, select: str = "id, ts, @is_backfill AS backfill") -> str:
    """A TIMESTAMP cursor whose query filters on @last_value itself."""
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_CURSOR (cursor_column ts, initial_value '2024-01-01'), "
            f"cron '@daily', start '2024-01-01'); SELECT {select} FROM {raw} WHERE ts > @last_value")


def _golden(spark, rows: str, columns: str = "id, ts, backfill"):
    return spark.sql(f"SELECT * FROM VALUES {rows} AS t({columns})")


def _assert_table(spark, name: str, expected) -> None:
    actual = spark.table(name).select(*expected.columns)
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)


def _rows(results) -> list[tuple[str, int | None]]:
    return [(r.status, r.rows) for r in results]


def test_first_load_reads_rows_strictly_above_initial_value_with_is_backfill_true(spark, isolated):
    raw, name = _raw(spark, isolated), f"{isolated}.feed"
    _call(spark, "create_model", definition=_ts_model(name, raw))

    results = _call(spark, "apply", execution_time=DAY2)

    assert _rows(results) == [("ok", 5)]
    _assert_table(spark, name, _golden(spark, ", ".join(
        f"({i}L, TIMESTAMP'2024-01-01 0{i}:00:00', true)" for i in range(1, 6))))


def test_each_run_appends_only_rows_above_the_high_water_mark_with_is_backfill_false(spark, isolated):
    raw, name = _raw(spark, isolated), f"{isolated}.feed"
    _call(spark, "create_model", definition=_ts_model(name, raw))
    _call(spark, "apply", execution_time=DAY2)

    _add(spark, raw, (6, "2024-01-02 00:00:00"), (7, "2024-01-02 06:00:00"),
         (50, "2024-01-01 03:30:00"))  # arrives late, below the mark: missed, as the spec warns
    first = _call(spark, "run", execution_time=DAY3)
    _add(spark, raw, (8, "2024-01-03 00:00:00"),
         (51, "2024-01-02 06:00:00"))  # equal to the mark: not re-read (strictly greater)
    second = _call(spark, "run", execution_time=DAY4)
    _add(spark, raw, (9, "2024-01-04 00:00:00"), (10, "2024-01-04 00:00:01"))
    third = _call(spark, "run", execution_time=DAY5)

    assert [_rows(r) for r in (first, second, third)] == [[("ok", 2)], [("ok", 1)], [("ok", 2)]]
    loaded = ", ".join(f"({i}L, TIMESTAMP'2024-01-01 0{i}:00:00', true)" for i in range(1, 6))
    _assert_table(spark, name, _golden(spark, loaded + """,
        (6L, TIMESTAMP'2024-01-02 00:00:00', false), (7L, TIMESTAMP'2024-01-02 06:00:00', false),
        (8L, TIMESTAMP'2024-01-03 00:00:00', false), (9L, TIMESTAMP'2024-01-04 00:00:00', false),
        (10L, TIMESTAMP'2024-01-04 00:00:01', false)"""))


def test_a_due_run_without_new_rows_appends_nothing_and_a_run_not_yet_due_does_not_run(spark, isolated):
    raw, name = _raw(spark, isolated), f"{isolated}.feed"
    _call(spark, "create_model", definition=_ts_model(name, raw))
    _call(spark, "apply", execution_time=DAY2)

    nothing_new = _call(spark, "run", execution_time=DAY3)
    _add(spark, raw, (6, "2024-01-03 12:00:00"))
    not_due = _call(spark, "run", execution_time="2024-01-03 23:00:00")
    due = _call(spark, "run", execution_time=DAY4)

    assert _rows(nothing_new) == [("ok", 0)]
    assert not_due == [], "the day is not over: nothing is due, so nothing is appended"
    assert _rows(due) == [("ok", 1)]
    assert spark.table(name).count() == 6


def test_a_changed_definition_rebuilds_the_table_from_initial_value_as_a_backfill(spark, isolated):
    raw, name = _raw(spark, isolated), f"{isolated}.feed"
    _call(spark, "create_model", definition=_ts_model(name, raw))
    _call(spark, "apply", execution_time=DAY2)
    _add(spark, raw, (6, "2024-01-02 00:00:00"), (50, "2024-01-01 03:30:00"))  # 50 is late: missed by the cursor
    _call(spark, "run", execution_time=DAY3)

    _call(spark, "create_model", definition=_ts_model(name, raw, "id, ts, @is_backfill AS backfill, id * 10 AS tenfold"))
    planned = _call(spark, "plan", execution_time=DAY3)
    rebuilt = _call(spark, "apply", execution_time=DAY3)

    assert [(r.change, r.intervals) for r in planned] == [("changed", 2)]
    assert _rows(rebuilt) == [("ok", 7)]
    everything = [(i, f"2024-01-01 0{i}:00:00") for i in range(1, 6)] + [(6, "2024-01-02 00:00:00"), (50, "2024-01-01 03:30:00")]
    _assert_table(spark, name, _golden(spark, ", ".join(f"({i}L, TIMESTAMP'{ts}', true, {i * 10}L)" for i, ts in everything),
                                       "id, ts, backfill, tenfold"))


def test_a_failed_append_leaves_the_mark_unchanged_and_the_rerun_appends_each_row_once(spark, isolated):
    raw, name = _raw(spark, isolated), f"{isolated}.feed"
    spark.sql(f"CREATE TABLE {isolated}_raw.fail USING parquet AS SELECT false AS fail")
    # id 8 fails its task while the job runs, after the other rows' tasks may have written their files.
    select = (f"CASE WHEN id = 8 AND (SELECT MAX(fail) FROM {isolated}_raw.fail) "
              "THEN CAST(raise_error('injected failure') AS BIGINT) ELSE id END AS id, ts, @is_backfill AS backfill")
    _call(spark, "create_model", definition=_ts_model(name, raw, select))
    _call(spark, "apply", execution_time=DAY2)
    spark.sql(f"INSERT OVERWRITE {isolated}_raw.fail SELECT true")
    _add(spark, raw, *[(i, f"2024-01-02 0{i - 6}:00:00") for i in range(6, 10)])

    failed = _call(spark, "run", execution_time=DAY3)
    after_failure = spark.sql(f"SELECT COUNT(*) AS n, MAX(ts) AS mark FROM {name}").first()
    spark.sql(f"INSERT OVERWRITE {isolated}_raw.fail SELECT false")
    rerun = _call(spark, "run", execution_time=DAY3)
    later = _call(spark, "run", execution_time=DAY4)

    assert [(r.status, "injected failure" in r.message) for r in failed] == [("failed", True)]
    assert (after_failure.n, str(after_failure.mark)) == (5, "2024-01-01 05:00:00")
    assert _rows(rerun) == [("ok", 4)] and _rows(later) == [("ok", 0)]
    _assert_table(spark, name, _golden(spark, ", ".join(
        [f"({i}L, TIMESTAMP'2024-01-01 0{i}:00:00', true)" for i in range(1, 6)]
        + [f"({i}L, TIMESTAMP'2024-01-02 0{i - 6}:00:00', false)" for i in range(6, 10)])))


def test_the_timestamp_mark_is_the_same_instant_whatever_the_session_time_zone(spark, isolated):
    raw, name = _raw(spark, isolated), f"{isolated}.feed"
    _call(spark, "create_model", definition=_ts_model(name, raw))
    _add(spark, raw, (6, "2024-01-02 00:00:00"))
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")  # +05:30: a text round trip would shift the mark
    try:
        first = _call(spark, "apply", execution_time=DAY2)
        _add(spark, raw, (7, "2024-01-02 00:00:00.000001+00:00"))  # one microsecond above the mark
        second = _call(spark, "run", execution_time=DAY3)
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)

    assert _rows(first) == [("ok", 6)] and _rows(second) == [("ok", 1)]
    assert sorted(r.id for r in spark.table(name).collect()) == [1, 2, 3, 4, 5, 6, 7]


def test_a_bigint_cursor_without_last_value_in_the_query_is_filtered_automatically(spark, isolated):
    raw, name = _raw(spark, isolated), f"{isolated}.ids"
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_BY_CURSOR (cursor_column id), cron '@daily', start '2024-01-01'); "
        f"SELECT id, @is_backfill AS backfill FROM {raw}"))

    first = _call(spark, "apply", execution_time=DAY2)
    _add(spark, raw, (7, "2024-01-01 00:00:00"), (3, "2024-01-02 00:00:00"))  # 3 is below the mark 5: missed
    second = _call(spark, "run", execution_time=DAY3)

    assert _rows(first) == [("ok", 7)], "no initial_value: the first load reads every row"
    assert _rows(second) == [("ok", 1)]
    _assert_table(spark, name, _golden(spark, "(-1L, true), (0L, true), (1L, true), (2L, true), (3L, true), "
                                       "(4L, true), (5L, true), (7L, false)", "id, backfill"))


def test_last_value_is_a_typed_literal_of_the_cursor_column_type(spark, isolated):
    raw, name = _raw(spark, isolated), f"{isolated}.marks"
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_BY_CURSOR (cursor_column id, initial_value 3), cron '@daily', "
        f"start '2024-01-01'); SELECT id, typeof(@last_value) AS mark_type, @last_value AS mark FROM {raw}"))

    _call(spark, "apply", execution_time=DAY2)
    _add(spark, raw, (9, "2024-01-03 00:00:00"))
    _call(spark, "run", execution_time=DAY3)

    _assert_table(spark, name, _golden(spark, "(4L, 'bigint', 3L), (5L, 'bigint', 3L), (9L, 'bigint', 5L)",
                                       "id, mark_type, mark"))


def test_last_value_in_a_model_of_another_kind_is_refused_when_the_model_is_created(spark, isolated):
    raw = _raw(spark, isolated)

    with pytest.raises(Exception, match="@last_value is only available in INCREMENTAL_BY_CURSOR models"):
        _call(spark, "create_model", definition=(
            f"MODEL (name {isolated}.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ts)); "
            f"SELECT ts FROM {raw} WHERE ts > @last_value"))


@pytest.mark.parametrize(("column", "select", "error"), [
    ("updated_at", "id, ts", "cursor_column 'updated_at' is not a column of the query's output"),
    ("flag", "id, id > 2 AS flag", "cursor_column 'flag' is boolean"),
])
def test_a_cursor_column_the_output_lacks_or_cannot_order_fails_before_any_table_exists(spark, isolated, column, select, error):
    raw, name = _raw(spark, isolated), f"{isolated}.bad"
    _call(spark, "create_model", definition=(
        f"MODEL (name {name}, kind INCREMENTAL_BY_CURSOR (cursor_column {column})); SELECT {select} FROM {raw}"))

    rows = _call(spark, "apply", execution_time=DAY2)

    assert [(r.action, r.status) for r in rows] == [("create", "failed")]
    assert error in rows[0].message
    assert not spark.catalog.tableExists(name)


RAW_SCHEMA = "id BIGINT, ts TIMESTAMP, seq BIGINT, amount INT"


def _waves(seed: int) -> list[list[tuple]]:
    """Rows arriving in 3 to 5 waves (some empty); every cursor value (``ts`` and ``seq``) of a wave is above
    every earlier wave's, while rows of one wave may share a value."""
    rng = random.Random(seed)
    waves, next_id = [], 0
    for wave in range(rng.randint(3, 5)):
        rows = []
        for _ in range(0 if wave and rng.random() < 0.25 else rng.randint(1, 8)):
            hour = rng.randrange(24)
            rows.append((next_id, datetime(2024, 1, 1 + wave, hour), wave * 100 + hour, rng.choice([None, *range(-5, 20)])))
            next_id += 1
        waves.append(rows)
    return waves


def _equivalence_model(name: str, raw: str, cursor: str, initial: str | None, filters_itself: bool) -> str:
    kind = f"cursor_column {cursor}" + (f", initial_value {initial}" if initial else "")
    own_filter = f" AND {cursor} > @last_value" if filters_itself else ""
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_CURSOR ({kind}), cron '@daily', start '2024-01-01'); "
            f"SELECT id, ts, seq, amount * 2 AS doubled FROM {raw} WHERE (amount IS NULL OR amount > 3){own_filter}")


@pytest.mark.parametrize(("seed", "cursor", "initial", "filters_itself"), [
    (3, "ts", "'2024-01-01 06:00:00'", True),
    (5, "seq", None, False),
    (8, "seq", "7", True),
])
def test_waved_rows_equal_one_first_load(spark, isolated, seed, cursor, initial, filters_itself):
    """Runs appending rows as they arrive in waves build what one first load after the last wave builds.

    (A short name: the isolated prefix keeps 40 characters, and each seed needs its own state.)
    """
    raw, waved, once = f"{isolated}_raw.events_{seed}", f"{isolated}.waved_{seed}", f"{isolated}.once_{seed}"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}_raw")
    spark.sql(f"CREATE TABLE {raw} ({RAW_SCHEMA}) USING parquet")
    waves = _waves(seed)
    results = []
    for day, rows in enumerate(waves, start=2):
        if rows:
            spark.createDataFrame(rows, RAW_SCHEMA).write.insertInto(raw)
        if day == 2:
            _call(spark, "create_model", definition=_equivalence_model(waved, raw, cursor, initial, filters_itself))
        results += _call(spark, "apply" if day == 2 else "run", execution_time=f"2024-01-{day:02d} 01:00:00")

    _call(spark, "create_model", definition=_equivalence_model(once, raw, cursor, initial, filters_itself))
    first_load = _call(spark, "apply", execution_time=f"2024-01-{len(waves) + 1:02d} 01:00:00")

    assert [(r.model, r.status) for r in results] == [(waved, "ok")] * len(waves), "every wave's run was due"
    assert [(r.model, r.status) for r in first_load] == [(once, "ok")]
    assert spark.table(once).count() > 0, "the dataset must give the property something to compare"
    assert_df_equality(spark.table(waved), spark.table(once), ignore_row_order=True, ignore_nullable=True,
                       ignore_metadata=True)


def test_files_a_killed_append_left_in_the_commit_directory_are_not_published_by_the_next_append(spark, isolated):
    """A SIGKILLed INSERT leaves its committed tasks' files under <table>/_temporary/0/; Hadoop's job commit
    would move them into the table with the next append's own rows (found by bench/crash.py)."""
    import shutil
    from pathlib import Path

    from conftest import physical

    raw, name = _raw(spark, isolated), f"{isolated}.feed"
    _call(spark, "create_model", definition=_ts_model(name, raw))
    _call(spark, "apply", execution_time=DAY2)
    table = spark.sql(f"DESCRIBE TABLE EXTENDED {physical(spark, name)}").where("col_name = 'Location'").first()
    root = Path(table.data_type.removeprefix("file:"))
    dead = root / "_temporary" / "0" / "task_202401010000_0001_m_000000"
    dead.mkdir(parents=True)
    shutil.copy(next(root.glob("part-*.parquet")), dead / "part-00000-dead.snappy.parquet")
    _add(spark, raw, (6, "2024-01-02 00:00:00"))

    _call(spark, "run", execution_time=DAY3)

    ids = [r.id for r in spark.table(name).collect()]
    assert sorted(ids) == [1, 2, 3, 4, 5, 6], "no row of the dead job was published"
