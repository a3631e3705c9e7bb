"""Signals as a SQLMesh project writes them."""

import typing as t

from sqlmesh import DatetimeRanges, ExecutionContext, signal
from sqlmesh.utils.date import to_datetime


@signal()
def ends_by(batch: DatetimeRanges, cutoff: str) -> t.Union[bool, DatetimeRanges]:
    """Only the intervals ending by ``cutoff``."""
    limit = to_datetime(cutoff)
    return [(start, end) for start, end in batch if end <= limit]


@signal()
def landed(batch: DatetimeRanges, context: ExecutionContext) -> t.Union[bool, DatetimeRanges]:
    """Only the days raw.landed marks as complete."""
    days = {str(row[0]) for row in context.engine_adapter.fetchall("SELECT ds FROM raw.landed")}
    return [(start, end) for start, end in batch if start.strftime("%Y-%m-%d") in days]
