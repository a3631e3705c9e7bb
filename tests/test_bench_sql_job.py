"""bench/sql_job.py's and bench/cold_pairs.py's plans and arithmetic: which job builds which day, and their tables."""

from __future__ import annotations

from bench_module import load


def test_every_round_runs_each_contender_once_and_the_incr_jobs_build_their_shared_homes_days_in_order():
    sql_job = load("sql_job")

    plan = sql_job.schedule(rounds=4, first_day=375)

    assert [jobs[0][0] for jobs in plan] == ["bare", "incr", "incr-late", "bare"]  # who goes first rotates
    incr_days = [k for jobs in plan for name, k in jobs if name != "bare"]
    assert incr_days == list(range(375, 383))  # each day once, in order: no run catches up a day skipped
    for r, jobs in enumerate(plan):
        assert sorted(name for name, _ in jobs) == sorted(sql_job.CONTENDERS)
        assert dict(jobs)["bare"] == 375 + 2 * r
    assert dict(plan[2])["incr-late"] == 379 and dict(plan[2])["incr"] == 380  # incr-late runs first in round 3


def test_the_hand_written_job_overwrites_the_day_and_pyspark_incr_runs_as_of_the_next_midnight():
    sql_job = load("sql_job")
    common = load("peers/common")

    bare, incr = sql_job.statement("bare", 375), sql_job.statement("incr", 375)

    assert bare.startswith("INSERT OVERWRITE TABLE bench.daily PARTITION (ds) SELECT ")
    assert f"ds BETWEEN DATE '{common.day(375)}' AND DATE '{common.day(375)}'" in bare
    assert incr == f"CALL incr.run(execution_time => '{common.day(376)} 00:00:00', raise_on_failure => true)"


def test_only_the_pyspark_incr_jobs_carry_the_plugin_and_only_the_late_one_starts_its_worker_at_the_call(tmp_path):
    sql_job = load("sql_job")
    spec = sql_job.Spec(work=str(tmp_path))

    bare, incr, late = (sql_job.settings(spec, name) for name in sql_job.CONTENDERS)

    assert "spark.sql.extensions" not in bare and bare["spark.sql.sources.partitionOverwriteMode"] == "dynamic"
    assert incr["spark.incr.worker.eager"] == "auto" and late["spark.incr.worker.eager"] == "false"
    assert incr["spark.incr.stateSchema"] == "incr_state_a" == late["spark.incr.stateSchema"]
    shared = {k for k in bare if k != "spark.sql.sources.partitionOverwriteMode"}
    for key in shared - {"spark.sql.warehouse.dir", "spark.hadoop.javax.jdo.option.ConnectionURL",
                         "spark.driver.extraJavaOptions", "spark.app.name"}:
        assert bare[key] == incr[key], key  # the same Spark settings; only the home differs
    assert all("log4j2.configurationFile=" in c["spark.driver.extraJavaOptions"] for c in (bare, incr, late))
    assert "--driver-class-path" in sql_job.command(spec, "incr", "SELECT 1")
    assert "--driver-class-path" not in sql_job.command(spec, "bare", "SELECT 1")


def test_the_table_gives_each_contenders_median_and_its_ratio_to_the_hand_written_job():
    sql_job = load("sql_job")

    table = sql_job.report({"bare": [10.0, 12.0, 11.0], "incr": [11.0, 13.2, 12.1], "incr-late": [14.0, 13.0, 12.0]})

    assert "| bare | 10.00 / 12.00 / 11.00 | 11.00 s | 1.00 |" in table
    assert "| incr | 11.00 / 13.20 / 12.10 | 12.10 s | 1.10 |" in table
    assert "| incr-late | 14.00 / 13.00 / 12.00 | 13.00 s | 1.18 |" in table


def test_cold_pairs_alternate_who_goes_first_and_report_medians_of_whole_processes_and_steps():
    cold_pairs = load("cold_pairs")
    samples = [{"tool": tool, "seconds": whole, "in_process": step}
               for tool, whole, step in (("incr", 11.0, 3.0), ("bare", 10.0, 2.5), ("bare", 9.0, 2.0),
                                         ("incr", 10.2, 2.8), ("incr", 9.9, 2.7), ("bare", 9.5, 2.6))]

    table = cold_pairs.report(samples)

    assert [cold_pairs.order(p)[0] for p in range(4)] == ["incr", "bare", "incr", "bare"]
    assert "| bare | 10.00 / 9.00 / 9.50 | 9.50 s | 2.50 s | 1.00 |" in table
    assert "| incr | 11.00 / 10.20 / 9.90 | 10.20 s | 2.80 s | 1.07 |" in table
