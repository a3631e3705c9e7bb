"""A model's schedule: its cron, its interval unit, and which intervals are due.

An interval is due once it is complete *and* the cron has ticked since it
ended: a daily model with cron ``0 12 * * *`` builds yesterday at noon today.
With ``allow_partials`` a run also builds the incomplete interval, up to the
cron's last tick (never past it: SQLMesh's rule).
"""

from __future__ import annotations

from dataclasses import dataclass
import re
from datetime import datetime
from functools import lru_cache
from zoneinfo import ZoneInfo

from croniter import croniter

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.intervals.times import to_datetime, to_ms
from pyspark_incr.intervals.units import IntervalUnit

_SAMPLES = 12


@dataclass(frozen=True)
class Schedule:
    """Cron plus interval unit.

    >>> s = Schedule.parse("0 12 * * *")
    >>> s.unit.value
    'day'
    >>> from pyspark_incr.intervals.times import format_ms, to_ms
    >>> format_ms(s.due_end(to_ms("2024-01-05 10:00:00")))
    '2024-01-04'
    >>> format_ms(s.due_end(to_ms("2024-01-05 12:00:00")))
    '2024-01-05'
    >>> format_ms(s.due_end(to_ms("2024-01-05 10:00:00"), ignore_cron=True))
    '2024-01-05'
    >>> Schedule.parse("@hourly").unit.value
    'hour'
    """

    cron: str
    unit: IntervalUnit
    #: Time zone the cron is read in: it shifts when intervals are due, never their (UTC) boundaries.
    tz: str | None = None
    #: First day of a week interval, 0 = Monday .. 6 = Sunday.
    week_start: int = 0

    @classmethod
    def parse(
        cls, cron: str, interval_unit: str | None = None, *, where: str = "model", tz: str | None = None,
        week_start: int = 0, allow_partials: bool = False,
    ) -> "Schedule":
        """Validate ``cron`` and settle the unit (explicit, else inferred from the cron as SQLMesh does).

        A cron more frequent than the unit is refused unless ``allow_partials`` (SQLMesh's rule): then each
        tick builds the running interval so far (``cron '@hourly', interval_unit 'day'``).
        """
        cron = (cron or "").strip()
        if not croniter.is_valid(cron):
            raise ModelDefinitionError(
                f"{where}: cron {cron!r} is not a valid cron expression; use e.g. '@daily', "
                "'@hourly' or five fields like '0 12 * * *'"
            )
        if _RANDOM.search(cron):
            raise ModelDefinitionError(
                f"{where}: cron {cron!r} uses random or hashed fields (R, H), whose ticks change from run to run; "
                "give fixed fields"
            )
        gap = _shortest_gap_ms(cron, where)
        if gap < IntervalUnit.FIVE_MINUTE.approx_ms:
            raise ModelDefinitionError(
                f"{where}: cron {cron!r} runs more often than every 5 minutes; the shortest interval is "
                "five_minute, so use e.g. '*/5 * * * *'"
            )
        if interval_unit is None:
            unit = IntervalUnit.from_cron_gap(gap)
        else:
            try:
                unit = IntervalUnit(interval_unit.lower())
            except ValueError:
                names = ", ".join(u.value for u in IntervalUnit)
                raise ModelDefinitionError(
                    f"{where}: interval_unit {interval_unit!r} is unknown; use one of {names}"
                ) from None
            if unit.approx_ms > gap and not allow_partials:
                raise ModelDefinitionError(
                    f"{where}: cron {cron!r} runs more often than interval_unit {unit.value!r}, so most runs "
                    "would find no complete interval; use a cron no more frequent than the unit, or set "
                    "allow_partials true to build the running interval so far on each tick"
                )
        return cls(cron, unit, tz, week_start)

    def floor(self, ms: int) -> int:
        """Start of the interval containing ``ms``."""
        return self.unit.floor(ms, self.week_start)

    def ceil(self, ms: int) -> int:
        """Start of the first interval at or after ``ms``."""
        return self.unit.ceil(ms, self.week_start)

    def last_tick(self, ms: int) -> int:
        """The latest cron tick at or before ``ms``, reading the cron in ``tz``.

        >>> s = Schedule.parse("0 6 * * *", tz="America/New_York")
        >>> from pyspark_incr.intervals.times import format_ms, to_ms
        >>> format_ms(s.last_tick(to_ms("2024-01-05 12:00:00")))
        '2024-01-05 11:00:00'
        """
        return _last_tick(self.cron, self.tz, ms)

    def due_end(self, execution_ms: int, *, ignore_cron: bool = False, allow_partials: bool = False) -> int:
        """Exclusive end of the intervals that may run at ``execution_ms``.

        As SQLMesh: the cron's last tick bounds every run (``ignore_cron``: the execution time itself);
        ``allow_partials`` only keeps the incomplete interval up to that bound instead of rounding down.

        >>> from pyspark_incr.intervals.times import format_ms, to_ms
        >>> s = Schedule.parse("0 6 * * *")
        >>> format_ms(s.due_end(to_ms("2024-01-05 10:00:00"), allow_partials=True))
        '2024-01-05 06:00:00'
        >>> format_ms(s.due_end(to_ms("2024-01-05 05:00:00"), allow_partials=True))
        '2024-01-04 06:00:00'
        """
        moment = execution_ms if ignore_cron else self.last_tick(execution_ms)
        return moment if allow_partials else self.floor(moment)

    def latest_due(self, execution_ms: int, *, ignore_cron: bool = False) -> Interval:
        """The last interval due at ``execution_ms``."""
        end = self.due_end(execution_ms, ignore_cron=ignore_cron)
        return Interval(self.unit.add(end, -1), end)

    def expected(self, start_ms: int, end_ms: int | None, execution_ms: int, **due: bool) -> Interval:
        """The aligned range ``[start, min(end, due_end))`` a model should cover."""
        start = self.floor(start_ms)
        stop = self.due_end(execution_ms, **due)
        if end_ms is not None:
            stop = min(stop, self.ceil(end_ms))
        return Interval(start, max(start, stop))


@lru_cache(maxsize=4096)
def _last_tick(cron: str, tz: str | None, ms: int) -> int:
    """Cached: planning asks it for every model at one execution time, and most models share a few crons."""
    moment = to_datetime(ms)
    if tz:
        moment = moment.astimezone(ZoneInfo(tz))
    if moment.second == moment.microsecond == 0 and croniter.match(cron, moment):
        return ms
    return to_ms(croniter(cron, moment).get_prev(datetime))


_RANDOM = re.compile(r"(^|[\s,/(-])[RH]($|[\s,/()-])")


@lru_cache(maxsize=256)
def _shortest_gap_ms(cron: str, where: str) -> int:
    try:
        it = croniter(cron, to_datetime(to_ms("2024-01-01")))
        ticks = [to_ms(it.get_next(type(to_datetime(0)))) for _ in range(_SAMPLES)]
    except Exception:  # noqa: BLE001 - croniter raises its own errors for crons that never fire
        raise ModelDefinitionError(f"{where}: cron {cron!r} never fires (no such date); fix its day and month fields") from None
    return min(b - a for a, b in zip(ticks, ticks[1:]))
