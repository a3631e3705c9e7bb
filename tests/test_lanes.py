"""The call's places: models building at once and the batches each runs beside its first share ``concurrency``.

Pure Python (no Spark): work items sleep a little and count how many run at once.
"""

from __future__ import annotations

import threading
import time

import pytest

from pyspark_incr.run.lanes import Places, run_batches, run_dag


class Gauge:
    """How many items run at once, the most seen, and the order they started in."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self.started: list[str] = []
        self._lock = threading.Lock()

    def run(self, label: str, seconds: float = 0.02) -> bool:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.started.append(label)
        time.sleep(seconds)
        with self._lock:
            self.now -= 1
        return True


def _models(gauge: Gauge, places: Places, batches: dict[str, int], at_once: int):
    def build(model: str) -> None:
        run_batches([f"{model}{i}" for i in range(batches[model])], gauge.run, at_once, places)
    return build


@pytest.mark.parametrize("limit", [1, 2, 3, 4])
def test_models_and_the_batches_beside_their_first_never_run_more_than_the_limit_at_once(limit):
    gauge, places = Gauge(), Places(limit)
    batches = {"a": 9, "b": 5, "c": 7}

    run_dag(list(batches), {}, _models(gauge, places, batches, at_once=4), limit, places=places)

    assert sorted(gauge.started) == sorted(f"{m}{i}" for m, n in batches.items() for i in range(n))
    assert gauge.most == min(limit, 4 * len(batches))
    assert places.free() and places.limit == limit


def test_one_model_alone_runs_as_many_batches_as_the_call_has_places():
    gauge, places = Gauge(), Places(3)

    run_dag(["a"], {}, _models(gauge, places, {"a": 12}, at_once=3), 3, places=places)

    assert gauge.most == 3


def test_a_model_ready_to_start_comes_before_more_batches_of_a_running_one():
    gauge, places = Gauge(), Places(2)

    def build(model: str) -> None:
        if model == "a":  # would keep both places for its 20 batches if it could
            run_batches([f"a{i}" for i in range(20)], gauge.run, 2, places)
        else:
            gauge.run(f"{model}0", 0.05)

    # b becomes ready once c, which holds the second place at first, has finished
    run_dag(["a", "c", "b"], {"b": ["c"]}, build, 2, places=places)

    assert gauge.started.index("b0") < gauge.started.index("a10"), gauge.started
    assert gauge.most == 2


def test_while_a_model_waits_for_a_place_no_more_batch_takes_one():
    places = Places(3)
    assert places.take_for_model()

    places.models_waiting(True)
    refused = places.take_for_batch()
    places.models_waiting(False)

    assert not refused and places.take_for_batch(), "a free place goes to the waiting model, then to batches again"


def test_a_batch_limit_below_the_places_is_kept():
    gauge, places = Gauge(), Places(4)

    run_dag(["a"], {}, _models(gauge, places, {"a": 8}, at_once=2), 4, places=places)

    assert gauge.most == 2


def test_a_failed_batch_starts_no_more_and_gives_every_place_back():
    places, started = Places(3), []

    def work(i: int) -> bool:
        started.append(i)
        time.sleep(0.01)
        return i != 1

    assert places.take_for_model()  # the model's own place
    run_batches(list(range(10)), work, 3, places)
    places.give()

    assert 1 in started and len(started) < 10
    assert places.free() and places.take_for_model() and places.take_for_model() and places.take_for_model()
    assert not places.take_for_model(), "no place was leaked or given back twice"


def test_a_bug_escaping_a_model_is_raised_and_nothing_hangs():
    places = Places(2)

    def build(model: str) -> None:
        if model == "b":
            raise RuntimeError("bug")
        time.sleep(0.02)

    with pytest.raises(RuntimeError, match="bug"):
        run_dag(["a", "b", "c"], {"c": ["a"]}, build, 2, places=places)


def test_a_bug_escaping_a_batch_is_raised_and_gives_its_places_back():
    places = Places(3)
    assert places.take_for_model()

    def work(i: int) -> bool:
        time.sleep(0.01)
        if i == 2:
            raise RuntimeError("bug")
        return True

    with pytest.raises(RuntimeError, match="bug"):
        run_batches(list(range(6)), work, 3, places)
    places.give()

    assert [places.take_for_model() for _ in range(4)] == [True, True, True, False]
