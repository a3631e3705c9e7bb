"""INCREMENTAL_BY_UNIQUE_KEY: upserts by key through CALL statements, checked with chispa against golden rows.

Delta's MERGE text lives in ``fixtures/unique_key_sql/<case>.sql``: header lines
``-- table: <db.physical>``, ``-- interval: <start> / <end>`` and optionally
``-- table_map: <model> = <db.table>``, then the MODEL definition, then a line
``-- expected:`` and the expected Spark SQL (whitespace-insensitive).
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from chispa import assert_df_equality
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals import Interval, to_ms
from pyspark_incr.model.definition import parse_model
from pyspark_incr.writers import BuildContext, generations, unique_key
from conftest import call as _call, physical

SQL_FIXTURES = sorted((Path(__file__).parent / "fixtures" / "unique_key_sql").glob("*.sql"))
SCHEMA = "region STRING, id INT, name STRING, amount INT, ds DATE"
EQUAL = dict(ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)


def _model(name: str, query: str, kind: str, **extra: str) -> str:
    props = "".join(f", {k} {v}" for k, v in extra.items())
    return (f"MODEL (name {name}, kind INCREMENTAL_BY_UNIQUE_KEY ({kind}), start '2024-01-01', cron '@daily'{props}); "
            + query)


def _raw(spark, prefix: str, rows: list[tuple], schema: str = SCHEMA, name: str = "events") -> str:
    """``rows`` as the table ``<prefix>_raw.<name>`` (replacing it), for models to read."""
    table = f"{prefix}_raw.{name}"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.createDataFrame(rows, schema).write.format("parquet").saveAsTable(table)
    return table


def _expect(spark, rows: list[tuple], schema: str = "region STRING, id INT, name STRING, amount INT, ds DATE"):
    return spark.createDataFrame(rows, schema)


def _d(day: int) -> date:
    return date(2024, 1, day)


def _query(raw: str) -> str:
    return f"SELECT region, id, name, amount, ds FROM {raw} WHERE ds BETWEEN @start_ds AND @end_ds"


# --------------------------------------------------------------------------- Delta MERGE text (no Spark)


def _sql_case(path: Path) -> tuple[dict[str, str], str, str]:
    text = path.read_text()
    head, _, expected = text.partition("-- expected:")
    header = {}
    for line in head.splitlines():
        key, sep, value = line[3:].partition(":") if line.startswith("-- ") else ("", "", "")
        if sep and key.strip() in ("table", "interval", "table_map"):
            header[key.strip()] = value.strip()
    return header, head, " ".join(expected.split())


def _quoted_table(name: str) -> exp.Table:
    db, _, table = name.partition(".")
    return exp.table_(table, db=db, quoted=True)


@pytest.mark.parametrize("case", SQL_FIXTURES, ids=[p.name for p in SQL_FIXTURES])
def test_delta_merge_statement_matches_the_fixture(case: Path):
    header, definition, expected = _sql_case(case)
    start, _, end = header["interval"].partition(" / ")
    table_map = {}
    if "table_map" in header:
        model_name, _, table = header["table_map"].partition(" = ")
        table_map[model_name.strip()] = _quoted_table(table.strip())
    model = parse_model(definition)
    ctx = BuildContext(None, model, _quoted_table(header["table"]), to_ms(end), table_map)

    statement = unique_key.DeltaMerge().statement(ctx, Interval(to_ms(start), to_ms(end)))

    assert statement.sql("spark") == expected


def test_the_fixtures_cover_composite_keys_clauses_filters_and_macros():
    texts = " ".join(p.read_text() for p in SQL_FIXTURES)
    for needle in ("unique_key (", "COALESCE", "THEN DELETE", "merge_filter", "@start_date", "table_map"):
        assert needle in texts


def test_a_new_table_gets_the_strategy_of_the_models_table_format(spark, isolated):
    def strategy(fmt: str):
        model = parse_model(f"MODEL (name a.b, kind INCREMENTAL_BY_UNIQUE_KEY (unique_key id), table_format {fmt}); "
                            "SELECT 1 AS id")
        ctx = BuildContext(spark, model, exp.table_("t", db=isolated, quoted=True), 0, rebuild=True)
        return type(unique_key.strategy_for(ctx))

    assert (strategy("parquet"), strategy("delta")) == (unique_key.ParquetUpsert, unique_key.DeltaMerge)


@pytest.mark.parametrize("clause, message", [
    ("WHEN NOT MATCHED THEN INSERT *", "allows only WHEN MATCHED clauses"),
    ("WHEN MATCHED THEN UPDATE SET source.x = 1", "can only set target columns"),
])
def test_when_matched_clauses_the_kind_cannot_honour_are_refused_before_building(clause, message):
    model = parse_model(f"MODEL (name a.b, kind INCREMENTAL_BY_UNIQUE_KEY (unique_key id, when_matched {clause})); "
                        "SELECT 1 AS id")

    with pytest.raises(ModelDefinitionError, match=f"model a.b: when_matched {message}"):
        unique_key.UniqueKeyWriter().check(model)


# --------------------------------------------------------------------------- Parquet, end to end


def test_upserts_by_composite_key_over_three_runs_insert_update_and_keep_untouched_keys(spark, isolated):
    raw = _raw(spark, isolated, [
        ("eu", 1, "a", 10, _d(1)), ("eu", 2, "b", 20, _d(1)), ("us", 1, "c", 30, _d(1)),
        ("eu", 1, "a2", 11, _d(2)), ("us", 2, "d", 40, _d(2)),
        ("us", 1, "c3", 33, _d(3)), ("eu", 3, "e", 50, _d(3)),
    ])
    name = f"{isolated}.accounts"
    _call(spark, "create_model", definition=_model(name, _query(raw), "unique_key (region, id)"))

    first = _call(spark, "apply", execution_time="2024-01-02 00:00:00")
    after_one = spark.table(name).collect()
    second = _call(spark, "run", execution_time="2024-01-03 00:00:00")
    after_two = spark.table(name).collect()
    third = _call(spark, "run", execution_time="2024-01-04 00:00:00")

    assert [(r.status, r.rows) for r in first + second + third] == [("ok", 3), ("ok", 2), ("ok", 2)]
    schema = spark.table(name).schema
    assert_df_equality(spark.createDataFrame(after_one, schema), _expect(spark, [
        ("eu", 1, "a", 10, _d(1)), ("eu", 2, "b", 20, _d(1)), ("us", 1, "c", 30, _d(1))]), **EQUAL)
    assert_df_equality(spark.createDataFrame(after_two, schema), _expect(spark, [
        ("eu", 1, "a2", 11, _d(2)), ("eu", 2, "b", 20, _d(1)), ("us", 1, "c", 30, _d(1)),
        ("us", 2, "d", 40, _d(2))]), **EQUAL)
    assert_df_equality(spark.table(name), _expect(spark, [
        ("eu", 1, "a2", 11, _d(2)), ("eu", 2, "b", 20, _d(1)), ("us", 1, "c3", 33, _d(3)),
        ("us", 2, "d", 40, _d(2)), ("eu", 3, "e", 50, _d(3))]), **EQUAL)


def test_when_matched_coalesce_keeps_the_old_value_where_the_new_one_is_null(spark, isolated):
    raw = _raw(spark, isolated, [
        ("eu", 1, "a", 10, _d(1)), ("eu", 2, "b", 20, _d(1)),
        ("eu", 1, None, 15, _d(2)), ("eu", 2, "b2", None, _d(2)), ("eu", 3, None, None, _d(2)),
    ])
    name = f"{isolated}.accounts"
    when_matched = ("when_matched (WHEN MATCHED THEN UPDATE SET target.name = COALESCE(source.name, target.name), "
                    "target.amount = COALESCE(source.amount, target.amount), target.ds = source.ds)")
    _call(spark, "create_model", definition=_model(name, _query(raw), f"unique_key id, {when_matched}"))

    rows = _call(spark, "apply", execution_time="2024-01-03 00:00:00", per_partition=True)

    assert [(r.status, r.rows) for r in rows] == [("ok", 2), ("ok", 3)]
    assert_df_equality(spark.table(name), _expect(spark, [
        ("eu", 1, "a", 15, _d(2)), ("eu", 2, "b2", 20, _d(2)), ("eu", 3, None, None, _d(2))]), **EQUAL)


def test_the_first_when_matched_clause_whose_condition_holds_decides_and_delete_removes_the_row(spark, isolated):
    raw = _raw(spark, isolated, [
        ("eu", 1, "a", 10, _d(1)), ("eu", 2, "b", 20, _d(1)), ("eu", 3, "c", 30, _d(1)), ("eu", 4, "d", 40, _d(1)),
        ("eu", 1, "DELETE", 0, _d(2)), ("eu", 2, "b2", 25, _d(2)), ("eu", 3, "c2", 5, _d(2)),
        ("eu", 5, "DELETE", 0, _d(2)),
    ])
    name = f"{isolated}.accounts"
    when_matched = ("when_matched (WHEN MATCHED AND source.name = 'DELETE' THEN DELETE "
                    "WHEN MATCHED AND source.amount > target.amount THEN UPDATE SET *)")
    _call(spark, "create_model", definition=_model(name, _query(raw), f"unique_key id, {when_matched}"))

    _call(spark, "apply", execution_time="2024-01-03 00:00:00", per_partition=True)

    # 1 deleted; 2 grew (updated); 3 shrank (no clause holds: kept); 4 untouched; 5 is new: inserted as is.
    assert_df_equality(spark.table(name), _expect(spark, [
        ("eu", 2, "b2", 25, _d(2)), ("eu", 3, "c", 30, _d(1)), ("eu", 4, "d", 40, _d(1)),
        ("eu", 5, "DELETE", 0, _d(2))]), **EQUAL)


def test_merge_filter_limits_which_target_rows_a_batch_may_match(spark, isolated):
    raw = _raw(spark, isolated, [
        ("eu", 1, "a", 10, _d(1)), ("eu", 2, "b", 20, _d(1)),
        ("eu", 3, "c", 30, _d(2)),
        ("eu", 1, "a3", 11, _d(3)), ("eu", 3, "c3", 33, _d(3)),
    ])
    name = f"{isolated}.accounts"
    merge_filter = "merge_filter target.ds >= DATE_SUB(@start_date, 1)"
    _call(spark, "create_model", definition=_model(name, _query(raw), f"unique_key id, {merge_filter}",
                                                   partitioned_by="ds"))

    _call(spark, "apply", execution_time="2024-01-04 00:00:00", per_partition=True)

    # On 2024-01-03 only rows of the day before may match: key 3 is updated; key 1's old row lies outside
    # the filter, so (as in MERGE) it is not matched: it stays, and the new row is inserted beside it.
    assert_df_equality(spark.table(name), _expect(spark, [
        ("eu", 1, "a", 10, _d(1)), ("eu", 2, "b", 20, _d(1)), ("eu", 1, "a3", 11, _d(3)),
        ("eu", 3, "c3", 33, _d(3))]), **EQUAL)


def test_a_row_moved_to_a_partition_the_batch_did_not_read_keeps_that_partitions_rows(spark, isolated):
    raw = _raw(spark, isolated, [("eu", 1, "a", 10, _d(1)), ("us", 2, "b", 20, _d(1)), ("eu", 1, "a2", 11, _d(2))])
    name = f"{isolated}.accounts"
    when_matched = "when_matched (WHEN MATCHED THEN UPDATE SET target.name = source.name, target.region = 'us')"
    _call(spark, "create_model", definition=_model(name, _query(raw), f"unique_key id, {when_matched}",
                                                   partitioned_by="region"))

    _call(spark, "apply", execution_time="2024-01-03 00:00:00", per_partition=True)

    # Day 2 touches partition eu only, but its update sends key 1 to us: us is read and rewritten too,
    # keeping key 2, and eu, left without rows, is emptied.
    expected = _expect(spark, [("us", 1, "a2", 10, _d(1)), ("us", 2, "b", 20, _d(1))])
    assert_df_equality(spark.table(name).select(*expected.columns), expected, **EQUAL)
    assert [r[0] for r in spark.sql(f"SHOW PARTITIONS {physical(spark, name)}").collect()] == ["region=us"]


def test_duplicate_keys_in_a_batch_fail_it_naming_a_key_and_change_nothing(spark, isolated):
    rows = [("eu", 1, "a", 10, _d(1)), ("us", 1, "b", 20, _d(1)),
            ("eu", 1, "a2", 11, _d(2)), ("eu", 1, "a3", 12, _d(2)), ("us", 2, "c", 30, _d(2))]
    raw = _raw(spark, isolated, rows)
    name = f"{isolated}.accounts"
    _call(spark, "create_model", definition=_model(name, _query(raw), "unique_key (region, id)", partitioned_by="ds"))
    _call(spark, "apply", execution_time="2024-01-02 00:00:00")
    before = spark.table(name).collect()

    failed = _call(spark, "run", execution_time="2024-01-03 00:00:00")

    assert [r.status for r in failed] == ["failed"]
    message = failed[0].message
    assert f"Model {name}: unique_key (region, id) is not unique in the batch [2024-01-02, 2024-01-03)" in message
    assert "key (region='eu', id=1) appears 2 times; nothing was written" in message
    assert_df_equality(spark.table(name), spark.createDataFrame(before, spark.table(name).schema), **EQUAL)
    gaps = [(r.state, r.start.date()) for r in _call(spark, "status", model=name, execution_time="2024-01-03 00:00:00")]
    assert ("missing", date(2024, 1, 2)) in gaps

    _raw(spark, isolated, [r for r in rows if r[2] != "a3"])
    fixed = _call(spark, "run", execution_time="2024-01-03 00:00:00")

    assert [r.status for r in fixed] == ["ok"]
    assert_df_equality(spark.table(name), _expect(spark, [
        ("eu", 1, "a2", 11, _d(2)), ("us", 1, "b", 20, _d(1)), ("us", 2, "c", 30, _d(2))]), **EQUAL)


def _files_by_partition(spark, table: str) -> dict[date, set[str]]:
    """The table's data files per partition, listed from storage (superseded files are deleted on publish)."""
    location = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").where("col_name = 'Location'").first().data_type
    root = spark._jvm.org.apache.hadoop.fs.Path(location)
    files = root.getFileSystem(spark._jsc.hadoopConfiguration()).listFiles(root, True)
    out: dict[date, set[str]] = {}
    while files.hasNext():
        path = str(files.next().getPath())
        if path.endswith(".parquet") and "/ds=" in path:
            out.setdefault(date.fromisoformat(path.split("/ds=")[1][:10]), set()).add(path)
    return out


