"""Full cycle collections paused while a plan is computed (pyspark_incr/collector.py)."""

from __future__ import annotations

import gc
import threading
import weakref

from pyspark_incr import collector


def test_full_collections_are_paused_inside_and_restored_after_the_last_nested_block():
    before = gc.get_threshold()
    with collector.paused():
        inside = gc.get_threshold()
        with collector.paused():
            nested = gc.get_threshold()
        still = gc.get_threshold()

    assert inside[:2] == before[:2] and inside[2] > 10**9
    assert nested == still == inside
    assert gc.get_threshold() == before


def test_young_cycles_dropped_inside_are_still_collected():
    class Node:
        pass

    collected = threading.Event()
    with collector.paused():
        a, b = Node(), Node()
        a.other, b.other = b, a
        weakref.finalize(a, collected.set)
        del a, b
        for _ in range(20):  # allocations enough for the youngest generation's automatic collections
            [[] for _ in range(gc.get_threshold()[0] + 1)]
        freed_inside = collected.is_set()

    assert freed_inside


def test_a_collector_switched_off_by_threshold_stays_off():
    before = gc.get_threshold()
    gc.set_threshold(0)
    try:
        with collector.paused():
            inside = gc.get_threshold()
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*before)

    assert inside[0] == 0 and after[0] == 0
