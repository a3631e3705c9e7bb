"""Crash and concurrency harness: SIGKILL a run at a random moment, then check state and a rerun.

    .venv/bin/python bench/crash.py [--trials 32] [--concurrency-trials 4] [--seed N] [--home DIR]

A generated project (bench/crash_harness/project.py: time-range, unique-key, SCD type 2 and cursor
models over Parquet sources) is applied through its base days in a temporary embedded home
(``--home``, default a new temp dir; never ./.incr), then new data arrives; that home is the
pristine snapshot every trial restores. An uninterrupted run measures the work and saves the
reference tables. Each crash trial runs the same ``incr.run`` in a child process group and kills
it (the Spark driver JVM with it) after a random delay in [0, that duration]; a checker process
then verifies that state lists no interval whose rows are missing, and that a rerun converges to
the reference row for row. Each concurrency trial runs two sessions of one application on the
unique-key and SCD2 models at once. One line per trial, a summary, exit status 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from crash_harness import phases  # noqa: E402
from services.app import group_alive  # noqa: E402

READY_TIMEOUT_S, CHILD_TIMEOUT_S = 180, 600


@dataclass
class Child:
    """A child process in a group of its own, its stdout lines collected with their receive time."""

    proc: subprocess.Popen
    lines: list[tuple[float, str]] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)

    def read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))
            if line.startswith("READY"):
                self.ready.set()
        self.ready.set()  # the child ended: nobody waits for READY any more

    def result(self) -> dict:
        found = [json.loads(line[len("RESULT "):]) for _, line in self.lines if line.startswith("RESULT ")]
        return found[-1] if found else {"problems": [f"the child ended ({self.proc.returncode}) without a result"]}


def start(mode: str, home: Path, work: Path, flag: bool = False) -> Child:
    argv = [sys.executable, __file__, "--child", mode, str(home), str(work)] + (["--flag"] if flag else [])
    log = open(work / "logs" / f"{mode}.log", "a")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1, start_new_session=True)
    child = Child(proc)
    threading.Thread(target=child.read, daemon=True).start()
    return child


def finish(child: Child, timeout: float = CHILD_TIMEOUT_S) -> dict:
    """Wait for the child (killing its group if it hangs) and return its RESULT."""
    try:
        child.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill_group(child.proc)
    wait_group_gone(child.proc.pid)
    time.sleep(0.2)  # the reader thread takes the last lines
    return child.result()


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the child's whole process group: the Python driver and the Spark driver JVM it started."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def wait_group_gone(pgid: int, timeout: float = 60) -> None:
    """Until no live process of the group is left: the next process may then open the home's Derby."""
    deadline = time.monotonic() + timeout
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)


def restore(work: Path) -> Path:
    """The home as the pristine snapshot has it (same path: the metastore holds absolute locations)."""
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(work / "pristine", home, symlinks=True)
    return home


def prepare(work: Path) -> float:
    """Build the pristine home and the references; the uninterrupted duration of the trial's work (s)."""
    for name in ("home", "pristine", "ref", "logs", "failed"):
        shutil.rmtree(work / name, ignore_errors=True)
    (work / "logs").mkdir(parents=True)
    setup = finish(start("setup", work / "home", work))
    if not setup.get("ok"):
        sys.exit(f"setup failed: {setup} (see {work / 'logs'})")
    shutil.copytree(work / "home", work / "pristine", symlinks=True)
    reference = finish(start("work", restore(work), work, flag=True))
    if not reference.get("ok"):
        sys.exit(f"the uninterrupted reference run failed: {reference} (see {work / 'logs'})")
    return float(reference["seconds"])


def crash_trial(work: Path, duration: float, rng: random.Random) -> dict:
    """Restore, run, SIGKILL after a random delay, check; what happened and whether it passed."""
    began = time.monotonic()
    child = start("work", restore(work), work)
    child.ready.wait(READY_TIMEOUT_S)
    ready_at = next((t for t, line in child.lines if line == "READY"), None)
    if ready_at is None:
        kill_group(child.proc)
        wait_group_gone(child.proc.pid)
        return {"passed": False, "problems": ["the child never came up (see logs/work.log)"], "phase": "-",
                "killed": False, "delay": 0.0}
    delay = rng.uniform(0, duration)
    try:
        child.proc.wait(max(0.0, ready_at + delay - time.monotonic()))
        killed, killed_at = False, None
    except subprocess.TimeoutExpired:
        killed_at = time.monotonic()
        kill_group(child.proc)
        killed = True
    wait_group_gone(child.proc.pid)
    marks = [(t, line) for t, line in child.lines if line.startswith(phases.MARK)]
    phase = phases.phase_at(marks, killed_at) if killed else "finished"
    snapshot = work / "last_killed"
    shutil.rmtree(snapshot, ignore_errors=True)
    shutil.copytree(work / "home", snapshot, symlinks=True)
    checked = finish(start("check", work / "home", work))
    problems = checked.get("problems", [])
    if not killed and not child.result().get("ok"):
        problems.append(f"the run finished but failed: {child.result()}")
    return {"passed": not problems, "problems": problems, "phase": phase, "killed": killed, "delay": delay,
            "seen": checked.get("seen", {}), "rerun_seconds": checked.get("rerun_seconds"),
            "seconds": time.monotonic() - began}


