"""What every contender shares: the spec, the Spark session, the source tables, the data and the timing protocol.

Every runner (``run_<tool>.py``) imports this module from its own virtual
environment, so it uses pyspark only: no pyspark-incr, no peer library.

A runner is a :class:`Tool` plus :func:`main`. The parent (``bench/compare.py``)
starts one process per runner in ``warm`` mode (every workload in one session,
timed in-process after a warm-up) and then one process per step in ``cold``
mode (a scheduled job: JVM start included, timed by the parent). Timings come
back on stdout as lines ``BENCH {json}``; everything else a runner prints goes
to stderr.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

#: The first day of the generated data; day ``k`` is START + k days.
START = date(2024, 1, 1)


@dataclass(frozen=True)
class Spec:
    """Sizes and places of one benchmark run (written to ``<work>/spec.json``)."""

    work: str                   # absolute directory holding data/ and one home per tool
    rows: int = 20_000_000      # events over the backfill window
    days: int = 365             # backfill window: days [0, days)
    extra_days: int = 40        # days after the window, one per (b)/(e) step
    chain: int = 50             # models in the chain (e)
    chain_days: int = 10        # the chain starts this many days before the window ends (its backfill is set-up)
    keys: int = 1_000_000       # SCD2 keys (f)
    snapshots: int = 30         # SCD2 snapshots timed in the warm process; cold steps take the next ones
    cold_snapshots: int = 3
    change_pct: int = 1         # % of keys whose price changes per snapshot
    shuffle_partitions: int = 4
    driver_memory: str = "6g"
    reps_a: int = 5             # warm repetitions per workload (cold: compare.py); a: one until the twelfth run,
                                # three until the fifteenth (a contender's first a was its slowest in 8 of the 12
                                # series of the thirteenth to fifteenth runs: a median of three rested on two samples)
    reps_b: int = 7             # b moves most between runs: seven samples steady its median
    reps_c: int = 10
    reps_d: int = 1
    reps_e: int = 3             # e: 7.27 and 9.01 s in the tenth run's two samples; a third steadies the median
    reps_f0: int = 3            # f0 after a warm-up first load; once, unwarmed, until the sixteenth run (its one
                                # sample was the process's first SCD2 job: 3.1-4.1 s against 1.5 warm, a probe)

    @classmethod
    def load(cls, path: str | Path) -> "Spec":
        return cls(**json.loads(Path(path).read_text()))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=1))

    @property
    def data(self) -> Path:
        return Path(self.work) / "data"

    def home(self, tool: str) -> Path:
        return Path(self.work) / tool


def day(k: int) -> date:
    """Day ``k`` of the data."""
    return START + timedelta(days=k)


def chain_start(spec: "Spec") -> date:
    """The chain's first day: its backfill is untimed set-up, so it covers only the window's last days."""
    return day(spec.days - spec.chain_days)


def day_start(k: int) -> datetime:
    """Midnight UTC starting day ``k``: the execution time at which day ``k - 1`` is the newest complete day."""
    return datetime.combine(day(k), datetime.min.time(), tzinfo=timezone.utc)


# --------------------------------------------------------------------------- Spark


def spark_conf(spec: Spec, tool: str) -> dict[str, str]:
    """The same Spark settings for every contender; only the catalog's home differs."""
    home = spec.home(tool).resolve()
    return {
        "spark.master": "local[2]",
        "spark.app.name": f"bench-{tool}",
        "spark.driver.memory": spec.driver_memory,
        "spark.sql.shuffle.partitions": str(spec.shuffle_partitions),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(home / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
        # each JVM's collections in <home>/gc-<pid>.log: a's samples move by a third between repetitions; in the
        # seventeenth run the pauses inside an a were 0.2-0.9 s of its 20-33 s, young collections only
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={home} -Xlog:gc:file={home}/gc-%p.log:time,uptime",
        # the embedded Derby metastore now and then refuses a partition filter on src.events
        # (INTERNAL_ERROR_HIVE_METASTORE_PARTITION_FILTER: dbt's check after d in the sixteenth run, which ended
        # it); Spark then lists every partition instead (365), for whichever contender it happens to
        "spark.sql.hive.metastorePartitionPruningFallbackOnException": "true",
    }


def session(spec: Spec, tool: str, extra: Callable[[Any], Any] | None = None):
    """The contender's SparkSession (``extra`` may add to the builder, e.g. a plugin's jar)."""
    from pyspark.sql import SparkSession

    spec.home(tool).mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder
    for key, value in spark_conf(spec, tool).items():
        builder = builder.config(key, value)
    builder = builder.enableHiveSupport()
    if extra is not None:
        builder = extra(builder)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# --------------------------------------------------------------------------- data


#: The spec's fields the generated data depends on (a change writes it again).
DATA_KEYS = {"rows", "days", "extra_days", "keys", "snapshots", "cold_snapshots", "change_pct"}
EVENTS_COLUMNS = "event_id BIGINT, user_id BIGINT, event_type STRING, amount DOUBLE, event_ts TIMESTAMP, ds DATE"


def generate(spark, spec: Spec) -> None:
    """Write the shared source data once per spec: events by day, and item snapshots (skipped when present)."""
    stamp = spec.data / ".done"
    key = json.dumps({k: v for k, v in asdict(spec).items() if k in DATA_KEYS}, sort_keys=True)
    if stamp.exists() and stamp.read_text() == key:
        return
    import shutil

    shutil.rmtree(spec.data, ignore_errors=True)
    per_day = spec.rows // spec.days
    total_days = spec.days + spec.extra_days
    spark.range(0, per_day * total_days, numPartitions=max(2, total_days // 16)).selectExpr(
        "id AS event_id",
        "CAST(pmod(hash(id, 1), 100000) AS BIGINT) AS user_id",
        "element_at(array('view', 'click', 'cart', 'buy'), CAST(pmod(hash(id, 2), 4) AS INT) + 1) AS event_type",
        "CAST(ROUND(pmod(hash(id, 3), 100000) / 100.0, 2) AS DOUBLE) AS amount",
        f"CAST(DATE '{START}' AS TIMESTAMP) + make_dt_interval(0, 0, 0, CAST(id * 86400.0 / {per_day} AS DECIMAL(18, 6))) AS event_ts",
    ).selectExpr("*", "to_date(event_ts) AS ds").write.partitionBy("ds").parquet(str(spec.data / "events"))
    snapshots = spec.snapshots + spec.cold_snapshots
    spark.range(0, spec.keys).crossJoin(spark.range(0, snapshots).withColumnRenamed("id", "snap")).selectExpr(
        "id AS item_id",
        "concat('item ', id) AS name",
        "element_at(array('food', 'drink', 'home', 'toys', 'books'), CAST(pmod(id, 5) AS INT) + 1) AS category",
        # a key's price rises by 1 at each snapshot k with (k + id) % P == 0: change_pct % of the keys per snapshot
        f"CAST(ROUND(10 + pmod(id, 997) / 10.0 + FLOOR((snap + pmod(id, {100 // spec.change_pct})) / "
        f"{100 // spec.change_pct}), 2) AS DOUBLE) AS price",
        "snap",
    ).write.partitionBy("snap").parquet(str(spec.data / "items"))
    stamp.write_text(key)


def register_sources(spark, spec: Spec) -> None:
    """``src.events`` and ``src.item_snapshots`` over the shared files, in this contender's catalog."""
    spark.sql("CREATE DATABASE IF NOT EXISTS src")
    tables = {t.name for t in spark.catalog.listTables("src")}
    if "events" not in tables:
        spark.sql(f"CREATE TABLE src.events ({EVENTS_COLUMNS}) USING parquet PARTITIONED BY (ds) "
                  f"LOCATION '{spec.data / 'events'}'")
        spark.sql("ALTER TABLE src.events RECOVER PARTITIONS")
    if "item_snapshots" not in tables:
        spark.sql("CREATE TABLE src.item_snapshots (item_id BIGINT, name STRING, category STRING, price DOUBLE, "
                  f"snap BIGINT) USING parquet PARTITIONED BY (snap) LOCATION '{spec.data / 'items'}'")
        spark.sql("ALTER TABLE src.item_snapshots RECOVER PARTITIONS")


def point_items(spark, snapshot: int) -> None:
    """Make ``src.items`` (a view every contender's SCD2 model reads) show snapshot ``snapshot``."""
    spark.sql("CREATE OR REPLACE VIEW src.items AS SELECT item_id, name, category, price "
              f"FROM src.item_snapshots WHERE snap = {int(snapshot)}")


# --------------------------------------------------------------------------- expected results


def expected_rows(spark, spec: Spec, workload: str, newest: int) -> int:
    """Rows the contender's output must hold once day ``newest`` (or snapshot ``newest``) is built."""
    end = day(newest + 1)
    if workload in ("a", "d"):
        return spark.sql(f"SELECT count(*) FROM src.events WHERE ds < DATE '{end}'").first()[0]
    if workload == "e":
        return spark.sql(f"SELECT count(DISTINCT ds, pmod(user_id, 100)) FROM src.events "
                         f"WHERE ds >= DATE '{chain_start(spec)}' AND ds < DATE '{end}'").first()[0]
    if workload == "f":  # one version per key, plus one per price change since (counting them scans 30M rows)
        return spec.keys + sum(changed_keys(spec, k) for k in range(1, newest + 1))
    raise ValueError(workload)


def changed_keys(spec: Spec, snapshot: int) -> int:
    """Keys whose price changes at ``snapshot``: those with ``id % P == -snapshot mod P`` (see :func:`generate`).

    >>> changed_keys(Spec(work="", keys=250, change_pct=1), 1)  # ids 99 and 199
    2
    >>> changed_keys(Spec(work="", keys=250, change_pct=1), 100)  # ids 0, 100 and 200
    3
    """
    period = 100 // spec.change_pct
    residue = -snapshot % period
    return spec.keys // period + (1 if residue < spec.keys % period else 0)


# --------------------------------------------------------------------------- the models, in words every tool can take

#: (a), (b), (c), (d): one row per event of the interval. ``{start}``/``{end}``: the tool's inclusive day bounds.
DAILY_SQL = ("SELECT event_id, user_id, event_type, amount, ROUND(amount * 1.2, 2) AS amount_gross, event_ts, ds "
             "FROM src.events WHERE ds BETWEEN {start} AND {end}")
#: (e): the chain's first model aggregates a day to 100 buckets ...
CHAIN_FIRST_SQL = ("SELECT ds, pmod(user_id, 100) AS bucket, count(*) AS events, ROUND(sum(amount), 2) AS total "
                   "FROM src.events WHERE ds BETWEEN {start} AND {end} GROUP BY ds, pmod(user_id, 100)")
#: ... and each next one reads the one before (``{parent}``).
CHAIN_NEXT_SQL = "SELECT ds, bucket, events + 1 AS events, total FROM {parent} WHERE ds BETWEEN {start} AND {end}"
#: (f): SCD type 2 by column: unique key item_id; a change in any of SCD2_COLUMNS makes a new version.
SCD2_SQL = "SELECT item_id, name, category, price FROM src.items"
SCD2_COLUMNS = ("name", "category", "price")


#: What users read each single-model workload from (e: the chain's last model, see ``Tool.output``).
OUTPUTS = {"a": "bench.daily", "d": "bench.daily_b1", "f": "bench.items_scd2"}


def chain_name(k: int) -> str:
    """Model ``k`` (1-based) of the chain, without schema."""
    return f"chain_{k:02d}"


# --------------------------------------------------------------------------- the contender


class Tool:
    """One contender. Subclasses implement the steps; ``main`` times them.

    Workloads: ``a`` a daily INCREMENTAL_BY_TIME_RANGE model (its default batching; steps b and c run it
    again), ``d`` the same model with batch_size 1, ``e`` a chain of ``spec.chain`` such models, ``f`` an
    SCD type 2 model by column over ``src.items``.
    """

    name = "?"
    #: workload -> why this contender cannot run it (shown in the report instead of a time)
    cannot: dict[str, str] = {}

    def __init__(self, spark, spec: Spec) -> None:
        self.spark, self.spec = spark, spec
        self.home = spec.home(self.name)

    @classmethod
    def versions(cls) -> dict[str, str]:
        """Name -> version of what this contender runs (printed in the report)."""
        import pyspark

        return {"pyspark": pyspark.__version__}

    def setup(self) -> None:
        """Once per process, untimed: project files, schemas."""

    def reset(self, workload: str) -> None:
        """Forget everything of ``workload``: its tables and its state."""
        raise NotImplementedError

    def create_state(self, workload: str) -> None:
        """Create ``workload``'s project state after a reset, before its first apply (untimed in a, d and f0).

        A deployment creates its state store once, with its first apply; every model added later is
        backfilled into state that exists. The steps time a model's first build, so the state is set-up,
        for every contender that keeps some, and its creation is timed on its own as row ``s``.
        """

    #: Whether the contender keeps state (``create_state`` does something, timed as ``s``).
    keeps_state = False

    def extra_steps(self, workload: str) -> dict[str, tuple[Callable[[], None], Callable[[], None]]]:
        """Steps only this contender times right after ``workload``'s: name -> (timed action, untimed check)."""
        return {}

    def backfill(self, workload: str, days: int) -> None:
        """First build of ``workload`` (a, d or e): days [0, days) -- e: [days - chain_days, days) --, as of
        midnight starting day ``days``."""
        raise NotImplementedError

    def run(self, workload: str, newest: int) -> None:
        """A scheduled run at midnight starting day ``newest + 1`` (a or e: every day through ``newest`` not built
        yet is due -- the parent passes the day after the last one built; f: ``src.items`` shows snapshot
        ``newest``, taken that day)."""
        raise NotImplementedError

    def output(self, workload: str) -> str:
        """The table (or view) users read ``workload``'s result from."""
        return OUTPUTS[workload] if workload != "e" else f"bench.{chain_name(self.spec.chain)}"

    def objects(self, workload: str) -> list[str]:
        """Every table (or view) users read of ``workload``: its output, or each model of the chain."""
        if workload != "e":
            return [self.output(workload)]
        return [f"bench.{chain_name(k)}" for k in range(1, self.spec.chain + 1)]

    # ------------------------------------------------------------------ helpers for main

    def check(self, workload: str, newest: int) -> None:
        want = expected_rows(self.spark, self.spec, workload, newest)
        self.spark.catalog.refreshTable(self.output(workload))
        got = self.spark.sql(f"SELECT count(*) FROM {self.output(workload)}").first()[0]
        if got != want:
            raise AssertionError(f"{self.name} {workload} through {newest}: {got} rows, expected {want}")


def warm(tool: Tool) -> None:
    """Every workload in this one session, after a warm-up; each step timed in-process.

    The work comes in units (the warm-up, each timed step with the untimed work around it, the chain's first
    build), numbered alike in every contender whatever it cannot run; under compare.py's lockstep each unit
    waits for the parent's go (:func:`gate`).
    """
    spec, spark = tool.spec, tool.spark
    for workload, why in tool.cannot.items():
        emit(tool=tool.name, mode="warm", workload=workload, skipped=why)
    numbers = itertools.count()

    def unit(workload: str) -> bool:
        """Whether this contender does the next unit (after waiting for its go)."""
        number = next(numbers)
        if workload in tool.cannot:
            return False
        gate(number)
        return True

    def step(workload: str, rep: int, action: Callable[[], None], check: tuple[str, int]) -> None:
        read_through(spec.data)
        with timed() as t:
            action()
        emit(tool=tool.name, mode="warm", workload=workload, rep=rep, seconds=t.seconds)
        tool.check(*check)
        for name, (extra, verify) in tool.extra_steps(workload).items():
            with timed() as t:
                extra()
            emit(tool=tool.name, mode="warm", workload=name, rep=rep, seconds=t.seconds)
            verify()

    states = itertools.count()

    def fresh(workload: str, timed_as_s: bool = True) -> None:
        """Forget ``workload``, then create its project's state (timed as ``s``, not as the step after)."""
        tool.reset(workload)
        with timed() as t:
            tool.create_state(workload)
        if tool.keeps_state and timed_as_s:
            emit(tool=tool.name, mode="warm", workload="s", rep=next(states), seconds=t.seconds)

    if unit("a"):  # warm-up: the first runs of each path compile Spark's code and the tool's
        fresh("a", timed_as_s=False)
        tool.backfill("a", 30)
        for newest in range(30, 30 + WARM_UP_RUNS):  # a tool's daily run may take another path than its backfill
            tool.run("a", newest)
        tool.check("a", 29 + WARM_UP_RUNS)
        if "c" not in tool.cannot:
            tool.run("a", 29 + WARM_UP_RUNS)
    for rep in range(spec.reps_a):
        if unit("a"):
            fresh("a")
            # every repetition reads days it never listed, as the first does (its warm-up read 35 of the 365): a
            # contender keeping the listing of the repetition before would read it while others list again
            spark.catalog.refreshTable("src.events")
            step("a", rep, lambda: tool.backfill("a", spec.days), ("a", spec.days - 1))
    for rep in range(spec.reps_b):
        newest = spec.days + rep
        if unit("b"):
            step("b", rep, lambda: tool.run("a", newest), ("a", newest))
    newest = spec.days + spec.reps_b - 1
    for rep in range(spec.reps_c):
        if unit("c"):
            step("c", rep, lambda: tool.run("a", newest), ("a", newest))
    for rep in range(spec.reps_d):
        if unit("d"):
            fresh("d")
            step("d", rep, lambda: tool.backfill("d", spec.days), ("d", spec.days - 1))
    if unit("e"):
        tool.reset("e")
        tool.backfill("e", spec.days)
        tool.check("e", spec.days - 1)
    for rep in range(spec.reps_e):
        newest = spec.days + rep
        if unit("e"):
            step("e", rep, lambda: tool.run("e", newest), ("e", newest))
    if unit("f"):  # warm-up: the first load's path once (nothing before it ran a window, a join or this write)
        fresh("f", timed_as_s=False)
        point_items(spark, 0)
        tool.run("f", 0)
        tool.check("f", 0)
        for extra, verify in tool.extra_steps("f0").values():
            extra()
            verify()
    for rep in range(spec.reps_f0):
        if unit("f"):
            fresh("f")
            point_items(spark, 0)
            step("f0", rep, lambda: tool.run("f", 0), ("f", 0))
    for snap in range(1, spec.snapshots):
        if unit("f"):
            point_items(spark, snap)
            step("f", snap, lambda: tool.run("f", snap), ("f", snap))


#: Daily runs in the warm-up, after its backfill (b's samples fell for five runs when it had none).
WARM_UP_RUNS = 5

#: Set by compare.py: the warm process waits for a go on stdin before each unit of work.
LOCKSTEP = "BENCH_LOCKSTEP"


def gate(number: int) -> None:
    """Under compare.py's lockstep, say this process waits before unit ``number``, and wait for the go.

    The parent lets one contender work at a time, every contender's unit ``n`` one after the other, so a
    change in the machine's speed during the run reaches every contender's samples alike (the contenders
    ran one after the other before, each its whole run).
    """
    if os.environ.get(LOCKSTEP) != "1":
        return
    emit(event="wait", unit=number)
    if not sys.stdin.readline():
        raise SystemExit("the parent (compare.py) went away")


def cold(tool: Tool, workload: str, arg: int) -> None:
    """One scheduled job: the step alone in this fresh process (what came before it in the process is
    reported as ``untimed`` and left out by the parent)."""
    spec = tool.spec
    if workload in tool.cannot:
        emit(tool=tool.name, mode="cold", workload=workload, rep=arg, skipped=tool.cannot[workload])
        return
    with timed() as prep:
        if workload in ("a", "d"):
            tool.reset(workload)
            tool.create_state(workload)
        if workload == "f":
            point_items(tool.spark, arg)
    run: Callable[[], None] = {
        "a": lambda: tool.backfill("a", spec.days),
        "d": lambda: tool.backfill("d", spec.days),
        "b": lambda: tool.run("a", arg),
        "c": lambda: tool.run("a", arg),
        "e": lambda: tool.run("e", arg),
        "f": lambda: tool.run("f", arg),
    }[workload]
    with timed() as t:
        run()
    emit(tool=tool.name, mode="cold", workload=workload, rep=arg, seconds=t.seconds, untimed=prep.seconds)
    newest = spec.days - 1 if workload in ("a", "d") else arg
    tool.check({"b": "a", "c": "a"}.get(workload, workload), newest)


def ready(tool_class: type[Tool], spec: Spec, extra: Callable[[Any], Any] | None = None) -> Tool:
    """A contender in this process, set up: in its home, its session made, the sources registered."""
    home = spec.home(tool_class.name).resolve()
    home.mkdir(parents=True, exist_ok=True)
    os.chdir(home)  # derby.log, spark-warehouse and the peers' own files stay in the contender's home
    spark = session(spec, tool_class.name, extra)
    register_sources(spark, spec)
    tool = tool_class(spark, spec)
    tool.setup()
    return tool


def main(tool_class: type[Tool], extra: Callable[[Any], Any] | None = None) -> None:
    """``run_<tool>.py --spec FILE warm`` or ``... cold WORKLOAD [ARG]``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", required=True)
    parser.add_argument("mode", choices=["warm", "cold", "versions"])
    parser.add_argument("workload", nargs="?")
    parser.add_argument("arg", nargs="?", type=int, default=0)
    args = parser.parse_args()
    spec = Spec.load(args.spec)
    if args.mode == "versions":
        emit(tool=tool_class.name, versions=tool_class.versions())
        return
    tool = ready(tool_class, spec, extra)
    emit(tool=tool.name, mode=args.mode, event="ready")
    if args.mode == "warm":
        warm(tool)
    else:
        cold(tool, args.workload, args.arg)
    emit(tool=tool.name, mode=args.mode, event="done")


# --------------------------------------------------------------------------- protocol


def emit(**fields: Any) -> None:
    """One timing line for the parent."""
    print("BENCH " + json.dumps({**fields, "t": time.time()}), flush=True)


def read_through(*roots: Path) -> None:
    """Read every file under ``roots`` once (untimed), so that the step after finds them in the OS page cache.

    The project's machine (a Firecracker VM) pages out file pages that no process maps once they have gone
    unread for a minute (DAMON ``pageout``: ``/sys/kernel/mm/damon/admin/kdamonds/0``, minimum age 12
    aggregations of 5 s, anonymous memory left alone, up to 128 MB a second). Whether a step read its source
    or its Spark jars from disk then depended on how long ago another contender had read them: the events'
    493 MB took 4.0 s to read after a long idle, 0.14 s right after, 1.2 s after 150 s.
    """
    resolved = [Path(root).resolve() for root in roots]
    for root in dict.fromkeys(resolved):
        if any(other != root and other in root.parents for other in resolved):
            continue  # read with the root holding it (pyspark inside the site-packages)
        for path in sorted(root.rglob("*")) if root.is_dir() else [root]:
            if path.is_file():
                with path.open("rb") as f:
                    while f.read(1 << 22):
                        pass


def java_home() -> Path:
    """The Java runtime every contender's JVM loads (``JAVA_HOME``, else the ``java`` on ``PATH``), to read through:
    after the page cache was dropped, a hand-written cold process took ~0.6 s longer with it and its interpreter's
    site-packages unread (a probe, docs/benchmarks.md's page-cache paragraph)."""
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"])
    java = shutil.which("java")
    return Path(java).resolve().parents[1] if java else Path("/nonexistent-java-home")


def process_reads(spec: Spec, tool: str, packages: tuple[Path, ...]) -> tuple[Path, ...]:
    """What a fresh process of ``tool`` reads, to read through: the data, ``packages`` (its interpreter's, as
    :func:`interpreter_packages` names them), the Java runtime and the tool's metastore."""
    return (spec.data, *packages, java_home(), spec.home(tool) / "metastore_db")


def interpreter_packages() -> tuple[Path, Path]:
    """This interpreter's pyspark package (Spark's jars) and site-packages (pyarrow, sqlglot, the tool)."""
    import sysconfig

    import pyspark

    return Path(pyspark.__file__).resolve().parent, Path(sysconfig.get_paths()["purelib"])


def own_reads(spec: Spec, tool: str) -> tuple[Path, ...]:
    """:func:`process_reads` of a fresh process of this interpreter."""
    return process_reads(spec, tool, interpreter_packages())


def save_samples(prefix: str, record: dict) -> Path:
    """Write a bench script's samples to ``bench/out/<prefix>-<time>.json``; its path."""
    out = Path(__file__).resolve().parents[1] / "out" / f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1))
    return out


def compiled_as_installed() -> None:
    """Write pyspark-incr's bytecode, as pip does when it installs the wheel (untimed).

    The peers come from pip with theirs; pyspark-incr runs from this checkout (an editable install), whose
    modules every process compiles again when nothing may write bytecode (PYTHONDONTWRITEBYTECODE, set on the
    project's machine): 0.28 s of each cold process on a slow machine, which no installed user pays.
    """
    import compileall

    import pyspark_incr

    compileall.compile_dir(str(Path(pyspark_incr.__file__).parent), quiet=1)


class timed:
    """``with timed() as t: ...`` then ``t.seconds``."""

    def __enter__(self) -> "timed":
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self.started
