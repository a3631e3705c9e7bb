"""Versions an apply keeps, recorded again when this code cannot take what their entries keep.

An environment entry keeps its model parsed (a snapshot) and, for a time-sliced model, the safety gate's
judgement, both tied to the code that made them. After an upgrade changing that code every process would
parse and judge each model again (3 ms a model, each process); the apply records such a version again, as it
is, with fresh ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pyspark_incr.model.definition import Model
from pyspark_incr.plan import safety
from pyspark_incr.plan.records import ModelPlan
from pyspark_incr.state.entries import EnvEntry
from pyspark_incr.state.snapshot import SnapshotError, to_snapshot


def restamped(plan: ModelPlan, entry: EnvEntry | None, known: Mapping[str, Model]) -> ModelPlan:
    """``plan`` of a version the environment keeps as it is, with its entry freshly snapshotted when this code
    cannot take the kept snapshot or judgement (``known``: the models the judgement's sources are found in)."""
    if entry is None or plan.records_entry:
        return plan
    model, kept = entry.parsed(), entry.judgement()
    judgement = safety.judge(model, safety.timeseries_sources(model, known), kept) if model.kind.time_sliced else kept
    if entry.snapshot_taken and judgement is kept:
        return plan
    try:
        return plan.but(restamp=replace(entry, snapshot=to_snapshot(model, judgement)))
    except SnapshotError:  # a definition a snapshot cannot hold is parsed by every process, as before
        return plan
