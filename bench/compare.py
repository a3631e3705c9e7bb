"""pyspark-incr against SQLMesh, dbt-spark and hand-written Spark SQL, side by side, in one run.

    bash bench/compare.sh                        # the whole benchmark (sets everything up)
    .venv/bin/python bench/compare.py --quick     # a small smoke run of the same steps

Every contender runs in a process of its own (the peers in their own virtual
environments, built here from ``bench/peers/requirements-*.txt``) with the same
Spark settings (``local[2]``, the same shuffle partitions, Parquet) over the same
generated data, and is measured two ways:

- **warm**: one long-lived process per contender runs every workload after a
  warm-up, each step timed in-process (a notebook, a Thrift server); the
  contenders' processes run side by side in lockstep, one unit of work at a time (each timed
  step is done by every contender in turn before the next step starts), so a
  change in the machine's speed during the run reaches every contender alike;
- **cold**: one fresh process per step, timed from its start to the end of the step
  (a scheduled job: interpreter, JVM and the tool's own start-up included), every
  contender's in turn before the next step.

Prints a table of medians and ratios and writes every sample to ``bench/out/``.
Workloads and contenders: ``bench/peers/common.py``; figures: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS = HERE / "peers"
OUT = HERE / "out"
sys.path.insert(0, str(PEERS))

from common import LOCKSTEP, Spec, compiled_as_installed, process_reads, read_through  # noqa: E402

TOOLS = ("bare", "incr", "sqlmesh", "dbt")
WORKLOADS = {
    "a": "first backfill of the window (batched as the tool likes)",
    "b": "the next day's run",
    "c": "a run with nothing due",
    "d": "first backfill with batch_size 1 (one job per day)",
    "e": "a chain of models, one new day",
    "f0": "SCD type 2: first load of the snapshot",
    "f0u": "the same, the hand-written job keeping one row per key as the tools do",
    "f": "SCD type 2: one daily snapshot with changes",
    "s": "a new project's state store (set-up before a, d and f0)",
}
#: Rows timed for some contenders only: the others' cells show the named row's figure.
SAME_AS = {"f0u": "f0"}
QUICK = dict(rows=200_000, days=40, extra_days=20, chain=5, chain_days=10, keys=10_000, snapshots=4, cold_snapshots=2,
             reps_a=2, reps_b=3, reps_c=5, reps_d=1, reps_e=2, reps_f0=2,
             driver_memory="2g")


def python_of(tool: str) -> str:
    """The interpreter a contender runs in: ours share this venv, each peer has its own."""
    if tool in ("bare", "incr"):
        return sys.executable
    venv = OUT / "venvs" / tool
    requirements = PEERS / f"requirements-{tool}.txt"
    spark = version("pyspark")  # every contender on the same Spark: ours, whatever the peer's pins say
    stamp = venv / f".installed-{hashlib.sha256(requirements.read_bytes() + spark.encode()).hexdigest()[:16]}"
    if not stamp.exists():
        print(f"# installing {tool} into {venv} ...", file=sys.stderr, flush=True)
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pins = [line for line in requirements.read_text().splitlines() if not line.startswith("pyspark==")]
        wanted = venv / "requirements.txt"
        wanted.write_text("\n".join([*pins, f"pyspark=={spark}", ""]))
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-r", str(wanted)], check=True)
        stamp.touch()
    return str(venv / "bin" / "python")


def launch(tool: str, spec_path: Path, log: Path, *args: str) -> tuple[float, list[dict]]:
    """Run a contender's runner; its start time and the BENCH records it printed."""
    argv = [python_of(tool), str(PEERS / f"run_{tool}.py"), "--spec", str(spec_path), *args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    started = time.time()
    records = []
    with log.open("a") as err:
        err.write(f"\n$ {' '.join(argv)}\n")
        err.flush()
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, env=env) as runner:
            for line in runner.stdout:  # each sample goes to the log as it comes: a long run shows where it is
                if line.startswith("BENCH "):
                    records.append(json.loads(line[6:]))
                    err.write(f"{time.strftime('%H:%M:%S')} {line}")
                    err.flush()
        if runner.returncode != 0:
            raise SystemExit(f"{tool} {' '.join(args)} failed (exit {runner.returncode}); see {log}")
    return started, records


