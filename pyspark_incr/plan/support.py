"""Properties this version parses but does not yet act on.

Those that would change which rows a run computes are refused before anything
is built; those that only change scheduling or speed are named in the plan.
"""

from __future__ import annotations

from pyspark_incr.model.definition import Model


def blocking(model: Model, changed: bool) -> list[str]:
    """Why ``model`` cannot be built as written by this version (empty when it can)."""
    kind = model.kind
    reasons = []
    if changed and getattr(kind, "forward_only", False):
        reasons.append("is forward_only, and applying its change would rebuild its table; forward-only changes "
                       "are not supported by this version yet")
    return reasons


def not_applied(model: Model) -> list[str]:
    """Properties accepted but without effect yet (scheduling and speed only)."""
    notes = []
    if getattr(model.kind, "batch_concurrency", None) and model.kind.batch_concurrency > 1:
        notes.append("batch_concurrency not applied yet: batches run one at a time")
    return notes
