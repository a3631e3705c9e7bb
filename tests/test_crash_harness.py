"""The crash and concurrency harness (bench/crash.py) runs end to end on a few trials and finds nothing.

It starts its own Spark processes on its own temporary home (embedded Derby admits one process per
home), so it runs as a subprocess and never touches the session of the test run.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_killed_run_and_a_concurrent_pair_leave_consistent_state_and_converge(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "crash.py"), "--trials", "1", "--concurrency-trials", "1",
         "--seed", "7", "--home", str(tmp_path / "crash")],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )

    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert re.search(r"crash trials: 1/1 passed \(.*\); concurrency trials: 1/1 passed", done.stdout), done.stdout
    assert re.search(r"^crash trial 1/1: (killed at|finished before)", done.stdout, re.M), done.stdout