def test_a_batch_touching_one_partition_of_365_rewrites_only_that_partition(spark, isolated):
    first = date(2024, 1, 1)
    days = [first + timedelta(days=i) for i in range(365)]
    loaded = [(2 * i + k, f"v{2 * i + k}", d, d) for i, d in enumerate(days) for k in (0, 1)]
    june = date(2024, 6, 15)
    june_ids = [r[0] for r in loaded if r[2] == june]
    fix_day = days[-1] + timedelta(days=1)
    corrections = [(june_ids[0], "fixed", june, fix_day), (9999, "new", june, fix_day)]
    schema = "id INT, value STRING, ds DATE, loaded DATE"
    raw = _raw(spark, isolated, loaded + corrections, schema, name="changes")
    name = f"{isolated}.facts"
    query = f"SELECT id, value, ds FROM {raw} WHERE loaded BETWEEN @start_ds AND @end_ds"
    _call(spark, "create_model", definition=_model(name, query, "unique_key id", partitioned_by="ds"))
    _call(spark, "apply", execution_time=f"{fix_day} 00:00:00")
    before = _files_by_partition(spark, physical(spark, name))

    rows = _call(spark, "run", execution_time=f"{fix_day + timedelta(days=1)} 00:00:00")
    after = _files_by_partition(spark, physical(spark, name))

    assert [(r.status, r.rows) for r in rows] == [("ok", 2)]
    assert len(before) == 365 and set(after) == set(before)
    assert {d for d in days if after[d] != before[d]} == {june}, "only the touched partition has new files"
    assert not after[june] & before[june], "the touched partition was rewritten whole"
    expected = [(i, "fixed" if i == june_ids[0] else v, d) for i, v, d, _ in loaded] + [(9999, "new", june)]
    assert_df_equality(spark.table(name), spark.createDataFrame(expected, "id INT, value STRING, ds DATE"), **EQUAL)


