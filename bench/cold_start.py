"""Where a cold process's seconds go: one step of compare.sh's cold mode, with its start-up cut into phases.

    .venv/bin/python bench/cold_start.py incr c 368   # after a `bash bench/compare.sh` (its data and homes)
    .venv/bin/python bench/cold_start.py bare b 369

Runs as ``bench/peers/run_<tool>.py cold <workload> <arg>`` does, in compare.sh's work directory, and prints
the seconds from the process's start to each phase's end: imports, the JVM and session, pyspark-incr's
registration (its procedures' imports, the callback server, the handler), the sources, then the step. For
pyspark-incr it also prints the step's call profile (:mod:`pyspark_incr.timings`) and the top of a cProfile of
its plan, where a cold process pays for its first reads of state and catalog. Not part of CI. It reads
pyspark-incr's bytecode as compare.sh wrote it (``compiled_as_installed``): after changing the code, run that
first, or the process compiles what it imports.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "peers")]


def process_start() -> float:
    """Epoch seconds at which this process started (from /proc), so the interpreter's own start counts too."""
    ticks = os.sysconf("SC_CLK_TCK")
    started = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return time.time() - (uptime - started / ticks)


def main() -> None:
    began = process_start()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tool", choices=["incr", "bare"])
    parser.add_argument("workload", choices=["b", "c", "e"])
    parser.add_argument("arg", type=int, help="the day the step builds (as compare.sh's cold steps pass it)")
    parser.add_argument("--work", default=str(HERE / "out" / "work"), help="compare.sh's work directory")
    args = parser.parse_args()
    os.environ["PYSPARK_INCR_PROFILE"] = "1"
    marks = [("interpreter", time.time())]

    from common import Spec, register_sources, session

    spec = Spec.load(str(Path(args.work) / "spec.json"))
    os.chdir(spec.home(args.tool).resolve())
    if args.tool == "incr":
        import run_incr as runner

        cls, extra = runner.Incr, runner._with_incr
        _mark_registration(marks)
        plan_profile = _profile_plan()
    else:
        import run_bare as runner

        cls, extra, plan_profile = runner.Bare, None, None
    marks.append(("imports", time.time()))
    spark = session(spec, args.tool, extra)
    marks.append(("session ready", time.time()))
    register_sources(spark, spec)
    marks.append(("sources registered", time.time()))
    tool = cls(spark, spec)
    tool.setup()
    marks.append(("tool set up", time.time()))
    tool.run("e" if args.workload == "e" else "a", args.arg)
    marks.append((f"step {args.workload}", time.time()))

    previous = began
    for what, at in marks:
        print(f"{what:38s} {at - previous:7.3f} s   (at {at - began:7.3f} s)")
        previous = at
    if args.tool == "incr":
        from pyspark_incr import timings

        print(timings.last().describe())
        print(plan_profile.getvalue())


def _mark_registration(marks: list) -> None:
    """Time the parts of pyspark-incr's registration in the session (``attach``)."""
    import pyspark_incr.bridge.session as bridge

    def register(spark) -> None:
        marks.append(("JVM and session (before registering)", time.time()))
        from pyspark.java_gateway import ensure_callback_server_started

        from pyspark_incr.bridge.handler import Handler, load_procedures

        load_procedures()
        marks.append(("procedures imported", time.time()))
        ensure_callback_server_started(spark.sparkContext._gateway)
        bridge._bridge_class(spark).register(Handler())
        marks.append(("callback server and handler", time.time()))

    bridge.register_handler = register


def _profile_plan() -> io.StringIO:
    """A cProfile of the first plan of incr.run in this process, its top 25 (cumulative) written to the result."""
    import pyspark_incr.procedures.running as running

    result, plan_run = io.StringIO(), running.plan_run

    def profiled(*args, **kwargs):
        profile = cProfile.Profile()
        profile.enable()
        try:
            return plan_run(*args, **kwargs)
        finally:
            profile.disable()
            running.plan_run = plan_run
            pstats.Stats(profile, stream=result).sort_stats("cumulative").print_stats(25)

    running.plan_run = profiled
    return result


if __name__ == "__main__":
    main()
