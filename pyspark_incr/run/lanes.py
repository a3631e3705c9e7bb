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
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

from pyspark_incr.runtime import shim_class

T = TypeVar("T")

#: Spark's thread-local properties naming a job's pool and what it is, as shown in the Spark UI.
POOL, GROUP, DESCRIPTION = "spark.scheduler.pool", "spark.jobGroup.id", "spark.job.description"
#: The fair-scheduler pool of every job we start (FAIR inside, see bridge/fairscheduler.xml).
INCR_POOL = "incr"


def run_dag(nodes: Sequence[str], deps: Mapping[str, Iterable[str]], work: Callable[[str], None], limit: int,
            inline: Callable[[str], bool] | None = None) -> None:
    """Call ``work(node)`` for every node, each after the nodes it depends on, at most ``limit`` at once.

    ``nodes`` is in a topological order, which is also the order ready nodes start in.
    ``work`` reports failures itself; an exception escaping it is a bug and is re-raised.
    A node ``inline`` says is quick (a model with nothing to build: it starts no Spark job) runs in the
    calling thread once ready and takes no place among the ``limit``: a run of 1,000 models with one
    due starts one thread, and a run with nothing due none.

    >>> order = []
    >>> run_dag(["a", "b", "c"], {"c": {"a", "b"}}, order.append, limit=2, inline=lambda n: n != "b")
    >>> order.index("c") > max(order.index("a"), order.index("b"))
    True
    """
    if limit <= 1:
        for node in nodes:
            work(node)
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
                node = nodes[heapq.heappop(ready)]
                if inline is not None and inline(node):
                    work(node)
                    finished(node)
                    continue
                pool = pool or ThreadPoolExecutor(max_workers=limit, thread_name_prefix="incr-model")
                running[pool.submit(work, node)] = node
            if running:
                for future in wait(running, return_when=FIRST_COMPLETED)[0]:
                    future.result()
                    finished(running.pop(future))
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    if any(waiting.values()):  # the planner sorted them: a bug
        raise RuntimeError(f"dependency cycle among {sorted(n for n, k in waiting.items() if k)}")


def run_batches(items: Sequence[T], work: Callable[[T], bool], limit: int) -> None:
    """Call ``work(item)`` in order, at most ``limit`` at once; after one returns False, start no more.

    Batches already running when one fails still finish (and record what they built).
    """
    if limit <= 1:
        for item in items:
            if not work(item):
                return
        return
    pending: Iterator[T] = iter(items)
    healthy = True
    with ThreadPoolExecutor(max_workers=limit, thread_name_prefix="incr-batch") as pool:
        running: set[Future] = set()
        while True:
            while healthy and len(running) < limit:
                item = next(pending, _END)
                if item is _END:
                    break
                running.add(pool.submit(work, item))
            if not running:
                return
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            healthy = all([f.result() for f in finished]) and healthy


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
