"""INCREMENTAL_BY_TIME_RANGE: each interval's rows are replaced by the query run for that interval."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyspark_incr.model.kinds.base import (
    AUTO_RESTATEMENT_PROPS, CHANGE_PROPS, KindBase, finish_time_column, read_time_column,
)
from pyspark_incr.model.properties import BUILD, DATA, Prop
from pyspark_incr.model.values import as_int


@dataclass(frozen=True)
class IncrementalByTimeRangeKind(KindBase):
    name: ClassVar[str] = "INCREMENTAL_BY_TIME_RANGE"
    time_sliced: ClassVar[bool] = True
    props: ClassVar[tuple[Prop, ...]] = (
        Prop("time_column", read_time_column, DATA, ("time_column", "time_column_format"), required=True,
             example="kind INCREMENTAL_BY_TIME_RANGE (time_column ds)"),
        Prop("batch_size", as_int(1), BUILD),
        Prop("batch_concurrency", as_int(1), BUILD),
        Prop("lookback", as_int(0), BUILD),
        *CHANGE_PROPS,
        *AUTO_RESTATEMENT_PROPS,
        Prop("auto_restatement_intervals", as_int(1), BUILD),
    )

    time_column: str
    time_column_format: str | None = None
    batch_size: int | None = None
    batch_concurrency: int | None = None
    lookback: int | None = None
    forward_only: bool = False
    on_destructive_change: str = "error"
    on_additive_change: str = "allow"
    disable_restatement: bool = False
    auto_restatement_cron: str | None = None
    #: How many of the latest intervals an auto restatement rebuilds (None: all of them).
    auto_restatement_intervals: int | None = None

    finish = classmethod(finish_time_column)
