"""The side-by-side benchmark's report: medians per contender and mode, ratios, and what a contender cannot run."""

from __future__ import annotations

from pathlib import Path

from bench_module import load


def _sample(tool, mode, workload, seconds):
    return {"tool": tool, "mode": mode, "workload": workload, "seconds": seconds}


def test_report_shows_medians_and_ratios_per_workload():
    compare = load("compare")
    samples = [_sample("bare", "warm", "b", s) for s in (1.0, 3.0, 2.0)]
    samples += [_sample("incr", "warm", "b", s) for s in (2.2, 2.4)]
    samples += [_sample("sqlmesh", "warm", "b", 4.6)]

    result = compare.medians(samples)
    table = compare.table(result, ["bare", "incr", "sqlmesh"], "warm")

    assert result[("bare", "warm", "b")] == 2.0
    row = next(line for line in table.splitlines() if line.startswith("| b:"))
    assert row.split(" | ")[1:] == ["2.00 s", "2.30 s", "4.60 s", "1.15", "2.00 |"]


def test_a_workload_a_contender_cannot_run_is_marked_not_applicable():
    compare = load("compare")
    samples = [{"tool": "dbt", "mode": "warm", "workload": "f", "skipped": "snapshots need Delta"},
               _sample("incr", "warm", "f", 0.5)]

    table = compare.table(compare.medians(samples), ["incr", "dbt"], "warm")

    row = next(line for line in table.splitlines() if line.startswith("| f:"))
    assert row.split(" | ")[1:] == ["500 ms", "n/a", "- |"]


def test_reading_through_opens_every_file_under_a_directory_and_passes_over_what_is_missing(tmp_path, monkeypatch):
    common = load("peers/common")
    (tmp_path / "data" / "ds=1").mkdir(parents=True)
    for name in ("ds=1/part-0.parquet", "part-1.parquet"):
        (tmp_path / "data" / name).write_bytes(b"x" * 10)
    (tmp_path / "jar").write_bytes(b"y")
    opened = []
    real_open = Path.open
    monkeypatch.setattr(Path, "open", lambda self, *a, **k: opened.append(self.name) or real_open(self, *a, **k))

    common.read_through(tmp_path / "data", tmp_path / "jar", tmp_path / "missing")

    assert sorted(opened) == ["jar", "part-0.parquet", "part-1.parquet"]


def test_pyspark_incr_is_timed_with_its_bytecode_written_as_an_installed_wheel_has_it():
    import importlib.util

    import pyspark_incr.bridge.session as module

    common = load("peers/common")
    common.compiled_as_installed()

    pyc = Path(importlib.util.cache_from_source(module.__file__))
    assert pyc.is_file() and pyc.stat().st_mtime >= Path(module.__file__).stat().st_mtime


def test_expected_scd2_versions_match_the_generated_snapshots(spark, tmp_path):
    from pyspark.sql import functions as F

    common = load("peers/common")
    spec = common.Spec(work=str(tmp_path), rows=20, days=2, extra_days=0, keys=1_234, snapshots=3, cold_snapshots=2)
    common.generate(spark, spec)
    items = spark.read.parquet(str(spec.data / "items"))

    for snapshot in range(spec.snapshots + spec.cold_snapshots):
        seen = items.where(F.col("snap") <= snapshot).select("item_id", "price").distinct().count()
        assert common.expected_rows(spark, spec, "f", snapshot) == seen


def test_the_incr_contender_points_its_session_at_a_workload_once_not_before_every_call(tmp_path):
    run_incr = load("peers/run_incr")
    common = load("peers/common")

    class Conf:
        def __init__(self):
            self.sets = []

        def set(self, key, value):
            self.sets.append((key, value))

    class Session:
        conf = Conf()

    tool = run_incr.Incr(Session(), common.Spec(work=str(tmp_path)))
    for workload in ("a", "a", "e", "e", "a"):
        tool._use(workload)

    assert [value for _, value in Session.conf.sets] == [
        "incr_state_a", "incr_physical_a", "incr_state_e", "incr_physical_e", "incr_state_a", "incr_physical_a"]


def test_the_scd2_first_load_is_timed_three_times_each_from_nothing_after_an_untimed_first_load(tmp_path, monkeypatch):
    common = load("peers/common")
    spec = common.Spec(work=str(tmp_path), snapshots=4, reps_a=1, reps_b=1, reps_c=1, reps_d=1, reps_e=1)
    emitted, calls = [], []
    monkeypatch.setattr(common, "emit", lambda **fields: emitted.append(fields))
    monkeypatch.setattr(common, "point_items", lambda spark, snap: calls.append(("snapshot", snap)))

    class Catalog:
        def refreshTable(self, name):
            pass

    class Session:
        catalog = Catalog()

    class Recorder(common.Tool):
        name, keeps_state = "recorder", True

        def __getattribute__(self, attr):
            if attr in ("reset", "create_state", "backfill", "run", "check"):
                return lambda *args: calls.append((attr, *args))
            return super().__getattribute__(attr)

    common.warm(Recorder(Session(), spec))

    timed = [(r["workload"], r["rep"]) for r in emitted if r["workload"] in ("f0", "f")]
    assert timed == [("f0", 0), ("f0", 1), ("f0", 2), ("f", 1), ("f", 2), ("f", 3)]
    scd2 = calls[calls.index(("reset", "f")):]
    first_loads = [k for k, call in enumerate(scd2) if call == ("run", "f", 0)]
    assert len(first_loads) == 4  # the warm-up's, then the three timed
    assert all(scd2[k - 3:k] == [("reset", "f"), ("create_state", "f"), ("snapshot", 0)] for k in first_loads)
    assert [r["workload"] for r in emitted].count("s") == 1 + 1 + 3  # a, d and each timed first load, not the warm-up


def test_a_cold_process_finds_the_java_runtime_and_its_interpreters_packages_read_through_as_well(tmp_path, monkeypatch):
    compare = load("compare")
    common = load("peers/common")
    spec = common.Spec(work=str(tmp_path))
    read = []
    monkeypatch.setattr(compare, "read_through", lambda *roots: read.append(roots))
    monkeypatch.setattr(compare, "launch", lambda *args: (0.0, []))

    compare.cold_steps(["incr"], spec, tmp_path / "spec.json", {"reps": 1, "f": 0, "a": 0, "d": 0}, set())

    assert len(read) == 3  # b, c and e, one process each
    roots = read[0]
    assert spec.data in roots and spec.home("incr") / "metastore_db" in roots
    assert any((root / "lib" / "modules").is_file() for root in roots)  # the JDK's class library
    assert any((root / "pyspark").is_dir() and (root / "sqlglot").is_dir() for root in roots)  # site-packages


def test_reading_through_reads_a_root_inside_another_root_once(tmp_path, monkeypatch):
    common = load("peers/common")
    (tmp_path / "site" / "pyspark").mkdir(parents=True)
    (tmp_path / "site" / "pyspark" / "spark.jar").write_bytes(b"x")
    (tmp_path / "site" / "pyarrow.so").write_bytes(b"y")
    opened = []
    real_open = Path.open
    monkeypatch.setattr(Path, "open", lambda self, *a, **k: opened.append(self.name) or real_open(self, *a, **k))

    common.read_through(tmp_path / "site" / "pyspark", tmp_path / "site", tmp_path / "site")

    assert sorted(opened) == ["pyarrow.so", "spark.jar"]
