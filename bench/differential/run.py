"""Differential suite: SQLMesh-format projects run through SQLMesh 0.236.4 and through pyspark-incr, tables compared.

    bash bench/differential.sh                               # sets up both venvs, then runs every project
    .venv/bin/python bench/differential/run.py --project kinds

Each project under ``projects/`` holds a SQLMesh project and ``steps.yaml``: ``setup`` (Spark SQL
creating the raw tables) and ``steps``, each ``plan: <execution time>`` (SQLMesh: plan, auto-applied;
pyspark-incr: ``CALL incr.apply``), ``run: <execution time>`` (``sqlmesh run`` / ``CALL incr.run``) or
``sql: [statements]`` (new input between steps). After every plan and run, each side dumps every
model's view (``side_common.py``); the two sides run one after the other, each in its own process,
venv, warehouse and metastore. Then the dumps are compared model by model (:func:`compare`): rows
as a multiset, floats to 1e-9 relative, column names and type families (a DATE against a STRING is
a difference; INT against BIGINT only a note).

Prints a table, writes ``bench/out/differential.json``, and exits 1 when a project not listed in
:data:`EXPECTED_FAILURES` differs or fails.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
PROJECTS = HERE / "projects"
ROOT = HERE.parents[1]
OUT = ROOT / "bench" / "out"
SQLMESH_PYTHON = OUT / "venvs" / "sqlmesh" / "bin" / "python"
SIDES = {"sqlmesh": "sqlmesh_side.py", "pyspark-incr": "incr_side.py"}

#: Projects that do not (yet) come out the same, and why. Their failures do not fail the run; one that
#: passes is reported, to be taken off this list.
EXPECTED_FAILURES: dict[str, str] = {
    "kinds": "finding: SQLMesh 0.236.4 defaults invalidate_hard_deletes to false (a deleted key stays open), "
             "pyspark-incr to true (docs/kinds.md); scd2_hard_deletes sets it and compares the rest",
    "scd2_new_key": "documented divergence (docs/kinds.md): a key first seen after the initial load starts at its "
                    "updated_at in pyspark-incr (the spec's Milkshake), at 1970-01-01 in SQLMesh 0.236.4",
    "unique_key": "SQLMesh 0.236.4 upserts with MERGE INTO, which Spark's Parquet tables refuse: its run fails "
                  "(the first plan is compared)",
}

#: A model's result is one of these; only "same" passes.
SAME, DIFFERENT = "same", "different"
#: At most this many differing rows are shown per side.
SHOWN_ROWS = 3
REL_TOL = 1e-9
#: A side still running after this long is stopped and reported as failed (a hung JVM must not stall the suite).
SIDE_TIMEOUT_S = 1800


# --------------------------------------------------------------------------- scenario


def scenario(project: Path) -> dict:
    """The project's ``steps.yaml``, checked: a mistake there names the file and the step."""
    path = project / "steps.yaml"
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list) or not data["steps"]:
        raise ValueError(f"{path}: needs a 'steps' list (plan/run/sql steps)")
    for i, step in enumerate(data["steps"]):
        kinds = [k for k in ("plan", "run", "sql") if k in (step or {})]
        if len(kinds) != 1 or len(step) != 1:
            raise ValueError(f"{path}: step {i} must have exactly one of plan, run, sql; it has {step!r}")
        if kinds[0] != "sql":
            datetime.strptime(str(step[kinds[0]]), "%Y-%m-%d %H:%M:%S")
    if not all(isinstance(s, str) for s in data.get("setup", [])):
        raise ValueError(f"{path}: 'setup' must be a list of SQL statements")
    return data


def projects(only: list[str] | None) -> list[Path]:
    """The project directories to run (``only``: by name; an unknown one is an error listing the known)."""
    found = sorted(p for p in PROJECTS.iterdir() if (p / "steps.yaml").is_file())
    if not only:
        return found
    names = {p.name: p for p in found}
    unknown = [n for n in only if n not in names]
    if unknown:
        raise SystemExit(f"--project: unknown {', '.join(unknown)}; known: {', '.join(names)}")
    return [names[n] for n in only]


# --------------------------------------------------------------------------- running the sides


