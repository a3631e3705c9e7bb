"""Source pushdown: the filter a timeseries source gets in its FROM for one run window.

For a run window ``[start, end)`` and a source bounded by ``before``/``after``, the source is read as
``(SELECT * FROM source WHERE col >= start - before AND col < end + after)``, so Spark prunes its
partitions even when the model's own WHERE forgot to (smelt's "source-filter pushdown").
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.model.render import time_bounds


@dataclass(frozen=True)
class Source:
    """A timeseries source a model reads: its time column, and that column's format when stored as text."""

    name: str
    column: str
    fmt: str | None = None


@dataclass(frozen=True)
class Pushdown:
    """The filter a source gets in its FROM: ``column`` within ``[run start - before, run end + after)``."""

    source: Source
    before_ms: int = 0
    after_ms: int = 0

    def read_range(self, window: Interval) -> Interval:
        """The part of the source a run over ``window`` reads."""
        return Interval(window.start - self.before_ms, window.end + self.after_ms)

    def condition(self, window: Interval, spark_type: str) -> exp.Expression:
        """The filter over the source's own column, whose Spark type is ``spark_type``.

        A DATE column is read whole days, a text column by its format (inclusive last value):

        >>> from pyspark_incr.intervals.times import to_ms
        >>> day = Interval(to_ms("2024-01-05"), to_ms("2024-01-06"))
        >>> Pushdown(Source("raw.e", "ds"), 86_400_000).condition(day, "date").sql("spark")
        "`ds` >= CAST('2024-01-04' AS DATE) AND `ds` < CAST('2024-01-06' AS DATE)"
        >>> Pushdown(Source("raw.e", "d", "%Y%m%d")).condition(day, "string").sql("spark")
        "`d` >= '20240105' AND `d` <= '20240105'"
        """
        lo, hi, inclusive = time_bounds(self.read_range(window), spark_type, self.source.fmt)
        col = exp.column(self.source.column, quoted=True)
        upper = exp.LTE if inclusive else exp.LT
        return exp.and_(exp.GTE(this=col, expression=lo), upper(this=col.copy(), expression=hi))
