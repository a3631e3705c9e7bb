"""Parameters and output columns several procedures share, and argument helpers."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta
from typing import Any

from pyspark_incr.config import CONCURRENCY as CONCURRENCY_CONF
from pyspark_incr.config import DEFAULT_ENV, setting
from pyspark_incr.config import FAIL_FAST as FAIL_FAST_CONF
from pyspark_incr.config import RAISE_ON_FAILURE as RAISE_ON_FAILURE_CONF
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.errors import ArgumentError, BatchesFailed
from pyspark_incr.intervals.times import is_date_only, to_datetime, to_end_ms, to_ms
from pyspark_incr.plan.environment import check_env
from pyspark_incr.plan.sentences import clauses
from pyspark_incr.plan.window import Window
from pyspark_incr.procedures.spec import Column, Param

ENV = Param("env", "string", "Environment (default: prod, or the session's spark.incr.defaultEnv).")
PROJECT = Param(
    "project", "string",
    "Project directory holding models/*.sql, relative to the Spark driver's working directory "
    "(optional; registered models are always included).",
)
SELECT = Param(
    "select", "string",
    "Models to limit the call to (default: all), comma-separated: a name or glob (shop.daily_*), "
    "tag:finance (models with that tag; globs allowed), +x also every model x reads (transitively), "
    "x+ also every model reading x.",
)
START = Param(
    "start", "string",
    "Only intervals from this date/timestamp on (UTC, ISO); must start an interval of every selected model.",
)
END = Param(
    "end", "string",
    "Only intervals before this point (UTC, ISO; a bare date means through that day); "
    "must end an interval of every selected model.",
)
EXECUTION_TIME = Param("execution_time", "string", "What 'now' is, as an ISO timestamp in UTC (default: the wall clock).")
PER_PARTITION = Param(
    "per_partition", "boolean",
    "One interval per job, whatever the models' batch_size (to isolate a failing interval, or for queries "
    "only correct one interval at a time).",
    default=False,
)
CONCURRENCY = Param(
    "concurrency", "int",
    "How many models, and batches of a model, to build at once: independent models, and the batches of a model "
    "that leaves batch_concurrency unset, share them (default: the project's incr.concurrency, else the "
    "session's spark.incr.concurrency, else 4); 1 builds one batch at a time.",
)
ALLOW_DOWNGRADE = Param(
    "allow_downgrade", "boolean",
    "A time-sliced model the incremental safety check refuses is rebuilt whole, in one job, for this call "
    "(its result rows say so) instead of failing the call.",
    default=False,
)
WAIT = Param(
    "wait", "string",
    "How long to wait when another call (of any application) is writing what this call writes: '10 minutes', "
    "'30 seconds', '0 seconds' or an ISO-8601 duration ('PT10M'). Default: spark.incr.lockTimeout seconds (60). "
    "Then incr.run reports the models still claimed, with who holds them, and builds the rest; other "
    "procedures fail naming the holder, having changed nothing.",
)
FAIL_FAST = Param(
    "fail_fast", "boolean",
    "Stop at the first failed batch: batches and models not started yet are reported skipped and stay "
    "missing (default: the session's spark.incr.failFast, else false: independent models go on).",
)
RAISE_ON_FAILURE = Param(
    "raise_on_failure", "boolean",
    "Once every step has finished (or fail_fast stopped the call) and state is recorded, fail the call with "
    "an error listing each failed step, so a scheduled job exits non-zero (default: the session's "
    "spark.incr.raiseOnFailure, else false: failures are result rows only).",
)
IGNORE_CRON = Param("ignore_cron", "boolean", "Run every complete missing interval, even if the cron has not ticked yet.", default=False)

BATCH_OUTPUT = (
    Column("model", "string", "Model name."),
    Column("kind", "string", "Model kind."),
    Column("action", "string", "build (an interval batch), create view or create seed, refresh (a materialized "
                               "view whose sources changed), drop, forget (external), skip, wait (intervals a signal "
                               "says are not ready), check signals (a signal that failed), on virtual update (an "
                               "ON_VIRTUAL_UPDATE statement that failed)."),
    Column("start", "timestamp", "Start of the batch interval (UTC, inclusive)."),
    Column("end", "timestamp", "End of the batch interval (UTC, exclusive)."),
    Column("intervals", "bigint", "Number of intervals in the batch."),
    Column("rows", "bigint", "Rows written by the batch (as Spark counted them)."),
    Column("status", "string",
           "ok, failed, skipped (with why: a failed parent, fail_fast, built meanwhile by another call), or "
           "claimed (incr.run: another call was still building it when the wait ran out; the message names it), "
           "or waiting (not built: a signal said not ready; checked again by the next call)."),
    Column("seconds", "double", "Wall-clock seconds the step took."),
    Column("message", "string", "Spark's error for a failed step, or why it was skipped."),
)


def env_arg(spark: Any, env: str | None) -> str:
    """The environment of a call: the argument, else the session's spark.incr.defaultEnv, else prod."""
    if env:
        return check_env(env)
    configured = setting(spark, DEFAULT_ENV)
    try:
        return check_env(configured)
    except ArgumentError:
        raise ArgumentError(
            f"spark conf {DEFAULT_ENV} is {configured!r}, not a valid environment name; set it to letters, digits "
            "and underscores starting with a letter (SET spark.incr.defaultEnv=dev), or pass env"
        ) from None