@pytest.mark.parametrize("layout", ["partitioned", "unpartitioned"])
def test_upsert_crashing_between_stage_and_publish_leaves_the_previous_version_and_a_rerun_converges(
        spark, isolated, monkeypatch, layout):
    # The isolated prefix is cut to 40 characters, so both layouts share it: names carry the layout.
    raw = _raw(spark, isolated, [("eu", 1, "a", 10, _d(1)), ("eu", 2, "b", 20, _d(1)),
                                 ("eu", 1, "a2", 11, _d(2)), ("us", 3, "c", 30, _d(2))], name=f"events_{layout}")
    name = f"{isolated}.accounts_{layout}"
    extra = {"partitioned_by": "ds"} if layout == "partitioned" else {}
    _call(spark, "create_model", definition=_model(name, _query(raw), "unique_key id", **extra))
    _call(spark, "apply", execution_time="2024-01-02 00:00:00")
    before = spark.table(name).collect()
    seen = {}

    def crash(spark_, table, staged, *args, **kwargs):
        seen["readers"], seen["staged"] = spark.table(name).collect(), staged.path
        raise RuntimeError("injected crash between stage and publish")

    monkeypatch.setattr(generations, "publish", crash)
    failed = _call(spark, "run", execution_time="2024-01-03 00:00:00")
    after_failure = spark.table(name).collect()
    monkeypatch.undo()
    rerun = _call(spark, "run", execution_time="2024-01-03 00:00:00")

    assert [(r.status, "Injected crash" in r.message) for r in failed] == [("failed", True)]
    schema = spark.table(name).schema
    for version in (seen["readers"], after_failure):
        assert_df_equality(spark.createDataFrame(version, schema), spark.createDataFrame(before, schema), **EQUAL)
    path = spark._jvm.org.apache.hadoop.fs.Path(seen["staged"])
    assert not path.getFileSystem(spark._jsc.hadoopConfiguration()).exists(path), "the staged generation is discarded"
    assert [r.status for r in rerun] == ["ok"]
    assert_df_equality(spark.table(name), _expect(spark, [
        ("eu", 1, "a2", 11, _d(2)), ("eu", 2, "b", 20, _d(1)), ("us", 3, "c", 30, _d(2))]), **EQUAL)


