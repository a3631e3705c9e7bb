"""Running steps concurrently: models as a DAG, and the batches of one model, as Spark jobs from threads.

Spark runs jobs submitted from several driver threads at once (and shares the
cores between them with the fair scheduler's pools); these helpers only decide
what may start when. With a limit of 1 everything runs in the calling thread,
in order, exactly as a sequential scheduler would.

>>> order = []
>>> run_dag(["a", "b", "c"], {"c": {"a", "b"}}, order.append, limit=1)
>>> order
['a', 'b', 'c']
>>> done = []
>>> run_batches([1, 2, 3, 4], lambda i: done.append(i) or i != 2, limit=1)
>>> done
[1, 2]
"""

from __future__ import annotations

import heapq
import json
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

from pyspark_incr.runtime import shim_class

T = TypeVar("T")

#: Spark's thread-local properties naming a job's pool and what it is, as shown in the Spark UI.
POOL, GROUP, DESCRIPTION = "spark.scheduler.pool", "spark.jobGroup.id", "spark.job.description"
#: The fair-scheduler pool of every job we start (FAIR inside, see bridge/fairscheduler.xml).
INCR_POOL = "incr"


class Places:
    """A call's places for Spark work, ``concurrency`` in all (SQLMesh's ``concurrent_tasks``): one for each
    model being built, and one for each batch a model runs beside its first. A model waiting to start
    comes before one more batch of a model already running."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._taken = 0
        self._models_waiting = False
        self._changed = threading.Condition()

    def take_for_model(self) -> bool:
        """Take a place for a model to start in; False when every place is taken."""
        with self._changed:
            if self._taken >= self.limit:
                return False
            self._taken += 1
            return True

    def take_for_batch(self) -> bool:
        """Take a place for one more batch of a running model; False when none is free or a model waits for one."""
        with self._changed:
            if self._models_waiting or self._taken >= self.limit:
                return False
            self._taken += 1
            return True

    def give(self) -> None:
        """Give a place back."""
        with self._changed:
            self._taken -= 1
            self._changed.notify_all()

    def free(self) -> bool:
        """Whether a place is free now."""
        with self._changed:
            return self._taken < self.limit

    def models_waiting(self, waiting: bool) -> None:
        """Say whether a ready model waits for a place (running models then take no more for their batches)."""
        with self._changed:
            self._models_waiting = waiting

    def wait_for(self, done: Callable[[], bool]) -> None:
        """Block until ``done()`` holds; it is checked again whenever a place is given back or :meth:`wake` is called."""
        with self._changed:
            self._changed.wait_for(done)

    def wake(self) -> None:
        """Have :meth:`wait_for` check its condition again (a model finished)."""
        with self._changed:
            self._changed.notify_all()


def run_dag(nodes: Sequence[str], deps: Mapping[str, Iterable[str]], work: Callable[[str], None], limit: int,
            inline: Callable[[str], bool] | None = None, places: Places | None = None) -> None:
    """Call ``work(node)`` for every node, each after the nodes it depends on, at most ``limit`` at once.

    ``nodes`` is in a topological order, which is also the order ready nodes start in.
    ``work`` reports failures itself; an exception escaping it is a bug and is re-raised.
    A node ``inline`` says is quick (a model with nothing to build: it starts no Spark job) runs in the
    calling thread once ready and takes no place among the ``limit``: a run of 1,000 models with one
    due starts one thread, and a run with nothing due none. ``places`` (default: ``limit`` of them) are
    shared with the batches the nodes run at once (:func:`run_batches`): each running node holds one.

    >>> order = []
    >>> run_dag(["a", "b", "c"], {"c": {"a", "b"}}, order.append, limit=2, inline=lambda n: n != "b")
    >>> order.index("c") > max(order.index("a"), order.index("b"))
    True
    """
    places = places or Places(limit)
    if limit <= 1:
        for node in nodes:
            _holding(places, work, node, quick=inline is not None and inline(node))
        return
    index = {n: i for i, n in enumerate(nodes)}
    waiting = {n: len(set(deps.get(n, ())) & index.keys()) for n in nodes}
    readers: dict[str, list[str]] = {}
    for node in nodes:
        for need in set(deps.get(node, ())) & index.keys():
            readers.setdefault(need, []).append(node)
    ready = [index[n] for n in nodes if not waiting[n]]
    heapq.heapify(ready)
    running: dict[Future, str] = {}
    pool: ThreadPoolExecutor | None = None

    def finished(node: str) -> None:
        for reader in readers.get(node, ()):
            waiting[reader] -= 1
            if not waiting[reader]:
                heapq.heappush(ready, index[reader])

    try:
        while ready or running:
            while ready:
                node = nodes[ready[0]]
                if inline is not None and inline(node):
                    heapq.heappop(ready)
                    work(node)
                    finished(node)
                    continue
                if not places.take_for_model():
                    break
                heapq.heappop(ready)
                pool = pool or ThreadPoolExecutor(max_workers=limit, thread_name_prefix="incr-model")
                future = pool.submit(_holding, places, work, node, held=True)
                future.add_done_callback(lambda _: places.wake())
                running[future] = node
            places.models_waiting(bool(ready))
            if running:
                places.wait_for(lambda: any(f.done() for f in running) or (bool(ready) and places.free()))
                for future in [f for f in running if f.done()]:
                    future.result()
                    finished(running.pop(future))
    finally:
        places.models_waiting(False)
        if pool is not None:
            pool.shutdown(wait=True)
    if any(waiting.values()):  # the planner sorted them: a bug
        raise RuntimeError(f"dependency cycle among {sorted(n for n, k in waiting.items() if k)}")


def _holding(places: Places, work: Callable[[str], None], node: str, quick: bool = False, held: bool = False) -> None:
    """``work(node)`` in a place of ``places`` (``held``: already taken for it), given back after; a ``quick``
    node takes none."""
    if not quick and not held:
        places.take_for_model()
    try:
        work(node)
    finally:
        if not quick:
            places.give()


def run_batches(items: Sequence[T], work: Callable[[T], bool], limit: int, places: Places | None = None) -> None:
    """Call ``work(item)`` in order, at most ``limit`` at once; after one returns False, start no more.

    The first batch running runs in its model's place; each one beside it takes one more of ``places``
    (when given) and runs only if one is free. Batches already running when one fails still finish (and
    record what they built). One batch, or a limit of 1, runs in the calling thread (a thread of its own
    would talk to the JVM over a connection of its own, for nothing).
    """
    if limit <= 1 or len(items) <= 1:
        for item in items:
            if not work(item):
                return
        return
    pending: Iterator[T] = iter(items)
    healthy = True
    extra = 0  # places taken for the batches running beside the first
    with ThreadPoolExecutor(max_workers=limit, thread_name_prefix="incr-batch") as pool:
        running: set[Future] = set()
        try:
            while True:
                while healthy and len(running) < limit:
                    took = bool(running) and places is not None
                    if took and not places.take_for_batch():
                        break
                    item = next(pending, _END)
                    if item is _END:
                        if took:
                            places.give()
                        break
                    extra += took
                    running.add(pool.submit(work, item))
                if not running:
                    return
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                healthy = all([f.result() for f in finished]) and healthy
                spare = max(0, extra - max(0, len(running) - 1))
                for _ in range(spare):
                    places.give()
                extra -= spare
        finally:  # a bug escaping ``work``: the places still held go back once the pool has stopped
            if extra:
                wait(running)
                for _ in range(extra):
                    places.give()


_END: Any = object()


@contextmanager
def spark_job(spark: Any, group: str, description: str, pool: str = INCR_POOL) -> Iterator[None]:
    """Label the Spark jobs this thread starts (fair-scheduler pool, job group, description), then restore.

    The labels are how the Spark UI (and a test) tells which batch a job belongs to, and
    how ``SparkContext.cancelJobGroup`` stops one run.
    """
    try:
        sc = spark.sparkContext
    except Exception:  # noqa: BLE001 - no SparkContext here (Spark Connect client): nothing to label
        yield
        return
    swap = shim_class(spark, "JobLabels").swap  # one round trip each way, not one per property
    before = swap(sc._jsc, json.dumps({POOL: pool, GROUP: group, DESCRIPTION: description}))
    try:
        yield
    finally:
        swap(sc._jsc, before)