def run_side(side: str, project: Path, plan: dict, work: Path) -> dict:
    """Run one side on a copy of ``project`` (SQLMesh writes a cache into it); its dump.

    A side that dies without writing its dump is reported as failed before its first step, with the
    last line of its log.
    """
    python = str(SQLMESH_PYTHON) if side == "sqlmesh" else sys.executable
    home = work / side
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    copy = home / "project"
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns(".cache", "__pycache__"))
    scenario_file, dump_file, log = home / "scenario.json", home / "dump.json", home / "side.log"
    scenario_file.write_text(json.dumps(plan))
    argv = ["nice", "-n", "10", python, str(HERE / SIDES[side]), str(copy), str(scenario_file), str(home / "spark"),
            str(dump_file)]
    env = {**os.environ, "TZ": "UTC", "PYTHONUNBUFFERED": "1", "PYTHONPATH": ""}
    with log.open("w") as err:
        try:
            subprocess.run(argv, stdout=err, stderr=subprocess.STDOUT, env=env, cwd=home, timeout=SIDE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {"steps": [], "error": {"step": -1, "message": f"no result within {SIDE_TIMEOUT_S} s"},
                    "log": str(log)}
    if dump_file.is_file():
        return json.loads(dump_file.read_text())
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    return {"steps": [], "error": {"step": -1, "message": (lines[-1] if lines else "no output")[:300]},
            "log": str(log)}


# --------------------------------------------------------------------------- comparing


FAMILIES = [
    (re.compile(r"^(tinyint|smallint|int|bigint|byte|short|long|integer)$"), "integer"),
    (re.compile(r"^(float|double|real)$"), "float"),
    (re.compile(r"^decimal"), "decimal"),
    (re.compile(r"^(string|varchar|char)"), "string"),
    (re.compile(r"^timestamp(_ltz)?$"), "timestamp"),
    (re.compile(r"^timestamp_ntz$"), "timestamp_ntz"),
]


def family(spark_type: str) -> str:
    """The family a Spark type compares in: widths differ between tools without changing values."""
    for pattern, name in FAMILIES:
        if pattern.match(spark_type):
            return name
    return spark_type


def canonical(value: Any, fam: str) -> Any:
    """A dumped value in a form equal across sides when the values are equal (floats: see :func:`close`)."""
    if value is None:
        return None
    if fam == "decimal":
        try:
            return ("decimal", Decimal(value).normalize())
        except InvalidOperation:
            return ("decimal?", str(value))
    if fam == "float" and isinstance(value, (int, float)):
        return ("float", float(value))
    if isinstance(value, list):
        return tuple(canonical(v, "") for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, canonical(v, "")) for k, v in value.items()))
    return (fam, value)


