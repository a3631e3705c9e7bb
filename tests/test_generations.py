"""Generation swaps: a staged rewrite is invisible until published, then wholly visible."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from datetime import date, datetime

from chispa import assert_df_equality
from sqlglot import exp

from pyspark_incr import trips
from pyspark_incr.writers import generations, tables


def _table(spark, prefix: str, name: str, partitioned: bool = True) -> exp.Table:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}")
    spark.sql(f"DROP TABLE IF EXISTS {prefix}.{name}")
    parts = " PARTITIONED BY (ds)" if partitioned else ""
    spark.sql(f"CREATE TABLE {prefix}.{name} (k INT, v STRING, ds DATE) USING parquet{parts}")
    spark.sql(f"""INSERT INTO {prefix}.{name} VALUES
        (1, 'old', DATE'2024-01-01'), (2, 'old', DATE'2024-01-02'), (3, 'old', DATE'2024-01-03')""")
    return exp.to_table(f"{prefix}.{name}")


def _rows(spark, table: exp.Table) -> list[tuple]:
    return sorted((r.k, r.v, r.ds) for r in spark.table(table.sql("spark")).collect())


def _files_under(spark, location: str) -> list[str]:
    path = spark._jvm.org.apache.hadoop.fs.Path(location)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    files, it = [], fs.listFiles(path, True)
    while it.hasNext():
        name = str(it.next().getPath())
        if name.endswith(".parquet"):
            files.append(name[len(location):])
    return files


def test_a_staged_generation_is_invisible_until_published_then_replaces_exactly_its_partitions(spark, isolated):
    table = _table(spark, isolated, "t")
    new = spark.createDataFrame([(20, "new", date(2024, 1, 2)), (40, "new", date(2024, 1, 4))], "k INT, v STRING, ds DATE")

    staged = generations.stage(spark, table, new, ("ds",))
    before_publish = _rows(spark, table)
    generations.publish(spark, table, staged, ("ds",), emptied=[{"ds": "2024-01-03"}])

    assert before_publish == [(1, "old", date(2024, 1, 1)), (2, "old", date(2024, 1, 2)), (3, "old", date(2024, 1, 3))]
    assert sorted(dict(p)["ds"] for p in staged.partitions) == ["2024-01-02", "2024-01-04"]
    assert _rows(spark, table) == [(1, "old", date(2024, 1, 1)), (20, "new", date(2024, 1, 2)),
                                   (40, "new", date(2024, 1, 4))]
    partitions = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {table.sql('spark')}").collect())
    assert partitions == ["ds=2024-01-01", "ds=2024-01-02", "ds=2024-01-04"], "an emptied partition is forgotten"
    root = generations.table_root(tables.location(spark, table))
    files = _files_under(spark, root)
    assert not any(f.startswith("/ds=2024-01-02/") or f.startswith("/ds=2024-01-03/") for f in files), \
        "superseded partition directories are deleted"
    assert any(f.startswith("/ds=2024-01-01/") for f in files), "untouched partitions keep their files"


def test_a_staged_generation_holds_its_data_files_and_no_success_marker(spark, isolated):
    table = _table(spark, isolated, "t")
    new = spark.createDataFrame([(20, "new", date(2024, 1, 2))], "k INT, v STRING, ds DATE")

    staged = generations.stage(spark, table, new, ("ds",))
    path = spark._jvm.org.apache.hadoop.fs.Path(staged.path)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    names, it = [], fs.listFiles(path, True)
    while it.hasNext():
        names.append(it.next().getPath().getName())
    generations.discard(spark, staged)

    assert [n for n in names if n.endswith(".parquet")], "the rows are written"
    assert not [n for n in names if "_SUCCESS" in n], "a generation is published by the catalog, not by a marker"


def test_a_batch_failing_between_stage_and_publish_leaves_the_previous_version(spark, isolated):
    table = _table(spark, isolated, "t")
    before = spark.table(table.sql("spark")).collect()
    staged = generations.stage(spark, table, spark.createDataFrame([(9, "x", date(2024, 1, 1))], "k INT, v STRING, ds DATE"),
                               ("ds",))

    generations.discard(spark, staged)  # what a writer does when its batch fails after staging

    assert_df_equality(spark.table(table.sql("spark")), spark.createDataFrame(before, spark.table(table.sql("spark")).schema),
                       ignore_row_order=True)
    assert not any(generations.GEN_PREFIX in f for f in _files_under(spark, tables.location(spark, table)))


def test_an_unpartitioned_table_switches_location_and_older_generations_are_deleted(spark, isolated):
    table = _table(spark, isolated, "u", partitioned=False)
    first = generations.stage(spark, table, spark.createDataFrame([(1, "g1", date(2024, 1, 1))], "k INT, v STRING, ds DATE"), ())
    generations.publish(spark, table, first, ())
    second = generations.stage(spark, table, spark.createDataFrame([(2, "g2", date(2024, 1, 1))], "k INT, v STRING, ds DATE"), ())
    generations.publish(spark, table, second, ())

    assert _rows(spark, table) == [(2, "g2", date(2024, 1, 1))]
    root = generations.table_root(tables.location(spark, table))
    assert all(f.startswith("/" + second.path.rpartition("/")[2]) for f in _files_under(spark, root)), \
        "the original files and the first generation are gone"


def test_timestamp_partition_values_with_colons_round_trip_through_a_generation(spark, isolated):
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {isolated}")
    spark.sql(f"CREATE TABLE {isolated}.h (k INT, ts TIMESTAMP) USING parquet PARTITIONED BY (ts)")
    spark.sql(f"INSERT INTO {isolated}.h VALUES (1, TIMESTAMP'2024-01-01 10:00:00')")
    table = exp.to_table(f"{isolated}.h")
    new = spark.sql("SELECT 2 AS k, TIMESTAMP'2024-01-01 10:00:00' AS ts UNION ALL SELECT 3, TIMESTAMP'2024-01-01 11:00:00'")

    generations.publish(spark, table, generations.stage(spark, table, new, ("ts",)), ("ts",))

    assert sorted((r.k, r.ts) for r in spark.table(f"{isolated}.h").collect()) == [
        (2, datetime(2024, 1, 1, 10)), (3, datetime(2024, 1, 1, 11))]
    files = _files_under(spark, tables.location(spark, table))
    assert not any(f.startswith("/ts=") for f in files), "the superseded 10:00 directory is deleted"


def test_publishing_a_new_day_asks_the_metastore_twice_and_shows_the_day(spark, isolated):
    table = _table(spark, isolated, "t")
    staged = generations.stage(spark, table, spark.createDataFrame([(6, "new", date(2024, 1, 6))],
                                                                   "k INT, v STRING, ds DATE"), ("ds",))
    metrics = spark._jvm.org.apache.spark.metrics.source.HiveCatalogMetrics
    before = metrics.METRIC_HIVE_CLIENT_CALLS().getCount()

    generations.publish(spark, table, staged, ("ds",), emptied=[{"ds": "2024-01-06"}])

    # the table read once, the partition added once (before: seven, the session and Hive catalogs checking the
    # schema and the table again before adding)
    assert metrics.METRIC_HIVE_CLIENT_CALLS().getCount() - before == 2
    assert _rows(spark, table) == [(1, "old", date(2024, 1, 1)), (2, "old", date(2024, 1, 2)),
                                   (3, "old", date(2024, 1, 3)), (6, "new", date(2024, 1, 6))]


@contextmanager
def _log(spark):
    """The text every log4j event of this block wrote (an appender on the root logger); read it once the block ends."""
    jvm = spark._jvm
    text = jvm.java.io.StringWriter()
    appender = jvm.org.apache.logging.log4j.core.appender.WriterAppender.createAppender(
        jvm.org.apache.logging.log4j.core.layout.PatternLayout.createDefaultLayout(), None, text, "incr-test-log",
        False, True)
    appender.start()
    context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
    root = context.getConfiguration().getRootLogger()
    root.addAppender(appender, None, None)
    context.updateLoggers()
    written: list[str] = []
    try:
        yield written
    finally:
        root.removeAppender("incr-test-log")
        context.updateLoggers()
        appender.stop()
        written.append(str(text.toString()))


def test_publishing_over_partitions_the_table_has_logs_no_error(spark, isolated):
    table = _table(spark, isolated, "t")
    staged = generations.stage(spark, table, spark.createDataFrame([(20, "new", date(2024, 1, 2))],
                                                                   "k INT, v STRING, ds DATE"), ("ds",))
    hive_client = spark._jvm.org.apache.logging.log4j.LogManager.getLogger("hive.ql.metadata.Hive")

    with _log(spark) as log:
        # the first try adds the day in one transaction; the metastore refuses (it exists) and the day is switched
        generations.publish(spark, table, staged, ("ds",), emptied=[{"ds": "2024-01-02"}])
        hive_client.error("outside the publish")

    assert _rows(spark, table) == [(1, "old", date(2024, 1, 1)), (3, "old", date(2024, 1, 3)),
                                   (20, "new", date(2024, 1, 2))]
    assert "AlreadyExists" not in log[0], "an expected, handled refusal is not logged as an error"
    assert "outside the publish" in log[0], "the Hive client's other errors are still logged"


def test_a_builds_rows_are_counted_and_staged_in_four_round_trips(spark, isolated):
    table = _table(spark, isolated, "t")
    new = spark.createDataFrame([(6, "new", date(2024, 1, 6)), (7, "new", date(2024, 1, 7))], "k INT, v STRING, ds DATE")
    schema, root = new.schema, generations.table_root(tables.location(spark, table))
    # a process's first build looks the shim's class and methods up (a round trip each, once per process)
    generations.discard(spark, generations.stage(spark, table, tables.counted(new)[0], ("ds",)))

    with trips.recorded() as recorded:
        counted, rows = tables.counted(new)
        staged = generations.stage(spark, table, counted, ("ds",), table_schema=schema, root=root, df_schema=schema)
        written = rows()
    sent = [t.method for t in recorded if t.thread == threading.get_ident()]

    # PySpark's Observation and DataFrameWriter took 39 (a column built call by call, a call per option)
    assert len(sent) <= 4, sent
    assert written == 2
    assert sorted(dict(p)["ds"] for p in staged.partitions) == ["2024-01-06", "2024-01-07"]
    generations.publish(spark, table, staged, ("ds",))
    assert _rows(spark, table)[-2:] == [(6, "new", date(2024, 1, 6)), (7, "new", date(2024, 1, 7))]
