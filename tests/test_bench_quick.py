"""The hot-path benchmarks' arithmetic: quick.py's limits and ratio, breakdown.py's attribution of Spark's work."""

from __future__ import annotations

import pytest

from bench_module import load

from pyspark_incr import timings


SAMPLES = {"b incr": [600.0, 660.0, 640.0, 700.0, 650.0], "b bare": [500.0] * 5,
           "c incr": [30.0, 35.0, 31.0, 29.0, 40.0], "floor": [20.0] * 5}


def test_quick_prints_the_median_ratio_and_passes_within_the_limits(capsys):
    quick = load("quick")

    code = quick.report(SAMPLES, max_ratio=1.5, max_noop_ms=40)
    out = capsys.readouterr().out

    assert code == 0
    assert "| b: the next day | 500 | 650 | 1.30 |" in out
    assert "| c: nothing due | n/a | 31.0 | - |" in out


def test_quick_exits_non_zero_naming_each_limit_exceeded(capsys):
    quick = load("quick")

    code = quick.report(SAMPLES, max_ratio=1.2, max_noop_ms=30)
    out = capsys.readouterr().out

    assert code == 1
    assert "FAILED b: incr / bare 1.30 is above --max-ratio 1.2" in out
    assert "FAILED c: 31.0 ms is above --max-noop-ms 30" in out


def test_breakdown_counts_sparks_work_in_every_phase_it_started_in():
    breakdown = load("breakdown")
    work = load("spark_work")
    phases = [timings.Phase("run", "run", "t", 0.0, 1.0), timings.Phase("plan", "run/plan", "t", 0.0, 0.1),
              timings.Phase("batch", "run/batch", "t", 0.2, 0.9, statements=1, statement_ms=5.0),
              timings.Phase("write", "run/batch/write", "t", 0.25, 0.8)]
    spark = [work.Work("job", 1, 0.3, 0.5, "write"), work.Work("sql", 7, 0.28, 0.6, "insert")]

    rows = breakdown.phase_rows(timings.Profile("run", phases), spark)

    assert (rows["run/batch/write"]["jobs"], rows["run/batch/write"]["sqls"]) == (1, 1)
    assert rows["run"]["job ms"] == rows["run/batch"]["job ms"] == rows["run/batch/write"]["job ms"]
    assert rows["run/plan"]["jobs"] == 0
    assert round(rows["run"]["self ms"]) == 200, "the run less its plan (100 ms) and its batch (700 ms)"
    assert rows["run/batch"]["stmts"] == 1


def test_quick_prints_the_scd2_rows_and_their_ratios_when_timed(capsys):
    quick = load("quick")
    samples = {**SAMPLES, "f0 incr": [2600.0], "f0 bare": [2000.0], "f incr": [3900.0, 3000.0, 3300.0],
               "f bare": [2500.0, 3000.0, 2000.0]}

    quick.report(samples, max_ratio=None, max_noop_ms=None)
    out = capsys.readouterr().out

    assert "| f0: SCD2 first load (one sample) | 2000 | 2600 | 1.30 |" in out
    assert "| f: SCD2 one snapshot | 2500 | 3300 | 1.32 |" in out


def test_quick_prints_the_repeated_first_loads_against_the_plain_and_the_deduplicating_hand_written_one(capsys):
    quick = load("quick")
    samples = {**SAMPLES, "f0w incr": [1800.0, 1500.0, 1600.0], "f0w bare": [600.0, 500.0, 800.0],
               "f0w dedup": [1000.0, 1200.0, 1100.0]}

    quick.report(samples, max_ratio=None, max_noop_ms=None)
    out = capsys.readouterr().out

    assert "| f0 again, warm (median of 3) | 600 | 1600 | 2.67 |" in out
    assert "| f0 again, against a hand-written first load keeping one row per key | 1100 | 1600 | 1.45 |" in out


def test_quick_prints_the_first_backfills_median_and_ratio_when_timed(capsys):
    quick = load("quick")
    samples = {**SAMPLES, "a incr": [25900.0, 26100.0, 25500.0], "a bare": [25700.0, 25100.0, 24100.0]}

    quick.report(samples, max_ratio=None, max_noop_ms=None)
    out = capsys.readouterr().out

    assert "| a: first backfill (median of 3) | 25100 | 25900 | 1.03 |" in out


def test_quick_prints_every_metastore_call_count_each_step_made(capsys):
    quick = load("quick")
    calls = {"b incr": [11, 11, 12, 11, 11], "b bare": [20] * 5, "c incr": [2] * 5}

    quick.report(SAMPLES, max_ratio=None, max_noop_ms=None, calls=calls)
    out = capsys.readouterr().out

    assert "Hive metastore client calls a step (every count seen): b incr 11/12, b bare 20, c incr 2" in out


def test_quick_refuses_a_postgresql_metastore_without_the_service(capsys):
    quick = load("quick")

    with pytest.raises(SystemExit):
        quick.main(["--postgres", "postgresql://incr:incr@127.0.0.1:5432/x"])

    assert "--postgres: only with --metastore" in capsys.readouterr().err


def test_breakdown_sums_each_jvm_methods_round_trips_per_run_and_takes_their_median():
    breakdown = load("breakdown")
    runs = [[("describe", 20.0), ("save", 300.0), ("tableNames", 2.0), ("tableNames", 3.0)],
            [("describe", 30.0), ("save", 280.0), ("tableNames", 4.0), ("tableNames", 4.0)],
            [("describe", 25.0), ("save", 320.0), ("tableNames", 1.0), ("tableNames", 2.0)]]

    lines = breakdown.trips_table("daily", runs).strip().splitlines()

    assert lines[0] == "## daily"
    assert lines[2].split() == ["(all)", "4", "325.0"], "the median run's count and ms"
    assert [line.split()[0] for line in lines[3:]] == ["save", "describe", "tableNames"], "the costliest first"
    assert lines[5].split() == ["tableNames", "2", "5.0"], "a method's calls within a run are summed"