def concurrency_arg(spark: Any, value: int | None, configured: str | None = None) -> int:
    """The models-at-once limit: the argument, else the project's setting, else the session's."""
    if value is not None:
        source, raw = "argument concurrency", value
    elif configured is not None:
        source, raw = "the project's incr.concurrency", configured
    else:
        source, raw = f"spark conf {CONCURRENCY_CONF}", setting(spark, CONCURRENCY_CONF)
    try:
        limit = int(raw)
    except (TypeError, ValueError):
        limit = 0
    if limit < 1:
        raise ArgumentError(f"{source} is {raw!r}; give a whole number of models to build at once, 1 or more")
    return limit


def fail_fast_arg(spark: Any, value: bool | None) -> bool:
    """Whether the first failed batch stops the call: the argument, else the session's spark.incr.failFast."""
    return _flag_arg(spark, value, FAIL_FAST_CONF)


def raise_on_failure_arg(spark: Any, value: bool | None) -> bool:
    """Whether a failed step fails the call: the argument, else the session's spark.incr.raiseOnFailure."""
    return _flag_arg(spark, value, RAISE_ON_FAILURE_CONF)


def _flag_arg(spark: Any, value: bool | None, key: str) -> bool:
    if value is not None:
        return bool(value)
    raw = setting(spark, key).strip().lower()
    if raw not in ("true", "false"):
        raise ArgumentError(f"spark conf {key} is {raw!r}; set it to true or false")
    return raw == "true"


#: Characters of each failed step's message kept in a raise_on_failure error (Spark's can be pages long).
_MESSAGE_CHARS = 400


def raise_failures(procedure: str, env: str, results: list, state_schema: str) -> None:
    """Raise :class:`BatchesFailed` naming every failed step of ``results``; nothing when none failed.

    Called after the executor returned, so whatever succeeded is committed and every step's row is
    already in the ``runs`` state table.
    """
    failed = [r for r in results if r.status == "failed"]
    if not failed:
        return
    skipped = sum(1 for r in results if r.status == "skipped")
    steps = []
    for r in failed:
        where = f" [{_stamp(r.interval.start)}, {_stamp(r.interval.end)})" if r.interval else ""
        message = " ".join((r.message or "no message").split())
        if len(message) > _MESSAGE_CHARS:
            message = message[:_MESSAGE_CHARS] + "..."
        steps.append(f"model {r.model}{where}: {message}")
    raise BatchesFailed(
        f"incr.{procedure} in environment {env}: {len(failed)} step(s) failed"
        f"{f', {skipped} skipped' if skipped else ''} (raise_on_failure): " + clauses(steps) + ". "
        f"What ran is recorded: each step's row is in CALL incr.history() (table {state_schema}.runs), and the "
        "failed intervals stay missing, so the next run builds them again. Fix the cause and run again; call "
        "without raise_on_failure to get the result rows instead of an error."
    )


