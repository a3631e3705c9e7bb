"""State is read once and reused across calls while the state table's files are unchanged."""

from __future__ import annotations

from pyspark_incr.state import tables as t
from pyspark_incr.state.store import StateStore


def _row(start: int) -> dict:
    return {"table_name": "x", "fingerprint": "f", "model": "m", "start_ms": start, "end_ms": start + 10,
            "op": "add", "run_id": "r"}


def test_a_later_call_reuses_unchanged_state_and_sees_every_append(spark, isolated):
    StateStore(spark).append(t.INTERVALS, [_row(0)])

    first = StateStore(spark).read(t.INTERVALS)
    again = StateStore(spark).read(t.INTERVALS)
    StateStore(spark).append(t.INTERVALS, [_row(10)])
    after = StateStore(spark).read(t.INTERVALS)

    assert again is first, "an unchanged table is not read again"
    assert (first.num_rows, after.num_rows) == (1, 2)