def close(a: Any, b: Any) -> bool:
    """Equal, with floats (anywhere in the value) to :data:`REL_TOL` relative."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b


def _key(row: tuple) -> str:
    """A sort/hash key for a canonical row that groups rows equal up to float rounding."""
    def rounded(v: Any) -> Any:
        if isinstance(v, float):
            return float(f"{v:.12g}")
        if isinstance(v, tuple):
            return tuple(rounded(x) for x in v)
        return v
    return repr(rounded(row))


def compare(theirs: dict, ours: dict) -> dict:
    """One model's dumps (``{"columns", "rows"}`` or ``{"error"}``) compared: ``{"status", "detail", ...}``.

    ``theirs`` is SQLMesh's, ``ours`` pyspark-incr's. Rows compare as multisets; the detail shows the
    row counts and the first rows only one side has.
    """
    if "error" in theirs or "error" in ours:
        parts = [f"sqlmesh: {theirs['error']}" if "error" in theirs else "",
                 f"pyspark-incr: {ours['error']}" if "error" in ours else ""]
        return {"status": DIFFERENT, "detail": "; ".join(p for p in parts if p)}
    result: dict[str, Any] = {"status": SAME, "detail": "", "rows": [len(theirs["rows"]), len(ours["rows"])]}
    problems, notes = [], []
    t_cols, o_cols = theirs["columns"], ours["columns"]
    if [c[0].lower() for c in t_cols] != [c[0].lower() for c in o_cols]:
        problems.append(f"columns: sqlmesh {[c[0] for c in t_cols]} vs pyspark-incr {[c[0] for c in o_cols]}")
    for (name, t_type), (_, o_type) in zip(t_cols, o_cols):
        if family(t_type) != family(o_type):
            problems.append(f"type of {name}: sqlmesh {t_type} vs pyspark-incr {o_type}")
        elif t_type != o_type:
            notes.append(f"{name}: {t_type} vs {o_type}")
    only_theirs, only_ours = _row_difference(theirs, ours)
    if only_theirs or only_ours:
        problems.append(f"rows: sqlmesh {len(theirs['rows'])}, pyspark-incr {len(ours['rows'])}; "
                        f"only in sqlmesh {only_theirs[:SHOWN_ROWS]}; only in pyspark-incr {only_ours[:SHOWN_ROWS]}")
    if problems:
        result.update(status=DIFFERENT, detail="; ".join(problems))
    if notes:
        result["type_notes"] = notes
    return result


def _row_difference(theirs: dict, ours: dict) -> tuple[list, list]:
    """The dumped rows only one side has (as dumped), matching exact values first, then floats loosely."""
    def rows(dump: dict) -> list[tuple[tuple, list]]:
        fams = [family(t) for _, t in dump["columns"]]
        return [(tuple(canonical(v, f) for v, f in zip(row, fams)), row) for row in dump["rows"]]

    left: dict[str, list] = {}
    for canon, raw in rows(theirs):
        left.setdefault(_key(canon), []).append((canon, raw))
    only_ours = []
    for canon, raw in rows(ours):
        bucket = left.get(_key(canon), [])
        match = next((i for i, (c, _) in enumerate(bucket) if close(c, canon)), None)
        if match is None:
            only_ours.append((canon, raw))
        else:
            bucket.pop(match)
    only_theirs = [item for bucket in left.values() for item in bucket]
    # rows a rounding boundary put in different buckets: pair them off loosely
    for item in list(only_theirs):
        match = next((j for j, (c, _) in enumerate(only_ours) if close(c, item[0])), None)
        if match is not None:
            only_ours.pop(match)
            only_theirs.remove(item)
    order = lambda items: [raw for _, raw in sorted(items, key=lambda x: _key(x[0]))]  # noqa: E731
    return order(only_theirs), order(only_ours)


def compare_project(name: str, theirs: dict, ours: dict) -> list[dict]:
    """Every model's result at every compared step; a side that stopped fails the models from there on."""
    results = []
    failed = {side: dump.get("error") for side, dump in (("sqlmesh", theirs), ("pyspark-incr", ours))}
    labels = {s["step"]: s["label"] for dump in (theirs, ours) for s in dump["steps"]}
    t_steps = {s["step"]: s["models"] for s in theirs["steps"]}
    o_steps = {s["step"]: s["models"] for s in ours["steps"]}
    step_numbers = sorted(set(t_steps) | set(o_steps))
    if not step_numbers:  # neither side got to a dump: one row for the project
        return [{"project": name, "model": "*", "step": "-", "status": _failure(failed), "detail": ""}]
    for step in step_numbers:
        t_models, o_models = t_steps.get(step), o_steps.get(step)
        for model in sorted(set(t_models or {}) | set(o_models or {})):
            row = {"project": name, "model": model, "step": labels[step]}
            if t_models is None or o_models is None:
                row.update(status=_failure({k: v for k, v in failed.items()
                                            if (t_models if k == "sqlmesh" else o_models) is None}), detail="")
            elif model not in t_models or model not in o_models:
                missing = "sqlmesh" if model not in t_models else "pyspark-incr"
                row.update(status=DIFFERENT, detail=f"{missing} has no model {model}")
            else:
                row.update(compare(t_models[model], o_models[model]))
            results.append(row)
    return results


def _failure(failed: dict[str, dict | None]) -> str:
    """``<side> failed: <first line>`` for each side that stopped."""
    parts = [f"{side} failed: {err['message']}" for side, err in failed.items() if err]
    return "; ".join(parts) or "no dump"


# --------------------------------------------------------------------------- report


def summarize(results: list[dict]) -> list[dict]:
    """One line per project and model: same at every step, or its first step that is not."""
    lines: dict[tuple[str, str], dict] = {}
    for r in results:
        key = (r["project"], r["model"])
        if key not in lines or (lines[key]["status"] == SAME and r["status"] != SAME):
            lines[key] = r
    return list(lines.values())


def table(lines: list[dict]) -> str:
    """A plain-text table of the summary lines."""
    out = [f"{'project':<16} {'model':<28} {'status':<10} {'at step':<26} detail"]
    for r in lines:
        status = r["status"] if r["status"] in (SAME, DIFFERENT) else "failed"
        detail = r["detail"] if r["status"] in (SAME, DIFFERENT) else r["status"]
        step = "" if r["status"] == SAME else r["step"]
        out.append(f"{r['project']:<16} {r['model']:<28} {status:<10} {step:<26} {detail[:400]}")
    return "\n".join(out)


def markdown(report: dict) -> str:
    """The last run's figures as the Markdown table of docs/differential.md: one row per project.

    Whether a failure is expected is read from today's :data:`EXPECTED_FAILURES`, not the run's.
    """
    out = ["| project | models | same | result | seconds |", "|---|---|---|---|---|"]
    for name, run in report["projects"].items():
        lines = [r for r in report["summary"] if r["project"] == name]
        same = sum(r["status"] == SAME for r in lines)
        worst = next((r for r in lines if r["status"] != SAME), None)
        result = "same" if worst is None else (worst["status"] if worst["status"] != DIFFERENT
                                                 else f"different ({worst['model']}, {worst['step']})")
        if name in EXPECTED_FAILURES and worst is not None:
            result = f"expected: {result}"
        out.append(f"| `{name}` | {len(lines)} | {same} | {result.replace('|', '/')[:160]} | {run['seconds']:.0f} |")
    return "\n".join(out)


