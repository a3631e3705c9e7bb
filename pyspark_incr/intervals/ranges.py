"""Half-open ``[start, end)`` intervals and normalized sets of them.

Sets hold ranges, never enumerated units: the cost of an operation grows with
the number of gaps, not with the number of intervals covered.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Iterable, Iterator

from pyspark_incr.intervals.times import format_ms


@dataclass(frozen=True, order=True)
class Interval:
    """A half-open time range ``[start, end)`` in epoch ms, UTC.

    >>> from pyspark_incr.intervals.times import to_ms
    >>> str(Interval(to_ms("2024-01-01"), to_ms("2024-01-03")))
    '[2024-01-01, 2024-01-03)'
    """

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"interval end {self.end} before start {self.start}")

    def __str__(self) -> str:
        return f"[{format_ms(self.start)}, {format_ms(self.end)})"

    @property
    def empty(self) -> bool:
        return self.end == self.start

    @classmethod
    def between(cls, start: int | None, end: int | None) -> "Interval":
        """``[start, end)`` where a missing bound is the start or end of the whole time line.

        >>> Interval.between(None, 5) == Interval(BEGINNING, 5), Interval.between(None, None) == ALL_TIME
        (True, True)
        """
        return cls(BEGINNING if start is None else start, END if end is None else end)


#: The ends of the time line: far enough out for any interval, small enough for epoch-ms arithmetic.
BEGINNING, END = -(2**62), 2**62
ALL_TIME = Interval(BEGINNING, END)


class IntervalSet:
    """A normalized (sorted, disjoint, non-adjacent) set of intervals.

    >>> a = IntervalSet([Interval(0, 10), Interval(10, 20), Interval(30, 40)])
    >>> a
    IntervalSet([0, 20), [30, 40))
    >>> IntervalSet([Interval(0, 100)]) - a
    IntervalSet([20, 30), [40, 100))
    >>> a.intersection(IntervalSet([Interval(5, 35)]))
    IntervalSet([5, 20), [30, 35))
    >>> a.covers(Interval(2, 18)), a.covers(Interval(15, 32))
    (True, False)
    """

    __slots__ = ("_ranges",)

    def __init__(self, intervals: Iterable[Interval | tuple[int, int]] = ()) -> None:
        self._ranges: tuple[Interval, ...] = _normalize(
            i if isinstance(i, Interval) else Interval(*i) for i in intervals
        )

    @classmethod
    def _normalized(cls, ranges: tuple[Interval, ...]) -> "IntervalSet":
        """A set of ``ranges`` already sorted, disjoint and non-adjacent (what the operations below produce):
        not sorted again, as a plan of 10,000 models makes ten sets a model."""
        if not ranges and cls is IntervalSet:
            return EMPTY  # most models' missing intervals in a run: one shared set, not one a model a run
        made = cls.__new__(cls)
        made._ranges = ranges
        return made

    @classmethod
    def of(cls, interval: Interval) -> "IntervalSet":
        """The set of the one ``interval`` (empty when it is), without sorting a list of one: a plan makes a few
        such sets a model.

        >>> IntervalSet.of(Interval(5, 9)) == IntervalSet([Interval(5, 9)]), IntervalSet.of(Interval(5, 5))
        (True, IntervalSet())
        """
        return cls._normalized(() if interval.start == interval.end else (interval,))

    def __iter__(self) -> Iterator[Interval]:
        return iter(self._ranges)

    def __len__(self) -> int:
        return len(self._ranges)

    def __bool__(self) -> bool:
        return bool(self._ranges)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IntervalSet) and self._ranges == other._ranges

    def __hash__(self) -> int:
        return hash(self._ranges)

    def __repr__(self) -> str:
        return "IntervalSet(" + ", ".join(f"[{r.start}, {r.end})" for r in self._ranges) + ")"

    def __str__(self) -> str:
        return ", ".join(str(r) for r in self._ranges) or "(none)"

    def union(self, other: Iterable[Interval]) -> "IntervalSet":
        return IntervalSet([*self._ranges, *other])

    __or__ = union

    def difference(self, other: "IntervalSet") -> "IntervalSet":
        out: list[Interval] = []
        holes = IntervalSet._of(other)._ranges
        j = 0
        for r in self._ranges:
            start = r.start
            while j < len(holes) and holes[j].end <= start:
                j += 1
            k = j
            while k < len(holes) and holes[k].start < r.end:
                if holes[k].start > start:
                    out.append(Interval(start, holes[k].start))
                start = max(start, holes[k].end)
                k += 1
            if start < r.end:
                out.append(Interval(start, r.end))
        return IntervalSet._normalized(tuple(out))  # pieces of disjoint ranges, split by non-empty holes

    __sub__ = difference

    def intersection(self, other: "IntervalSet") -> "IntervalSet":
        mine, theirs = self._ranges, IntervalSet._of(other)._ranges
        if len(theirs) == 1 and mine and theirs[0].start <= mine[0].start and mine[-1].end <= theirs[0].end:
            return self  # what a plan asks of most models: their gaps within a window holding them all
        out: list[Interval] = []
        i = j = 0
        while i < len(mine) and j < len(theirs):
            start, end = max(mine[i].start, theirs[j].start), min(mine[i].end, theirs[j].end)
            if start < end:
                out.append(Interval(start, end))
            if mine[i].end < theirs[j].end:
                i += 1
            else:
                j += 1
        return IntervalSet._normalized(tuple(out))  # overlaps of two normalized sets are apart as theirs are

    @staticmethod
    def _of(ranges: Iterable[Interval]) -> "IntervalSet":
        return ranges if isinstance(ranges, IntervalSet) else IntervalSet(ranges)

    def covers(self, interval: Interval) -> bool:
        """True when every instant of ``interval`` is in the set."""
        return not (IntervalSet.of(interval) - self)

    @property
    def start(self) -> int | None:
        return self._ranges[0].start if self._ranges else None

    @property
    def end(self) -> int | None:
        return self._ranges[-1].end if self._ranges else None


_BOUNDS = attrgetter("start", "end")


def _normalize(intervals: Iterable[Interval]) -> tuple[Interval, ...]:
    merged: list[Interval] = []
    # sorted by (start, end) through attrgetter: comparing the records runs their generated __lt__ in Python
    for r in sorted(intervals, key=_BOUNDS):
        if r.start == r.end:
            continue
        if merged and r.start <= merged[-1].end:
            if r.end > merged[-1].end:
                merged[-1] = Interval(merged[-1].start, r.end)
        else:
            merged.append(r)
    return tuple(merged)


#: The empty set: immutable, so one is shared (what the set operations return, and a plan's default).
EMPTY = IntervalSet()