def concurrency_trial(work: Path, index: int) -> dict:
    result = finish(start("concurrency", restore(work), work, flag=index % 2 == 1))
    return {"passed": not result.get("problems"), "problems": result.get("problems", []),
            "built": result.get("built"), "procedures": "apply+run" if index % 2 else "run+run"}


def describe(i: int, total: int, trial: dict) -> str:
    when = f"killed at {trial['delay']:.1f} s in {trial['phase']}" if trial["killed"] else "finished before the kill"
    seen = "; ".join(f"{m.split('.')[-1]}: {s}" for m, s in trial.get("seen", {}).items())
    verdict = "passed" if trial["passed"] else "FAILED: " + " | ".join(trial["problems"])
    return f"crash trial {i}/{total}: {when} -> {verdict} [{seen}] ({trial.get('seconds', 0):.0f} s)"


def keep_failure(work: Path, i: int) -> None:
    """Keep the home as the kill left it (before the checker's rerun), for inspection."""
    target = work / "failed" / f"trial_{i}"
    target.parent.mkdir(exist_ok=True)
    shutil.move(str(work / "last_killed"), target)
    print(f"  kept the killed home in {target}", flush=True)


def summary(crash: list[dict], conc: list[dict], seconds: float) -> str:
    killed = [t for t in crash if t["killed"]]
    by_phase = Counter(t["phase"] for t in killed)
    phases_text = ", ".join(f"{k} {v}" for k, v in by_phase.most_common())
    return (f"crash trials: {sum(t['passed'] for t in crash)}/{len(crash)} passed "
            f"({len(killed)} killed, {len(crash) - len(killed)} finished before the kill); "
            f"concurrency trials: {sum(t['passed'] for t in conc)}/{len(conc)} passed; "
            f"{seconds:.0f} s\nkills by phase: {phases_text or '-'}")


def run(args: argparse.Namespace) -> int:
    began = time.monotonic()
    work = Path(args.home or tempfile.mkdtemp(prefix="incr-crash-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    print(f"work dir {work}; seed {args.seed}", flush=True)
    duration = prepare(work)
    print(f"uninterrupted run: {duration:.1f} s (kills land in [0, {duration:.1f}] s after the session is up)", flush=True)
    crash = []
    for i in range(1, args.trials + 1):
        crash.append(crash_trial(work, duration, rng))
        print(describe(i, args.trials, crash[-1]), flush=True)
        if not crash[-1]["passed"]:
            keep_failure(work, i)
    conc = []
    for i in range(1, args.concurrency_trials + 1):
        conc.append(concurrency_trial(work, i - 1))
        verdict = "passed" if conc[-1]["passed"] else "FAILED: " + " | ".join(conc[-1]["problems"])
        print(f"concurrency trial {i}/{args.concurrency_trials} ({conc[-1]['procedures']}, ok steps per call "
              f"{conc[-1]['built']}): {verdict}", flush=True)
    (work / "results.json").write_text(json.dumps({"duration": duration, "crash": crash, "concurrency": conc},
                                                  default=str, indent=1))
    print(summary(crash, conc, time.monotonic() - began), flush=True)
    ok = all(t["passed"] for t in crash + conc)
    if ok and not args.home:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=32, help="crash trials (default 32)")
    parser.add_argument("--concurrency-trials", type=int, default=4, help="concurrency trials (default 4)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the kill delays (default: random)")
    parser.add_argument("--home", metavar="DIR", help="work dir (homes, references, logs; kept afterwards); "
                                                      "default a temp dir, removed when every trial passed")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "HOME", "WORK"), help=argparse.SUPPRESS)
    parser.add_argument("--flag", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        from crash_harness import child

        child.main(*args.child, flag=args.flag)
        return
    if args.seed is None:
        args.seed = random.randrange(1 << 30)
    sys.exit(run(args))


if __name__ == "__main__":
    main()