def window_arg(start: str | None, end: str | None, execution_time: str | None, ignore_cron: bool = False,
               per_partition: bool = False, allow_downgrade: bool = False) -> Window:
    """The window of a call; ``end`` must come after ``start`` (a bare-date end means through that day)."""
    now = to_ms(execution_time, "execution_time") if execution_time else int(time.time() * 1000)
    window = Window(
        execution_ms=now,
        start_ms=to_ms(start, "start", now_ms=now) if start else None,
        end_ms=to_end_ms(end, "end", now_ms=now) if end else None,
        ignore_cron=bool(ignore_cron),
        per_partition=bool(per_partition),
        allow_downgrade=bool(allow_downgrade),
    )
    if window.start_ms is not None and window.end_ms is not None and window.end_ms <= window.start_ms:
        through = " (through that day)" if is_date_only(end) else ""
        raise ArgumentError(
            f"end {end!r}{through} is not after start {start!r}, so no interval lies between them; "
            "give an end later than the start"
        )
    return window


def _stamp(ms: int) -> str:
    return to_datetime(ms).strftime("%Y-%m-%d %H:%M:%S")


def ts(ms: int | None) -> datetime | None:
    return None if ms is None else to_datetime(ms)


def batch_rows(results: list) -> list[tuple]:
    """Executor results as BATCH_OUTPUT rows."""
    return [
        (r.model, r.kind, r.action, ts(_start(r.interval)), ts(_end(r.interval)), r.intervals, r.rows, r.status,
         r.seconds, r.message or None)
        for r in results
    ]


def _start(i: Interval | None) -> int | None:
    return i.start if i else None


def _end(i: Interval | None) -> int | None:
    return i.end if i else None


_UNITS = {"day": "days", "days": "days", "hour": "hours", "hours": "hours", "minute": "minutes", "minutes": "minutes",
          "second": "seconds", "seconds": "seconds"}
_PLAIN = re.compile(r"^\s*(?P<n>\d+)\s*(?P<unit>[a-z]+)\s*$", re.IGNORECASE)
_ISO = re.compile(r"^P(?:(?P<days>\d+)D)?(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+)S)?)?$",
                  re.IGNORECASE)


def duration_arg(procedure: str, name: str, value: str) -> timedelta:
    """Argument ``name`` of ``procedure`` as a duration.

    >>> [duration_arg("janitor", "older_than", d).total_seconds() for d in ("7 days", "12 hours", "1 minute", "0 days", "30 seconds")]
    [604800.0, 43200.0, 60.0, 0.0, 30.0]
    >>> duration_arg("run", "wait", "P7D"), duration_arg("run", "wait", "PT12H"), duration_arg("run", "wait", "P1DT30M")
    (datetime.timedelta(days=7), datetime.timedelta(seconds=43200), datetime.timedelta(days=1, seconds=1800))
    >>> duration_arg("janitor", "older_than", "soon")
    Traceback (most recent call last):
    ...
    pyspark_incr.errors.ArgumentError: janitor: older_than 'soon' is not a duration; give a whole number of days, hours, minutes or seconds ('7 days', '12 hours', '30 minutes', '0 days') or an ISO-8601 duration ('P7D', 'PT12H')
    """
    text = str(value).strip()
    plain = _PLAIN.match(text)
    if plain and plain["unit"].lower() in _UNITS:
        return timedelta(**{_UNITS[plain["unit"].lower()]: int(plain["n"])})
    iso = _ISO.match(text)
    if iso and text.upper() not in ("P", "PT") and not text.upper().endswith("T"):
        return timedelta(**{k: int(v) for k, v in iso.groupdict().items() if v is not None})
    raise ArgumentError(
        f"{procedure}: {name} {value!r} is not a duration; give a whole number of days, hours, minutes or seconds "
        "('7 days', '12 hours', '30 minutes', '0 days') or an ISO-8601 duration ('P7D', 'PT12H')"
    )


def wait_arg(procedure: str, value: str | None) -> float | None:
    """``wait`` in seconds; None (the session's spark.incr.lockTimeout) when not given."""
    return None if value is None else duration_arg(procedure, "wait", value).total_seconds()
