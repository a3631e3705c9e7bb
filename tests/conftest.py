"""Shared fixtures: ONE embedded Spark session for the whole test run (a JVM start costs ~5 s).

``incr_home`` is the directory holding its Derby metastore and warehouse; the
session already has the plugin attached, so ``spark.sql("CALL incr.…")`` works.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path

import pytest


#: Fixture projects hold Python files (models, macros) that only load inside a project: never collected.
collect_ignore_glob = ["fixtures/*"]

#: Test files that use the installed wheel and the standalone cluster (session fixtures below): one xdist
#: worker runs them all, so the wheel is built and installed, and the cluster started, once per run.
WHEEL_FILES = frozenset({"test_wheel.py", "test_cluster.py", "test_race_trials.py"})
WHEEL_SCOPE = "wheel-and-cluster"

#: The longest work units, longest first (each one's seconds in the summary this file prints, clean clone of
#: 803e2ca on 2026-12-07, the machine ~2x slow: wheel-and-cluster 1,448, the others 499 down to 149), handed out
#: before every other file. xdist orders units by their number of tests, which put the one-test trials last: a
#: worker could start the 370-s crash trial while the other had nothing left to do. With this order the two
#: workers were busy 3,106 and 3,079 s of that run's 3,126.
LONGEST_FIRST = (WHEEL_SCOPE, "tests/test_crash_harness.py", "tests/test_hostile_input.py", "tests/test_docs_run.py",
                 "tests/test_jobs.py", "tests/test_unique_key.py", "tests/test_postgres_metastore.py",
                 "tests/test_safety_equivalence.py", "tests/test_scd2.py", "tests/test_bridge.py")


def _unit(nodeid: str) -> str:
    """The xdist work unit a test belongs to: its file, or WHEEL_SCOPE for the WHEEL_FILES."""
    file = nodeid.split("::", 1)[0]
    return WHEEL_SCOPE if Path(file).name in WHEEL_FILES else file


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Each file's tests on one worker (``--dist loadfile``), the WHEEL_FILES together on one, LONGEST_FIRST first.

    A scheduler keyed on node ids, because xdist 3.8 on pytest 9.2 ignores ``xdist_group`` marks
    (stop 35: a group's tests ran on both workers).
    """
    from xdist.scheduler import LoadScopeScheduling

    rank = {scope: i for i, scope in enumerate(LONGEST_FIRST)}

    class _FileOrWheel(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            # the queue keeps xdist's order (most tests first) behind the longest units; an xdist whose queue
            # is no longer an OrderedDict just keeps its own order
            queue = getattr(self, "workqueue", None)
            if isinstance(queue, OrderedDict) and queue:
                queue.move_to_end(min(queue, key=lambda scope: rank.get(scope, len(rank))), last=False)
            super()._assign_work_unit(node)

    return _FileOrWheel(config, log)


#: Seconds each xdist worker spent in each work unit's tests (setup, call and teardown), as the controller hears.
_SPENT: dict[str, dict[str, float]] = {}


def pytest_runtest_logreport(report) -> None:
    worker = getattr(getattr(report, "node", None), "gateway", None)
    if worker is not None:  # on the xdist controller only: a worker's own reports carry no node
        units, scope = _SPENT.setdefault(worker.id, {}), _unit(report.nodeid)
        units[scope] = units.get(scope, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter) -> None:
    """Each worker's busy seconds and longest units: whether the two workers finished together (CI's wall time)."""
    if not _SPENT:
        return
    terminalreporter.section("time per xdist worker")
    for worker, units in sorted(_SPENT.items()):
        longest = sorted(units.items(), key=lambda kv: -kv[1])[:6]
        terminalreporter.write_line(f"{worker}: {sum(units.values()):.0f} s in {len(units)} units; longest: "
                                    + ", ".join(f"{scope} {spent:.0f} s" for scope, spent in longest))


@pytest.fixture(scope="session")
def incr_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("incr_home")


@pytest.fixture(scope="session")
def spark(incr_home: Path):
    from pyspark_incr.bridge.session import embedded_session

    session = embedded_session(incr_home)
    yield session
    session.stop()


@contextmanager
def _isolation(spark, name: str):
    """Point the session at a fresh state schema named after ``name``; restore the conf after."""
    # readable, and unique: parametrized cases share a long common start
    digest = hashlib.sha1(name.encode()).hexdigest()[:6]
    prefix = "t_" + re.sub(r"[^a-z0-9]+", "_", name.lower())[:34].strip("_") + "_" + digest
    keys = {"spark.incr.stateSchema": f"{prefix}_state", "spark.incr.physicalSchema": f"{prefix}_physical"}
    old = {key: spark.conf.get(key, None) for key in keys}
    for key, value in keys.items():
        spark.conf.set(key, value)
    try:
        yield prefix
    finally:
        for key, value in old.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@pytest.fixture()
def isolated(spark, request):
    """A fresh state schema and a unique schema prefix for this test."""
    with _isolation(spark, request.node.name) as prefix:
        yield prefix


@pytest.fixture(scope="module")
def module_isolated(spark, request):
    """A fresh state schema and a unique schema prefix shared by one test module."""
    with _isolation(spark, request.module.__name__.rpartition(".")[2]) as prefix:
        yield prefix


def state_rows(spark, prefix: str) -> dict[str, int]:
    """Row count of every state table of ``prefix`` that records data (empty when the schema does not exist yet).

    The ``locks`` table is left out: it holds who was writing (claims), not what was written.
    """
    if not spark.catalog.databaseExists(f"{prefix}_state"):
        return {}
    return {
        t.name: spark.table(f"{prefix}_state.{t.name}").count()
        for t in spark.catalog.listTables(f"{prefix}_state") if t.name != "locks" and not t.isTemporary
    }


def tables_in(spark, *schemas: str) -> set[str]:
    """Names of the tables and views in ``schemas`` that exist."""
    return {
        f"{s}.{t.name}" for s in schemas if spark.catalog.databaseExists(s) for t in spark.catalog.listTables(s)
        if not t.isTemporary  # the session's temporary views are listed in every schema
    }


def physical(spark, model: str, env: str = "prod") -> str:
    """The physical table (quoted) holding the version of ``model`` that ``env`` shows."""
    from pyspark_incr.state.store import StateStore

    return StateStore(spark).environment(env)[model].table_name


def hold_claim(spark, key: str, owner: str, lease_s: float, work=(), procedure: str = "run") -> None:
    """A claim on ``key`` as a call killed while holding it would have left it (never renewed, never released)."""
    from pyspark_incr.state import claims
    from pyspark_incr.state import tables as t
    from pyspark_incr.state.store import StateStore, table_location

    store = StateStore(spark)
    store.ensure()
    root = claims.root(table_location(spark, store.schema, t.LOCKS.name).toString())
    rec = claims.record(key, owner, procedure, "app-gone", int(lease_s * 1000), work, "prod")
    assert claims.attempt(spark, claims.key_dir(root, key), rec).claim is not None


def call(spark, procedure: str, **args) -> list:
    """``CALL incr.<procedure>(...)`` through Spark SQL, as a user types it; the result rows."""
    from pyspark_incr.sqltext import call_sql

    return spark.sql(call_sql(procedure, **args)).collect()


# --- pyspark-incr installed as a user installs it (tests/services/install.py) -------------------


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel ``python -m build`` makes of this checkout (built once per test run)."""
    from services.install import build_wheel

    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="session")
def install_of(wheel, tmp_path_factory: pytest.TempPathFactory):
    """``install_of(pyspark)``: a fresh venv with the wheel and that pyspark (None: the newest declared), made once."""
    from services.install import Install

    _installs: dict[str, Install] = {}

    def make(pyspark: str | None = None):
        # bench/versions.sh pins the default install's pyspark to each declared version in turn
        pyspark = pyspark or os.environ.get("PYSPARK_INCR_TEST_PYSPARK") or None
        key = pyspark or "newest"
        if key not in _installs:
            _installs[key] = Install.create(tmp_path_factory.mktemp(f"install-{key}"), wheel, pyspark)
        return _installs[key]

    return make


@pytest.fixture(scope="session")
def standalone(install_of, tmp_path_factory: pytest.TempPathFactory):
    """A Spark standalone master and worker (tests/services/cluster.py) beside a shared metastore service.

    The cluster runs the Spark of the wheel's default install (its pyspark's own ``spark-class``),
    so driver and executors have one Spark version whichever pyspark that install pinned.

    Yields ``(cluster, metastore)``; applications submitted to ``cluster.url`` with
    ``metastore.spark_conf()`` share one catalog and one warehouse, and run their tasks in executor
    JVMs the worker launches.
    """
    from services.cluster import StandaloneCluster
    from services.metastore import MetastoreService

    metastore = MetastoreService.start(tmp_path_factory.mktemp("cluster-metastore"))
    try:
        install = install_of()
        found = install.run([str(install.python), "-c", "import pyspark; print(pyspark.__path__[0])"], cwd=install.venv)
        spark_home = Path(found.stdout.strip())
        cluster = StandaloneCluster.start(tmp_path_factory.mktemp("cluster"), spark_home, cores=2, memory="2g")
    except BaseException:
        metastore.stop()
        raise
    yield cluster, metastore
    cluster.stop()
    metastore.stop()