def warm_together(tools: list[str], spec: Spec, spec_path: Path) -> list[dict]:
    """Every contender's warm process, all started at once and run in lockstep: each waits before every unit of
    its work (``common.gate``); unit by unit, one contender at a time does it (who goes first rotates), the
    others idle. So a change in the machine's speed reaches every contender's samples of a step alike."""
    runners, events = {}, queue.Queue()
    for tool in tools:
        shutil.rmtree(spec.home(tool), ignore_errors=True)  # a first backfill is a first backfill
        (OUT / f"{tool}.log").unlink(missing_ok=True)
        runners[tool] = _start(tool, spec_path, events, "warm")
    print(f"# warm, in lockstep: {', '.join(tools)}", file=sys.stderr, flush=True)
    samples, waiting, busy = [], {}, set(tools)

    def settle(tool: str) -> None:  # read events until ``tool`` waits at a gate or has ended
        while tool in busy:
            who, record = events.get()
            if record is None:
                busy.discard(who)
                if runners[who].wait() != 0:
                    for other in runners.values():
                        other.kill()
                    raise SystemExit(f"{who} warm failed (exit {runners[who].returncode}); see {OUT / (who + '.log')}")
            elif record.get("event") == "wait":
                busy.discard(who)
                waiting[who] = record["unit"]
            elif "workload" in record:
                samples.append(record)

    for tool in tools:
        settle(tool)
    while waiting:
        unit = min(waiting.values())
        turn = [t for t in tools if waiting.get(t) == unit]
        turn = turn[unit % len(turn):] + turn[:unit % len(turn)]
        for tool in turn:
            del waiting[tool]
            busy.add(tool)
            runners[tool].stdin.write("go\n")
            runners[tool].stdin.flush()
            settle(tool)
    return samples


def _start(tool: str, spec_path: Path, events: queue.Queue, *args: str) -> subprocess.Popen:
    """A contender's runner in lockstep; its BENCH records go to ``events`` as (tool, record), then (tool, None)."""
    argv = [python_of(tool), str(PEERS / f"run_{tool}.py"), "--spec", str(spec_path), *args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", LOCKSTEP: "1"}
    err = (OUT / f"{tool}.log").open("a")
    err.write(f"\n$ {' '.join(argv)}\n")
    err.flush()
    runner = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, env=env)

    def pump() -> None:
        for line in runner.stdout:
            if line.startswith("BENCH "):
                err.write(f"{time.strftime('%H:%M:%S')} {line}")
                err.flush()
                events.put((tool, json.loads(line[6:])))
        events.put((tool, None))

    threading.Thread(target=pump, daemon=True).start()
    return runner


def cold_steps(tools: list[str], spec: Spec, spec_path: Path, cold: dict[str, int], cannot: set[tuple[str, str]]) -> list[dict]:
    """The cold steps, each a fresh process: step by step, every contender's in turn (who goes first rotates)."""
    reps = cold["reps"]
    steps = [("b", spec.days + spec.reps_b + i) for i in range(reps)]
    steps += [("c", spec.days + spec.reps_b + reps - 1)] * reps
    steps += [("e", spec.days + spec.reps_e + i) for i in range(reps)]
    steps += [("f", spec.snapshots + i) for i in range(min(cold["f"], spec.cold_snapshots))]
    steps += [("a", 0)] * cold["a"] + [("d", 0)] * cold["d"]
    samples = []
    for number, (workload, arg) in enumerate(steps):
        turn = [t for t in tools if (t, workload) not in cannot]
        for tool in turn[number % max(1, len(turn)):] + turn[:number % max(1, len(turn))]:
            print(f"# {tool}: cold {workload} {arg}", file=sys.stderr, flush=True)
            # what the process reads, in the page cache for every contender alike (common.read_through)
            read_through(*process_reads(spec, tool, packages(tool)))
            started, records = launch(tool, spec_path, OUT / f"{tool}.log", "cold", workload, str(arg))
            for r in records:
                if "seconds" in r:  # the whole process up to the end of the step, minus the reset before it
                    samples.append({**r, "seconds": r["t"] - started - r.get("untimed", 0.0), "in_process": r["seconds"]})
                elif "skipped" in r:
                    samples.append(r)
    return samples


@functools.cache
def packages(tool: str) -> tuple[Path, ...]:
    """``common.interpreter_packages`` of a contender's interpreter: its pyspark (Spark's jars) and site-packages."""
    code = (f"import sys; sys.path.insert(0, {str(PEERS)!r}); import common; "
            "print(*common.interpreter_packages(), sep='\\n')")
    found = subprocess.run([python_of(tool), "-c", code], stdout=subprocess.PIPE, text=True, check=True).stdout
    return tuple(Path(line) for line in found.splitlines())


