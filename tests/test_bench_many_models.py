"""bench/many_models.py's arithmetic and schedule, with no Spark: its table, its limit, its refusals."""

from __future__ import annotations

import time
from datetime import date

import pytest
from bench_module import load


SAMPLES = {"all": [260.0, 250.0, 300.0, 240.0, 255.0], "alone": [200.0, 210.0, 190.0, 205.0, 220.0],
           "noop": [30.0, 35.0, 31.0, 29.0, 40.0]}
#: This process's CPU in the same calls: what the wall-clock figures hold of pyspark-incr's Python side.
CPU = {"all": [120.0, 110.0, 130.0, 100.0, 115.0], "alone": [40.0, 45.0, 38.0, 41.0, 50.0],
       "noop": [20.0, 22.0, 19.0, 21.0, 30.0]}


def test_the_table_shows_each_median_and_what_the_idle_models_cost(capsys):
    bench = load("many_models")

    code = bench.report(SAMPLES, models=1000, max_ms=300, cpu=CPU)
    out = capsys.readouterr().out

    assert code == 0
    assert "medians of 5 interleaved rounds" in out
    assert "| run | ms | Python CPU ms |" in out
    assert "| a: 1000 models, one due | 255 | 115 |" in out
    assert "| b: the due model alone | 205 | 41 |" in out
    assert "| c: 1000 models, nothing due | 31.0 | 21.0 |" in out
    assert "| a - b: cost of the 999 idle models | 50 | 74 |" in out


def test_timed_gives_the_wall_clock_and_the_cpu_this_process_spent_apart():
    bench = load("many_models")

    waited = bench.timed(lambda: time.sleep(0.2))
    spun = bench.timed(lambda: sum(range(3_000_000)))

    assert waited[0] >= 200 and waited[1] < 50, waited  # a wait (a JVM's work) costs this process no CPU
    assert spun[1] > 20, spun  # a loop of 3,000,000 additions: tens of ms of this process's CPU


def test_a_median_above_max_ms_fails():
    bench = load("many_models")

    assert bench.report(SAMPLES, models=1000, max_ms=250, cpu=CPU) == 1


def test_fewer_than_five_rounds_are_refused_before_spark_starts(capsys):
    bench = load("many_models")

    with pytest.raises(SystemExit) as refused:
        bench.main(["--rounds", "4"])

    assert refused.value.code == 2
    assert "--rounds: at least 5" in capsys.readouterr().err


def test_the_timed_runs_stay_in_one_month_so_the_monthly_models_stay_idle():
    bench = load("many_models")

    assert bench.schedule(date(2024, 2, 29), 16) == (None, date(2024, 3, 2)), "after the set-up: no catch-up"
    # a kept home whose month is running out: a catch-up on the next month's first day builds the monthly ones
    assert bench.schedule(date(2024, 3, 20), 16) == (date(2024, 4, 1), date(2024, 4, 2))
    assert bench.schedule(date(2024, 3, 30), 16) == (date(2024, 4, 1), date(2024, 4, 2)), "due on the 1st"
    assert bench.schedule(date(2025, 1, 30), 28) == (date(2025, 3, 1), date(2025, 3, 2)), "February is too short"


def test_a_kept_set_up_is_refused_with_another_metastore_before_spark_starts(tmp_path, capsys):
    bench = load("many_models")
    (tmp_path / bench.MARKER).write_text('{"models": 3}')  # a set-up made before --metastore: embedded

    with pytest.raises(SystemExit) as refused:
        bench.main(["--home", str(tmp_path), "--keep", "--models", "3", "--metastore"])

    assert refused.value.code == 2
    assert "holds a set-up whose metastore is 'embedded'" in capsys.readouterr().err
