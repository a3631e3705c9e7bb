"""``pyspark-incr validate``: every problem of a project, offline, with its file and line; no JVM."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyspark_incr import cli
from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.project.loader import load

ROOT = Path(__file__).resolve().parents[1]
GOOD = "MODEL (name v.{name}, kind FULL);\nSELECT 1 AS x\n"
#: One broken file per kind of check validate makes offline; each problem's file and the line it names.
BROKEN = {
    "config.yaml": ("model_defaults:\n  dialect: spark\n  crom: '@daily'\n", None),
    "models/unknown_property.sql": ("MODEL (\n  name v.a,\n  kind FULL,\n  bogus 1\n);\nSELECT 1 AS x\n", 4),
    "models/bad_query.sql": ("MODEL (name v.b, kind FULL);\n\nSELECT x FROM WHERE\n", 3),
    "models/unknown_audit.sql": ("MODEL (name v.c, kind FULL, audits (no_such_audit));\nSELECT 1 AS x\n", 1),
    "models/unsafe.sql": ("MODEL (name v.d, kind INCREMENTAL_BY_TIME_RANGE (time_column ds));\n"
                          "SELECT ds FROM raw.t\nLIMIT 10\n", 3),
    "models/cycle_a.sql": ("MODEL (name v.e, kind FULL);\nSELECT * FROM v.f\n", 1),
    "models/cycle_b.sql": ("MODEL (name v.f, kind FULL);\nSELECT * FROM v.e\n", None),
    "models/seed.sql": ("MODEL (name v.s, kind SEED (path '../seeds/s.csv'), columns (id INT, price DOUBLE));\n", None),
    "seeds/s.csv": ("id,cost\n1,2.5\n", 1),
    "audits/broken.sql": ("AUDIT (name broken;\nSELECT 1\n", 1),
    "models/audit_args.sql": ("MODEL (name v.g, kind FULL, audits (not_null));\nSELECT 1 AS x\n", 1),
    "models/layout.sql": ("MODEL (name v.h, kind FULL, storage_format 'xml');\nSELECT 1 AS x\n", None),
    "external_models.yaml": ("- name: raw.t\n  colums: {ds: date}\n", None),
}


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_validate_reports_every_broken_file_with_its_line_and_exits_1(tmp_path, capsys):
    files = {name: text for name, (text, _) in BROKEN.items()}
    root = _project(tmp_path / "p", files | {"models/ok.sql": GOOD.format(name="ok")})

    assert cli.main(["validate", str(root)]) == 1

    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if not line.startswith(" ")]
    for name, (_, line) in BROKEN.items():
        if name in ("models/cycle_b.sql", "models/seed.sql"):  # reported once: at cycle_a.sql, at the CSV
            continue
        where = f"{root / name}:{line}: " if line else f"{root / name}: "
        assert any(l.startswith(where) for l in lines), f"no problem reported at {where}:\n{out}"
    assert "unknown model_defaults key 'crom'; did you mean 'cron'?" in out
    assert "models depend on each other in a cycle" in out
    assert "Incremental safety check refused model 'v.d'" in out
    assert "declared columns price are not in the seed file" in out
    assert "audit not_null needs columns := ..." in out
    assert "storage_format 'xml' is not one of" in out
    assert "entry 1: unknown key(s) colums" in out
    assert "models/ok.sql" not in out
    assert f"{root}: 11 problem(s) in 11 file(s)" in out


def test_the_calls_still_stop_at_the_first_problem(tmp_path):
    root = _project(tmp_path / "p", {name: text for name, (text, _) in BROKEN.items()})

    with pytest.raises(ModelDefinitionError, match="unknown model_defaults key 'crom'"):
        load(root)
    (root / "config.yaml").unlink()
    with pytest.raises(ModelDefinitionError, match="audit") as raised:  # the audit file is read before the models
        load(root)
    assert "broken.sql" in str(raised.value)


def test_validate_of_a_valid_project_prints_one_line_naming_what_it_did_not_check(capsys):
    assert cli.main(["validate", str(ROOT / "examples" / "quickstart")]) == 0

    out = capsys.readouterr().out.strip()
    assert "\n" not in out
    assert out.startswith(f"{ROOT / 'examples' / 'quickstart'}: valid: 3 models, 0 seeds")
    assert "safety check passed (1 time-sliced)" in out
    assert "Not checked offline: Spark's analysis of the queries and the catalog tables they read " \
           "(quickstart_raw.events)" in out


def test_validate_without_a_models_folder_says_so_and_exits_1(tmp_path, capsys):
    assert cli.main(["validate", str(tmp_path)]) == 1

    assert "no models/ directory there; pass the project root" in capsys.readouterr().out


def test_validate_starts_no_java_and_takes_well_under_a_jvm_start(tmp_path):
    # With no Java to find, any attempt to start a JVM would fail the command.
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java"), "SPARK_HOME": str(tmp_path / "no-spark"),
           "PATH": os.path.dirname(sys.executable)}
    script = ("import sys\nfrom pyspark_incr.cli import main\ncode = main(['validate', sys.argv[1]])\n"
              "from pyspark import SparkContext\n"
              "print(code, SparkContext._gateway is None and SparkContext._active_spark_context is None)\n")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script, str(ROOT / "examples" / "shop")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "0 True"
    assert "valid: 11 models" in done.stdout
    assert "the catalog tables they read (shop_raw.orders)" in done.stdout  # an EXTERNAL model's table
    # CPU seconds, not wall time, which a shared test machine stretches: validate needs ~1.5 s, a Spark start
    # ~5 s of wall time on an idle machine
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 3, f"validate used {cpu:.1f} s of CPU ({elapsed:.1f} s wall)"
