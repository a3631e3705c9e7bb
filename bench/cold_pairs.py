"""Cold b in many samples: pairs of fresh PySpark processes, pyspark-incr's next day against the hand-written one.

    bash bench/compare.sh                                # first: its data and homes
    .venv/bin/python bench/cold_pairs.py --pairs 8       # ~3 min at normal speed

compare.sh's cold b is three processes a contender, each contender's first its slowest. Here each pair is two
fresh processes, ``incr`` and ``bare`` in turn (the order alternating), each building the next day of compare.sh's
workload d (``bench.daily_b1``: the same daily model and query as b; compare.sh builds only the window, so its
later days are unbuilt in both homes), timed as compare.sh's cold steps are: from launch to the end of the step,
after reading through what the process reads (``common.read_through``). pyspark-incr's step also collects the
CALL's rows (a few ms) to check that it built that day: a day built before would make it a run with nothing due.
Each process then checks its table's rows through that day. Not part of CI; figures in docs/benchmarks.md ("Cold
b in PySpark, in more samples").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers"))

from common import (  # noqa: E402
    Spec, compiled_as_installed, day, day_start, emit, own_reads, read_through, ready, save_samples, timed,
)

TOOLS = ("incr", "bare")


def order(pair: int) -> tuple[str, str]:
    """Who goes first in pair ``pair``: it alternates."""
    return TOOLS if pair % 2 == 0 else TOOLS[::-1]


def child(spec: Spec, name: str, k: int) -> None:
    """One scheduled job in this fresh process: build day ``k`` of workload d, then check the table (untimed)."""
    if name == "incr":
        import run_incr as runner

        cls, extra = runner.Incr, runner._with_incr
    else:
        import run_bare as runner

        cls, extra = runner.Bare, None
    tool = ready(cls, spec, extra)
    with timed() as t:
        if name == "incr":
            tool._use("d")
            rows = tool.spark.sql(f"CALL incr.run(execution_time => '{day_start(k + 1):%Y-%m-%d %H:%M:%S}', "
                             "raise_on_failure => true)").collect()
        else:
            tool.run("d", k)
    emit(tool=name, mode="cold", workload="b", rep=k, seconds=t.seconds)
    if name == "incr" and not any(r["action"] == "build" and str(r["start"]).startswith(str(day(k))) for r in rows):
        raise SystemExit(f"incr built no day {day(k)} (built before? pass a later --first-day): {rows}")
    tool.check("d", k)


def job(spec_path: Path, spec: Spec, name: str, k: int) -> dict:
    """Launch one process; its seconds from launch to the end of its step, and the step's own."""
    read_through(*own_reads(spec, name))
    argv = [sys.executable, __file__, "--spec", str(spec_path), "--child", name, str(k)]
    started = time.time()
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    records = [json.loads(line[6:]) for line in done.stdout.splitlines() if line.startswith("BENCH ")]
    if done.returncode != 0 or not records:
        raise SystemExit(f"{name} day {k}: exit {done.returncode}\n{done.stdout[-1000:]}{done.stderr[-3000:]}")
    return {"tool": name, "day": k, "seconds": records[0]["t"] - started, "in_process": records[0]["seconds"]}


def report(samples: list[dict]) -> str:
    """Each contender's medians (whole process, step in-process) and pyspark-incr's ratios to the hand-written job."""
    medians = {}
    lines = ["| contender | samples (s) | median | step in-process | / bare |", "|---|---|---|---|---|"]
    for name in ("bare", "incr"):
        mine = [s for s in samples if s["tool"] == name]
        medians[name] = statistics.median(s["seconds"] for s in mine), statistics.median(s["in_process"] for s in mine)
    for name, (whole, step) in medians.items():
        each = " / ".join(f"{s['seconds']:.2f}" for s in samples if s["tool"] == name)
        lines.append(f"| {name} | {each} | {whole:.2f} s | {step:.2f} s | {whole / medians['bare'][0]:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=HERE / "out" / "work", help="compare.sh's work directory")
    parser.add_argument("--spec", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=2, metavar=("TOOL", "DAY"), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--first-day", type=int, default=None,
                        help="the first day built (default: the day after compare.sh's window)")
    args = parser.parse_args(argv)
    spec_path = args.spec or args.work / "spec.json"
    spec = Spec.load(spec_path)
    if args.child:
        child(spec, args.child[0], int(args.child[1]))
        return 0
    first_day = spec.days if args.first_day is None else args.first_day
    if first_day + args.pairs > spec.days + spec.extra_days:
        parser.error(f"days {first_day}-{first_day + args.pairs - 1} run past the data "
                     f"(its last day is {spec.days + spec.extra_days - 1}): fewer --pairs or an earlier --first-day")
    compiled_as_installed()
    samples = []
    for pair in range(args.pairs):
        for name in order(pair):
            samples.append(job(spec_path, spec, name, first_day + pair))
        print(f"# pair {pair + 1} (day {first_day + pair}): " + ", ".join(
            f"{s['tool']} {s['seconds']:.2f} s" for s in samples[-2:]), file=sys.stderr)
    print(report(samples))
    print(f"samples in {save_samples('cold-pairs', {'first_day': first_day, 'samples': samples})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
