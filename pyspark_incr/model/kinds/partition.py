"""INCREMENTAL_BY_PARTITION: each run recomputes the query and overwrites the partitions its output holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyspark_incr.model.kinds.base import AUTO_RESTATEMENT_PROPS, CHANGE_PROPS, KindBase
from pyspark_incr.model.properties import Prop


@dataclass(frozen=True)
class IncrementalByPartitionKind(KindBase):
    """Partitions (``partitioned_by``, required) are the unit of replacement; partitions the output lacks keep
    their rows. Not time-sliced: scheduled by cron like FULL, and restated whole (writers/partition.py).

    Forward-only unless ``forward_only false``, as in SQLMesh: a changed query keeps the table and rewrites
    the partitions its next runs produce.
    """

    name: ClassVar[str] = "INCREMENTAL_BY_PARTITION"
    # every run covers the whole table: restating any range restates all of it
    whole_table: ClassVar[bool] = True
    #: The model must say which partitions a run overwrites (checked by ``parse_model``).
    needs_partitioned_by: ClassVar[bool] = True
    props: ClassVar[tuple[Prop, ...]] = (*CHANGE_PROPS, *AUTO_RESTATEMENT_PROPS)

    forward_only: bool = True
    on_destructive_change: str = "error"
    on_additive_change: str = "allow"
    disable_restatement: bool = False
    auto_restatement_cron: str | None = None
