"""The incremental safety gate as the planner uses it: the judgement (:mod:`pyspark_incr.safety.judge`),
and the check that refuses a plan building a model the gate refused."""

from __future__ import annotations

from pyspark_incr.errors import UnsafeModelError
from pyspark_incr.safety.judge import (
    BOUNDED, FULLY_BATCH_SAFE, PER_PARTITION_ONLY, Judgement, batch_class, judge, refusal_message, timeseries_sources,
)

#: The gate's names, as the planner, explain, lint and validate use them.
__all__ = ["BOUNDED", "FULLY_BATCH_SAFE", "PER_PARTITION_ONLY", "Judgement", "batch_class", "check", "judge",
           "refusal_message", "timeseries_sources"]


def check(models: list) -> None:
    """Raise, before anything is written, when a model to be built is refused (``models``: ModelPlans)."""
    refused = [mp.unsafe for mp in models if mp.unsafe]
    if refused:
        raise UnsafeModelError("\n".join(refused))
