"""Race trials in CI: separate applications on one shared metastore service, every kind once, every mode.

The full counts come from ``bench/race.py --rounds 20`` (figures in docs/reliability.md); this runs
as few rounds as race every kind and every mode at least once (fair, a stall in the claim protocol,
a SIGSTOP pause, a holder stalled past its lease, a kill, apply, janitor and drop_environment racing).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import race  # noqa: E402


@pytest.mark.slow
def test_two_applications_racing_on_every_kind_build_each_interval_once_and_match_the_reference(tmp_path):
    lines: list[str] = []
    rounds = race.covering(list(race.KINDS), list(race.MODES))

    tally = race.trials(rounds, apps=2, seed=3, work=tmp_path, echo=lines.append)

    assert {kind for kind, _ in tally} == set(race.KINDS)
    assert {mode for _, mode in tally} == set(race.MODES)
    assert all(passed == total for passed, total in tally.values()), "\n".join(lines)


@pytest.mark.slow
def test_two_applications_racing_on_a_standalone_cluster_build_each_interval_once(tmp_path, standalone):
    """A round with tasks in executor JVMs and a holder killed mid-build (every mode and kind, and the
    full count: ``bench/race.py --cluster``; the local trials above race every mode in CI)."""
    cluster, _ = standalone
    lines: list[str] = []
    rounds = [("time_range_shared_partitions", "kill")]

    tally = race.trials(rounds, apps=2, seed=5, work=tmp_path, echo=lines.append, master=cluster.url)

    assert set(tally) == set(rounds)
    assert all(passed == total for passed, total in tally.values()), "\n".join(lines)