def run_projects(chosen: list[Path], work: Path) -> tuple[list[dict], dict, dict]:
    """Both sides of every chosen project, one project and one side at a time: results, runs, versions."""
    results, runs, versions = [], {}, {}
    for project in chosen:
        started = time.time()
        plan = scenario(project)
        print(f"# {project.name}", file=sys.stderr, flush=True)
        dumps = {side: run_side(side, project, plan, work / project.name) for side in SIDES}
        for side, dump in dumps.items():  # each side runs its own venv's pyspark
            versions.update({f"{k} ({side} side)" if k == "pyspark" else k: v
                             for k, v in dump.get("versions", {}).items()})
        results += compare_project(project.name, dumps["sqlmesh"], dumps["pyspark-incr"])
        runs[project.name] = {"seconds": round(time.time() - started, 1),
                              "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                              "errors": {side: d.get("error") for side, d in dumps.items() if d.get("error")}}
    return results, runs, versions


def report_of(results: list[dict], runs: dict, versions: dict, seconds: float) -> dict:
    """The JSON report of a run: per-project runs, the summary lines, every step's results."""
    lines = summarize(results)
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(seconds, 1),
        "versions": versions,
        "projects": runs,
        "models_compared": len(lines),
        "same": sum(r["status"] == SAME for r in lines),
        "summary": lines,
        "results": results,
        "unexpected_failures": sorted({r["project"] for r in lines
                                       if r["status"] != SAME and r["project"] not in EXPECTED_FAILURES}),
        "expected_failures_now_passing": sorted(p for p in runs if p in EXPECTED_FAILURES
                                                and all(r["status"] == SAME for r in lines if r["project"] == p)),
    }


def merged(old: dict, results: list[dict], runs: dict, versions: dict, seconds: float) -> dict:
    """``old``'s report with the projects just run replaced by their new results (``--update``)."""
    kept = [r for r in old["results"] if r["project"] not in runs]
    all_runs = {**{k: v for k, v in old["projects"].items() if k not in runs}, **runs}
    report = report_of(kept + results, all_runs, {**old.get("versions", {}), **versions},
                       old["seconds"] + seconds)
    report["updated"] = sorted(runs)
    return report


def print_outcome(report: dict) -> None:
    """The table, the totals, and what is expected to fail (and now passes) or fails unexpectedly."""
    print(table(report["summary"]))
    versions = report["versions"]
    print(f"\n{report['same']}/{report['models_compared']} models the same across {len(report['projects'])} "
          f"projects in {report['seconds']:.0f} s (sqlmesh {versions.get('sqlmesh', '?')}, pyspark-incr "
          f"{versions.get('pyspark-incr', '?')}); details: {OUT / 'differential.json'}")
    for name in sorted(set(report["projects"]) & set(EXPECTED_FAILURES)):
        now_passing = name in report["expected_failures_now_passing"]
        print(f"expected failure {name}: {EXPECTED_FAILURES[name]}"
              + (" -- it passes now: take it off EXPECTED_FAILURES" if now_passing else ""))
    if report["unexpected_failures"]:
        print(f"UNEXPECTED differences or failures in: {', '.join(report['unexpected_failures'])}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", action="append", help="run only this project (repeatable)")
    parser.add_argument("--update", action="store_true",
                        help="replace only these projects' results in bench/out/differential.json, keep the others")
    parser.add_argument("--work", help="where the sides' warehouses go (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, dumps)")
    parser.add_argument("--markdown", action="store_true",
                        help="print the last run's table (bench/out/differential.json) for the docs; runs nothing")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(json.loads((OUT / "differential.json").read_text())))
        return 0
    if not SQLMESH_PYTHON.exists():
        raise SystemExit(f"no SQLMesh venv at {SQLMESH_PYTHON}: run `bash bench/differential.sh` (it sets it up)")
    work = Path(args.work or tempfile.mkdtemp(prefix="differential-")).resolve()
    began = time.time()
    found = run_projects(projects(args.project), work)
    previous = OUT / "differential.json"
    if args.update and previous.is_file():
        report = merged(json.loads(previous.read_text()), *found, time.time() - began)
    else:
        report = report_of(*found, time.time() - began)
    OUT.mkdir(parents=True, exist_ok=True)
    previous.write_text(json.dumps(report, indent=1, default=str))
    print_outcome(report)
    if not (args.keep or args.work):
        shutil.rmtree(work, ignore_errors=True)
    return 1 if report["unexpected_failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
