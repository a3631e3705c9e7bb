"""State files are encoded here and moved through the JVM: no Spark job per state read or append,
and Spark itself reads them as the table's rows."""

from __future__ import annotations

from datetime import datetime, timezone

from chispa import assert_df_equality

from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.state import tables as t
from pyspark_incr.state.store import StateStore


def _row(start: int) -> dict:
    return {"table_name": "x", "fingerprint": "f", "model": "m", "start_ms": start, "end_ms": start + 10,
            "op": "add", "run_id": "r", "at": datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)}


def _jobs(spark, group: str) -> list[int]:
    return list(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def test_state_appends_and_reads_start_no_spark_job(spark, isolated):
    StateStore(spark).ensure()
    spark.sparkContext.setJobGroup("state-probe", "state I/O")
    try:
        StateStore(spark).append(t.INTERVALS, [_row(0)])
        rows = StateStore(spark).read(t.INTERVALS)
        StateStore(spark).append(t.INTERVALS, [_row(10)])
        again = StateStore(spark).read(t.INTERVALS)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)

    assert (rows.num_rows, again.num_rows) == (1, 2)
    assert _jobs(spark, "state-probe") == []


def test_spark_reads_appended_state_as_the_tables_own_rows(spark, isolated):
    StateStore(spark).append(t.INTERVALS, [_row(0), _row(10)])

    read_by_spark = spark.table(f"{isolated}_state.intervals").drop("seq").orderBy("start_ms")
    expected = spark.createDataFrame(
        [("x", "f", "m", 0, 10, "add", "r", datetime(2024, 1, 2, 3, 4, 5)),
         ("x", "f", "m", 10, 20, "add", "r", datetime(2024, 1, 2, 3, 4, 5))],
        read_by_spark.schema)
    assert_df_equality(read_by_spark, expected, ignore_nullable=True)


def test_rows_spark_wrote_into_a_state_table_are_read_in_its_types(spark, isolated):
    StateStore(spark).ensure()
    spark.sql(f"INSERT INTO {isolated}_state.intervals VALUES "
              "('y', 'f', 'm', 0, 5, 'add', 'r', 7, TIMESTAMP '2024-01-02 03:04:05')")  # Spark's own INT96

    rows = StateStore(spark).read(t.INTERVALS).to_pylist()

    assert rows == [{"table_name": "y", "fingerprint": "f", "model": "m", "start_ms": 0, "end_ms": 5, "op": "add",
                     "run_id": "r", "seq": 7, "at": datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)}]


def test_a_state_schema_dropped_while_the_application_runs_is_created_again(spark, isolated):
    StateStore(spark).append(t.INTERVALS, [_row(0)])
    spark.sql(f"DROP DATABASE {isolated}_state CASCADE")

    rows = StateStore(spark).read(t.INTERVALS)
    StateStore(spark).append(t.INTERVALS, [_row(10)])

    assert rows.num_rows == 0
    assert spark.table(f"{isolated}_state.intervals").count() == 1


def test_a_new_process_reads_a_tables_many_files_in_one_jvm_call(spark, isolated, monkeypatch):
    from pyspark_incr.runtime import discard
    from pyspark_incr.state import files

    for start in range(0, 50, 10):
        StateStore(spark).append(t.INTERVALS, [_row(start)])  # five appends: five files
    discard(spark)  # a new application: no file seen yet
    reads, shim = [], files.shim_class

    class Noted:  # the StateFiles methods called, in order
        def __init__(self, found):
            self.found = found

        def __getattr__(self, method):
            reads.append(method)
            return getattr(self.found, method)

    monkeypatch.setattr(files, "shim_class", lambda spark_, name: Noted(shim(spark_, name)))
    rows = StateStore(spark).read(t.INTERVALS)

    assert sorted(rows["start_ms"].to_pylist()) == [0, 10, 20, 30, 40]
    assert [m for m in reads if m.startswith("read")] == ["readAll"]


def _interval(start: int, end: int, op: str, seq: int | None = None) -> dict:
    row = {**_row(start), "end_ms": end, "op": op}
    return row if seq is None else {**row, "seq": seq}


def test_coverage_folds_only_the_rows_of_files_that_appeared_since(spark, isolated, monkeypatch):
    from pyspark_incr.state import built

    folded, fold = [], built.coverage_of
    monkeypatch.setattr(built, "coverage_of", lambda rows, since=None: folded.append(rows.num_rows) or fold(rows, since))
    StateStore(spark).append(t.INTERVALS, [_interval(0, 10, "add"), _interval(20, 30, "add")])
    first = StateStore(spark).coverage()
    StateStore(spark).append(t.INTERVALS, [_interval(5, 25, "remove")])
    StateStore(spark).append(t.INTERVALS, [_interval(8, 9, "add")])
    second = StateStore(spark).coverage()

    assert folded == [2, 2]  # the first two rows once; then the two new files' rows, not all four
    assert first == {"x": IntervalSet([Interval(0, 10), Interval(20, 30)])}
    assert second == {"x": IntervalSet([Interval(0, 5), Interval(8, 9), Interval(25, 30)])}


def test_a_file_of_rows_older_than_those_folded_folds_everything_again(spark, isolated):
    # a slow writer's rows land after a later one's were read: they still fold in seq order
    StateStore(spark).append(t.INTERVALS, [_interval(0, 10, "add", seq=2_000)])
    assert StateStore(spark).coverage() == {"x": IntervalSet([Interval(0, 10)])}
    StateStore(spark).append(t.INTERVALS, [_interval(0, 10, "remove", seq=1_000)])

    assert StateStore(spark).coverage() == {"x": IntervalSet([Interval(0, 10)])}