def _generated(seed: int) -> list[tuple]:
    """Six days of changes to 12 keys: values (some NULL) and regions that change, one day without rows."""
    rng = random.Random(seed)
    quiet = rng.randrange(1, 7)
    rows = []
    for day in range(1, 7):
        if day == quiet:
            continue
        for n, key in enumerate(rng.sample(range(12), rng.randrange(1, 9))):
            value = None if rng.random() < 0.2 else rng.randrange(100)
            rows.append((key, rng.choice(["eu", "us", "apac"]), value, datetime(2024, 1, day, 1, n), _d(day)))
    return rows


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_daily_batches_equal_one_batch_over_the_whole_range(spark, isolated, seed):
    raw = _raw(spark, isolated, _generated(seed), "id INT, region STRING, value INT, ts TIMESTAMP, ds DATE",
               name=f"events_{seed}")
    query = (f"SELECT id, max_by(region, ts) AS region, max_by(value, ts) AS value, MAX(ts) AS ts FROM {raw} "
             "WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY id")
    daily, whole = f"{isolated}.daily_{seed}", f"{isolated}.whole_{seed}"
    _call(spark, "create_model", definition=_model(daily, query, "unique_key id, batch_size 1", partitioned_by="region"))
    _call(spark, "create_model", definition=_model(whole, query, "unique_key id"))

    rows = _call(spark, "apply", execution_time="2024-01-07 00:00:00")

    assert sorted((r.model, r.status) for r in rows) == sorted([(daily, "ok")] * 6 + [(whole, "ok")])
    truth = spark.sql(f"SELECT id, max_by(region, ts) AS region, max_by(value, ts) AS value, MAX(ts) AS ts "
                      f"FROM {raw} GROUP BY id")
    assert_df_equality(spark.table(whole), truth, **EQUAL)
    assert_df_equality(spark.table(daily).select(*truth.columns), truth, **EQUAL)


