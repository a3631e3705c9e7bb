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
    if model.allow_partials:
        reasons.append("allow_partials true (partial intervals) is not run by this version yet; remove it")
    if getattr(kind, "lookback", None):
        reasons.append(f"lookback {kind.lookback} (re-running recent intervals) is not run by this version yet; remove it")
    if changed and getattr(kind, "forward_only", False) and kind.name not in ("SCD_TYPE_2", "SCD_TYPE_2_BY_TIME", "SCD_TYPE_2_BY_COLUMN"):
        reasons.append("is forward_only, and applying its change would rebuild its table; forward-only changes "
                       "are not supported by this version yet")
    return reasons


def not_applied(model: Model) -> list[str]:
    """Properties accepted but without effect yet (scheduling and speed only)."""
    notes = []
    if model.cron_tz:
        notes.append(f"cron_tz {model.cron_tz} not applied yet: the cron is evaluated in UTC")
    if getattr(model.kind, "batch_concurrency", None) and model.kind.batch_concurrency > 1:
        notes.append("batch_concurrency not applied yet: batches run one at a time")
    return notes