def versions(tool: str, spec_path: Path) -> dict[str, str]:
    out = subprocess.run([python_of(tool), str(PEERS / f"run_{tool}.py"), "--spec", str(spec_path), "versions"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    return next(json.loads(line[6:])["versions"] for line in out.splitlines() if line.startswith("BENCH "))


def medians(samples: list[dict]) -> dict[tuple[str, str, str], float | str]:
    """(tool, mode, workload) -> median seconds, or why the tool cannot run it."""
    grouped: dict[tuple[str, str, str], list[float]] = {}
    result: dict[tuple[str, str, str], float | str] = {}
    for s in samples:
        key = (s["tool"], s["mode"], s["workload"])
        if "skipped" in s:
            result[key] = s["skipped"]
        else:
            grouped.setdefault(key, []).append(s["seconds"])
    result.update({k: statistics.median(v) for k, v in grouped.items()})
    return result


def table(result: dict, tools: list[str], mode: str) -> str:
    """A Markdown table of one mode: medians per contender, then ratios."""
    head = ["workload", *tools]
    ratios = [("incr", "bare"), ("sqlmesh", "incr"), ("dbt", "incr")]
    ratios = [(x, y) for x, y in ratios if x in tools and y in tools]
    head += [f"{x} / {y}" for x, y in ratios]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for workload in WORKLOADS:
        cells = [f"{workload}: {WORKLOADS[workload]}"]
        values = {t: result.get((t, mode, workload), result.get((t, mode, SAME_AS.get(workload, "")))) for t in tools}
        if all(result.get((t, mode, workload)) is None for t in tools):
            continue
        cells += [_seconds(values[t]) for t in tools]
        for x, y in ratios:
            vx, vy = values[x], values[y]
            cells.append(f"{vx / vy:.2f}" if isinstance(vx, float) and isinstance(vy, float) and vy else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _seconds(value: float | str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return "n/a"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default=str(OUT / "work"), help="data and the contenders' homes")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run of every step")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--cold-reps", type=int, default=5,
                        help="cold processes per daily step (b, c, e); five since the twenty-first run")
    parser.add_argument("--cold-f", type=int, default=0, help="cold processes of an SCD2 snapshot (f; at most 3)")
    parser.add_argument("--cold-backfills", type=int, default=0, help="cold processes per backfill a")
    parser.add_argument("--cold-d", type=int, default=0,
                        help="cold processes for d (365 jobs: its warm figure plus one start-up; 0 saves ~15 min)")
    args = parser.parse_args()
    tools = [t for t in args.tools.split(",") if t]
    unknown = set(tools) - set(TOOLS)
    if unknown:
        raise SystemExit(f"--tools: unknown {', '.join(sorted(unknown))}; choose from {', '.join(TOOLS)}")
    spec = Spec(work=str(Path(args.work).resolve()), **(QUICK if args.quick else {}))
    if args.rows:
        spec = replace(spec, rows=args.rows)
    OUT.mkdir(parents=True, exist_ok=True)
    Path(spec.work).mkdir(parents=True, exist_ok=True)
    spec_path = Path(spec.work) / "spec.json"
    spec.save(spec_path)
    began = time.time()
    with ThreadPoolExecutor() as pool:  # the peers' installs wait on the network: side by side
        list(pool.map(python_of, tools))  # first: a failed install stops the run here
    compiled_as_installed()
    found = {t: versions(t, spec_path) for t in tools}
    print("# generating data", file=sys.stderr, flush=True)
    with (OUT / "generate.log").open("w") as log:
        subprocess.run([sys.executable, str(PEERS / "generate.py"), "--spec", str(spec_path)], check=True,
                       stdout=subprocess.DEVNULL, stderr=log)
    cold = {"reps": args.cold_reps, "f": args.cold_f, "a": args.cold_backfills, "d": args.cold_d}
    samples = warm_together(tools, spec, spec_path)
    cannot = {(s["tool"], s["workload"]) for s in samples if "skipped" in s}
    samples += cold_steps(tools, spec, spec_path, cold, cannot)
    result = medians(samples)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (OUT / f"compare-{stamp}.json").write_text(json.dumps({"spec": asdict(spec), "versions": found,
                                                           "samples": samples}, indent=1))
    print(f"\n## pyspark-incr benchmark ({spec.rows:,} events over {spec.days} days, chain of {spec.chain}, "
          f"SCD2 over {spec.keys:,} keys; local[2], {spec.shuffle_partitions} shuffle partitions, Parquet)\n")
    for tool, v in found.items():
        print(f"- {tool}: " + ", ".join(f"{k} {x}" for k, x in v.items()))
    for mode, title in (("warm", "in-process, after a warm-up"), ("cold", "whole process per step")):
        if not any(m == mode for _, m, _ in result):
            continue
        print(f"\n### {mode}: {title} (median)\n")
        print(table(result, tools, mode))
    why = {(t, w): v for (t, m, w), v in result.items() if isinstance(v, str)}
    for (tool, workload), reason in sorted(why.items()):
        print(f"\n- {tool} cannot run {workload}: {reason}")
    print(f"\n{len(samples)} samples in {time.time() - began:.0f} s; all of them in bench/out/compare-{stamp}.json")


if __name__ == "__main__":
    main()