# --------------------------------------------------------------------------- Delta, where its jars are present


def _require_delta(spark) -> None:
    try:
        spark._jvm.java.lang.Class.forName("io.delta.tables.DeltaTable")
    except Exception:  # noqa: BLE001 - py4j wraps ClassNotFoundException
        pytest.skip("Delta Lake is not on the classpath (io.delta.tables.DeltaTable); its jars come from Maven, "
                    "which these machines cannot reach")


def test_delta_merge_gives_the_same_rows_as_the_parquet_rewrite(spark, isolated):
    _require_delta(spark)
    raw = _raw(spark, isolated, [("eu", 1, "a", 10, _d(1)), ("eu", 2, "b", 20, _d(1)),
                                 ("eu", 1, None, 11, _d(2)), ("eu", 2, "DELETE", 0, _d(2)), ("us", 3, "c", 30, _d(2))])
    kind = ("unique_key (region, id), when_matched (WHEN MATCHED AND source.name = 'DELETE' THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET target.name = COALESCE(source.name, target.name), "
            "target.amount = source.amount)")
    results = {}
    for fmt in ("delta", "parquet"):
        model = parse_model(_model(f"{isolated}.m_{fmt}", _query(raw), kind, table_format=fmt))
        table = exp.table_(f"m_{fmt}", db=isolated, quoted=True)
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}")
        spark.sql(f"CREATE TABLE {table.sql('spark')} ({SCHEMA}) USING {fmt}")
        ctx = BuildContext(spark, model, table, to_ms("2024-01-03"))
        for day in (1, 2):
            unique_key.strategy_for(ctx).write(ctx, Interval(to_ms(str(_d(day))), to_ms(str(_d(day + 1)))))
        results[fmt] = spark.table(table.sql("spark"))

    expected = _expect(spark, [("eu", 1, "a", 11, _d(1)), ("us", 3, "c", 30, _d(2))])
    assert_df_equality(results["parquet"], expected, **EQUAL)
    assert_df_equality(results["delta"], expected, **EQUAL)


def test_a_delta_model_is_built_by_merge_through_apply_and_run(spark, isolated):
    _require_delta(spark)
    raw = _raw(spark, isolated, [("eu", 1, "a", 10, _d(1)), ("eu", 2, "b", 20, _d(1)),
                                 ("eu", 1, "a2", 11, _d(2)), ("us", 3, "c", 30, _d(2))])
    name = f"{isolated}.accounts"
    _call(spark, "create_model", definition=_model(name, _query(raw), "unique_key id", table_format="delta"))

    first = _call(spark, "apply", execution_time="2024-01-02 00:00:00")
    second = _call(spark, "run", execution_time="2024-01-03 00:00:00")

    assert [(r.status, r.rows) for r in first + second] == [("ok", 2), ("ok", 2)]
    assert_df_equality(spark.table(name), _expect(spark, [
        ("eu", 1, "a2", 11, _d(2)), ("eu", 2, "b", 20, _d(1)), ("us", 3, "c", 30, _d(2))]), **EQUAL)
