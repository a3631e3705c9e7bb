"""Spark's own view of the work between two instants: jobs and SQL executions from its status stores.

The stores are what the Spark UI reads (filled by listeners whether or not the UI runs); they are
reached through py4j, so this only works in a classic (non-Connect) PySpark driver. Used by
``bench/breakdown.py`` to line Spark's timings up with pyspark-incr's phases (:mod:`pyspark_incr.timings`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Work:
    """One Spark job or SQL execution: its kind, id, wall-clock start and end (epoch seconds) and label."""

    kind: str  # "job" or "sql"
    id: int
    start: float
    end: float
    label: str

    @property
    def ms(self) -> float:
        return (self.end - self.start) * 1000


def _date(option: Any) -> float | None:
    return option.get().getTime() / 1000 if option.isDefined() else None


def settle(spark: Any) -> None:
    """Wait until the listeners have seen every event posted so far (they run on their own thread)."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()


def between(spark: Any, start: float, end: float) -> list[Work]:
    """Jobs and SQL executions submitted within [start, end] (epoch seconds), oldest first."""
    settle(spark)
    found = []
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    for i in range(jobs.size()):
        job = jobs.apply(i)
        began, ended = _date(job.submissionTime()), _date(job.completionTime())
        if began is not None and start <= began <= end:
            label = job.description().get() if job.description().isDefined() else job.name()
            found.append(Work("job", job.jobId(), began, ended or began, str(label)[:80]))
    runs = spark._jsparkSession.sharedState().statusStore().executionsList()
    for i in range(runs.size()):
        run = runs.apply(i)
        began = run.submissionTime() / 1000
        if start <= began <= end:
            ended = _date(run.completionTime()) or began
            found.append(Work("sql", run.executionId(), began, ended, " ".join(str(run.description()).split())[:80]))
    return sorted(found, key=lambda w: w.start)


def timed(spark: Any, action: Any) -> tuple[float, list[Work]]:
    """Run ``action``: its wall ms and Spark's jobs and SQL executions during it (after what came before settles)."""
    settle(spark)
    started = time.time()
    action()
    ended = time.time()
    return (ended - started) * 1000, between(spark, started, ended)
