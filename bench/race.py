"""Race trials: separate Spark applications on one shared Hive metastore contend for the same work.

    .venv/bin/python bench/race.py [--rounds 20] [--apps 2] [--kinds all] [--modes all] [--seed N] [--work DIR]
                                   [--postgres URL] [--cluster]

Every application is its own process with its own JVM (tests/services/app.py), all on one Hive
Metastore thrift service (tests/services/metastore.py) and one warehouse; with ``--cluster`` they
run their tasks in executors of a Spark standalone cluster (tests/services/cluster.py). Each round, for one
model kind: the first application creates the sources and the model beside a reference copy of
it, applies both through the base days, and new data arrives; then every application calls
``incr.run`` on the model at the same moment, in one of these modes:

- ``fair``: nothing in the way;
- ``stall``: one application stalls 300-800 ms at a random step of the claim protocol (after
  listing, after fencing, after creating its claim, before or after claiming, before a commit,
  just before a batch's rows go public);
- ``pause``: one application is stopped (SIGSTOP, Python and JVM) at a random moment for
  0.3-3 s, as a GC pause would;
- ``lapse``: leases of 3 s, and the first application to reach a commit (or, in half the rounds,
  the point mid-batch where its rows are about to go public) stalls there for 8 s, renewals
  included: another application must take over, and the stalled one commit nothing;
- ``kill``: leases of 3 s, and the first application is killed (SIGKILL, JVM included) at a
  random moment of its run; the others must finish the work exactly (then it is started again);
- ``apply``: the first application calls ``incr.apply`` (a deploy, which backfills what is missing)
  while the others call ``incr.run``;
- ``janitor``: the model was changed before (its first version is unreferenced); the first application
  calls ``incr.janitor`` (dropping it, ``older_than => '0 days'``) while the others run the model
  (in this mode and the next two, the first application starts 0-5 s late, at random);
- ``revert``: as ``janitor``, but the second application applies the first version again, which takes
  its unreferenced table up again: either the janitor keeps it, or the apply builds it anew;
- ``dropenv``: the model is in environment ``dev`` too; the first application drops ``dev`` while the
  second applies the model to ``dev`` and the others run it in prod: ``dev`` is then either gone
  entirely or whole and equal to the reference.

SEED models have no intervals: their file changes, and every application calls ``incr.apply``.

Then the checks: every interval built by exactly one application; the model's table equals the
reference, built alone afterwards, row for row (EXCEPT ALL both ways); state says every interval
is built and nothing is in flight; and a further run has nothing to do. One line per round, a
summary per kind and mode, exit status 1 if any round failed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from services.app import App  # noqa: E402
from services.cluster import StandaloneCluster  # noqa: E402
from services.metastore import MetastoreService, Postgres  # noqa: E402

from pyspark_incr.sqltext import call_sql  # noqa: E402

BASE_AT, RUN_AT = "2024-01-04 00:00:00", "2024-01-08 00:00:00"
STALL_POINTS = ("listed", "fenced", "created", "before-claim", "after-claim", "before-commit", "before-publish")
MODES = ("fair", "stall", "pause", "lapse", "kill", "apply", "janitor", "revert", "dropenv")


@dataclass(frozen=True)
class Kind:
    """One model kind under trial: its MODEL kind clause and query (``{raw}``: the sources' schema)."""

    name: str
    kind_sql: str
    query: str
    extra: str = ""
    #: Whether each interval is built once (kinds without intervals rebuild the whole object).
    intervals: bool = True
    #: Whether a version built anew from today's sources equals one built over time (SCD type 2 keeps
    #: history a rebuild cannot see, so ``revert`` is not raced for it: ``janitor`` is, in its turn).
    rebuilds_equal: bool = True

    def definition(self, name: str, raw: str, seed: Path, version: int = 1) -> str:
        """The model's MODEL block and query; version 2 is a new version with the same rows."""
        if self.name == "seed":
            amount = "INT" if version == 1 else "BIGINT"
            return (f"MODEL (name {name}, kind SEED (path '{seed}'), "
                    f"columns (id INT, customer INT, amount {amount}, ds DATE))")
        query = self.query.format(raw=raw)
        if version == 2:
            query = f"SELECT * FROM ({query}) AS v2"
        cron = self.extra or ", cron '@daily'"
        return f"MODEL (name {name}, kind {self.kind_sql}, start '2024-01-01'{cron}); {query}"


KINDS = {k.name: k for k in (
    Kind("time_range", "INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 1)",
         "SELECT ds, customer, SUM(amount) AS total, COUNT(*) AS n FROM {raw}.events "
         "WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds, customer"),
    Kind("time_range_shared_partitions", "INCREMENTAL_BY_TIME_RANGE (time_column ts, batch_size 12)",
         "SELECT ts, CAST(ts AS DATE) AS event_date, customer, amount FROM {raw}.events "
         "WHERE ts BETWEEN @start_ts AND @end_ts", ", partitioned_by (event_date), cron '@hourly'"),
    Kind("unmanaged", "INCREMENTAL_UNMANAGED",
         "SELECT id, customer, amount, ds FROM {raw}.events WHERE ds BETWEEN @start_ds AND @end_ds"),
    Kind("cursor", "INCREMENTAL_BY_CURSOR (cursor_column ts, initial_value '2024-01-01')",
         "SELECT id, customer, amount, ts FROM {raw}.events WHERE ts > @last_value", intervals=False),
    Kind("unique_key", "INCREMENTAL_BY_UNIQUE_KEY (unique_key customer, batch_size 1)",
         "SELECT customer, id AS last_id, amount AS last_amount, ds AS last_ds FROM {raw}.events "
         "WHERE ds BETWEEN @start_ds AND @end_ds "
         "QUALIFY ROW_NUMBER() OVER (PARTITION BY customer ORDER BY ts DESC, id DESC) = 1"),
    Kind("scd2", "SCD_TYPE_2_BY_COLUMN (unique_key id, columns [tier])",
         "SELECT id, name, tier FROM {raw}.customers", intervals=False, rebuilds_equal=False),
    Kind("full", "FULL", "SELECT customer, SUM(amount) AS total FROM {raw}.events GROUP BY customer",
         intervals=False),
    Kind("seed", "SEED", "", intervals=False),
)}


def events_sql(day: int) -> str:
    """Day ``day`` (1-based, from 2024-01-01) of events: 12 per day, unique ids, a growing ts."""
    return (f"SELECT CAST({day} * 1000 + i AS BIGINT) AS id, CAST((i * 7 + {day}) % 5 AS INT) AS customer, "
            f"CAST((i * 13 + {day} * 5) % 50 + 1 AS INT) AS amount, DATE_ADD(DATE'2024-01-01', {day - 1}) AS ds, "
            f"TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, {day - 1}, 0, CAST(i * 117 + 7 AS INT), 0) AS ts "
            "FROM range(0, 12) AS r(i)")


def seed_csv(version: int) -> str:
    """The SEED model's file: 20 rows; version 1 drops one, changes two and adds one."""
    rows = {i: (i % 5, i * 3 % 50 + 1, f"2024-01-{i % 9 + 1:02d}") for i in range(20)}
    if version:
        del rows[0]
        rows[4], rows[9], rows[20] = (1, 99, "2024-01-05"), (2, 98, "2024-01-06"), (3, 7, "2024-01-07")
    return "id,customer,amount,ds\n" + "".join(f"{i},{c},{a},{d}\n" for i, (c, a, d) in sorted(rows.items()))


def customers_sql(version: int) -> str:
    return (f"SELECT CAST(id AS INT) AS id, CONCAT('c', id) AS name, CASE WHEN (id + {version}) % 3 = 0 THEN 'gold' "
            f"ELSE 'silver' END AS tier FROM range(0, 6) AS r(id) WHERE id <> {version + 5}")


class Round:
    """One trial: schemas of its own, the model and its reference, the race, the checks."""

    def __init__(self, number: int, kind: Kind, mode: str, apps: list[App], rng: random.Random,
                 restart=None, work: Path | None = None) -> None:
        if mode == "revert" and not kind.rebuilds_equal:
            mode = "janitor"
        self.n, self.kind, self.mode, self.apps, self.rng = number, kind, mode, apps, rng
        #: Starts application ``i`` again (after a kill), returning it.
        self.restart = restart
        #: What the round saw worth saying beside its verdict.
        self.note = ""
        #: When the race began (epoch seconds): the state's rows since then are the race's.
        self.raced_at = 0.0
        self.prefix = f"race{number}_{kind.name}"
        self.raw = f"{self.prefix}_raw"
        self.model, self.reference = f"{self.prefix}.m", f"{self.prefix}.ref"
        self.seed = Path(work or tempfile.mkdtemp(prefix="incr-race-")) / f"{self.prefix}.csv"

    def run(self) -> list[str]:
        """Set up, race, check: the problems found (empty when the round passed)."""
        lease = "3" if self.mode in ("lapse", "kill") else "60"
        self.conf = {"spark.incr.stateSchema": f"{self.prefix}_state",
                     "spark.incr.physicalSchema": f"{self.prefix}_physical", "spark.incr.lockLease": lease}
        for app in self.apps:
            app.conf(self.conf)
        self._setup(self.apps[0])
        answers = self._race()
        return self._check(answers)

    def _define(self, app: App, name: str, version: int = 1) -> None:
        app.sql(call_sql("create_model", definition=self.kind.definition(name, self.raw, self.seed, version)))

    def _apply(self, app: App, **args) -> None:
        failed = [r for r in _rows(app, call_sql("apply", execution_time=BASE_AT, **args)) if r["status"] != "ok"]
        if failed:
            raise RuntimeError(f"an apply of the set-up failed: {failed}")

    def _setup(self, app: App) -> None:
        app.sql(f"CREATE DATABASE IF NOT EXISTS {self.raw}")
        app.sql(f"CREATE TABLE {self.raw}.events USING parquet AS {events_sql(1)}")
        for day in (2, 3):
            app.sql(f"INSERT INTO {self.raw}.events {events_sql(day)}")
        app.sql(f"CREATE TABLE {self.raw}.customers USING parquet AS {customers_sql(0)}")
        self.seed.write_text(seed_csv(0))
        for name in (self.model, self.reference):
            self._define(app, name)
        self._apply(app)
        if self.mode in ("janitor", "revert"):  # version 1's table becomes unreferenced
            self._define(app, self.model, 2)
            self._apply(app, select=self.model)
            if self.mode == "revert":
                self._define(app, self.model, 1)
        if self.mode == "dropenv":
            self._apply(app, select=self.model, env="dev")
        for day in (4, 5, 6, 7):
            app.sql(f"INSERT INTO {self.raw}.events {events_sql(day)}")
        app.sql(f"INSERT OVERWRITE {self.raw}.customers {customers_sql(1)}")
        self.seed.write_text(seed_csv(1))

    def _calls(self) -> list[tuple[str, str]]:
        """Each application's role in the race and its call."""
        wait = "120 seconds"
        build = ("apply" if self.kind.name == "seed" else "run",
                 call_sql("apply" if self.kind.name == "seed" else "run", execution_time=RUN_AT,
                          select=self.model, wait=wait))
        deploy = ("apply", call_sql("apply", execution_time=RUN_AT, select=self.model, wait=wait))
        janitor = ("janitor", call_sql("janitor", older_than="0 days", dry_run=False, wait=wait))
        special = {
            "apply": [deploy],
            "janitor": [janitor],
            "revert": [janitor, deploy],
            "dropenv": [("drop_environment", call_sql("drop_environment", env="dev", wait=wait)),
                        ("apply", call_sql("apply", execution_time=RUN_AT, select=self.model, env="dev", wait=wait))],
        }.get(self.mode, [])
        return (special + [build] * len(self.apps))[:len(self.apps)]

    def _race(self) -> list[dict]:
        """Every application makes its call at once; their answers (rows, or the error)."""
        pausing = None
        if self.mode == "stall":
            point = self.rng.choice(STALL_POINTS)
            self.rng.choice(self.apps).python(f"from pyspark_incr import stalls; stalls.STALLS[{point!r}] = "
                                              f"{self.rng.uniform(0.3, 0.8):.3f}")
        elif self.mode == "lapse":  # at a batch's first claim check, or mid-batch just before its rows go public
            point = self.rng.choice(("before-commit", "before-publish"))
            for app in self.apps:
                app.python(f"from pyspark_incr import stalls; stalls.STALLS[{point!r}] = 8.0")
        self.roles = self._calls()
        self.raced_at = time.time()
        # the janitor or drop_environment starts 0-5 s late at random: first, mid-plan or mid-build
        late = self.rng.uniform(0, 5) if self.mode in ("janitor", "revert", "dropenv") else 0
        for i, (app, (_, sql)) in reversed(list(enumerate(zip(self.apps, self.roles)))):
            if i == 0 and late:
                time.sleep(late)
            app.send({"sql": sql})
        if self.mode == "pause":
            victim = self.rng.choice(self.apps)
            pausing = threading.Thread(target=_pause, args=(victim, self.rng.uniform(0, 2), self.rng.uniform(0.3, 3)))
            pausing.start()
        if self.mode == "kill":
            time.sleep(self.rng.uniform(0.2, 3))
            self.apps[0].kill()
        answers = [app.receive(timeout=600) for app in self.apps]
        if pausing is not None:
            pausing.join()
        if self.mode == "kill":
            answers[0] = {"ok": True, "columns": [], "rows": [], "killed": True}
            self.apps[0] = self.restart(0)
            self.apps[0].conf(self.conf)
        for app in self.apps:
            app.python("from pyspark_incr import stalls; stalls.STALLS.clear()")
        return answers

    def _check(self, answers: list[dict]) -> list[str]:
        problems = []
        built = Counter()
        for i, answer in enumerate(answers):
            if answer.get("killed"):
                continue
            if not answer.get("ok"):
                problems.append(f"app {i} failed: {answer.get('error')}")
                continue
            if self.roles[i][0] not in ("run", "apply"):
                continue
            for r in _as_dicts(answer):
                if r["status"] == "ok" and (r.get("start") is not None or not self.kind.intervals):  # not promotions
                    built[(r["start"], r["end"])] += 1
                elif r["status"] == "failed" and not (self.mode == "lapse" and "taken over" in (r["message"] or "")):
                    problems.append(f"app {i}: {r['status']} {r['start']}: {r['message']}")
        twice = {k: c for k, c in built.items() if c > 1}
        if self.mode == "revert" and twice:  # a run may build the version prod held before the apply reverted it
            self.note = f"{len(twice)} interval(s) built by both run and apply, "
            twice = self._built_twice_per_version()
            self.note += "each into its own version; " if not twice else ""
        if self.kind.intervals and twice:
            problems.append(f"intervals built more than once: {twice}")
        if not built and self.mode not in ("kill", "revert"):  # a killed application may have built it all
            problems.append("no application built anything")
        app = self.apps[0]
        build = "apply" if self.kind.name == "seed" else "run"
        _rows(app, call_sql(build, execution_time=RUN_AT, select=self.reference))
        if self.mode == "dropenv" and all(role != build for role, _ in self.roles[2:]):
            _rows(app, call_sql(build, execution_time=RUN_AT, select=self.model))  # no application built prod
        problems += self._same_rows(app, self.model)
        status = _rows(app, call_sql("status", model=self.model, execution_time=RUN_AT))
        if any(r["state"] in ("missing", "building") for r in status):
            problems.append(f"state: {[(r['state'], r['start'], r['claimed_by']) for r in status]}")
        again = _rows(self.apps[-1], call_sql("run", execution_time=RUN_AT, select=self.model))
        if self.kind.intervals and again:
            problems.append(f"a further run had work left: {again}")
        if self.mode == "dropenv":
            problems += self._dev_whole_or_gone(app)
        if self.mode == "kill":  # did the kill hit a holder? its unfinished batches show as abandoned
            history = _rows(app, call_sql("history", model=self.model, limit=1000))
            self.note = f"{sum(r['status'] == 'abandoned' for r in history)} batch(es) of the killed run abandoned"
        if self.mode in ("janitor", "revert"):
            dropped = [r["table"] for r in _as_dicts(answers[0])] if answers[0].get("ok") else []
            self.note += f"janitor dropped {len(dropped)} table(s)"
        if problems:  # what each application said, to tell the story
            problems += [f"app {i} ({role}) said: " + (str([tuple(r.values())[:6] for r in _as_dicts(a)])
                                                      if a.get("ok") else str(a.get("error")))
                         for i, (a, (role, _)) in enumerate(zip(answers, self.roles))]
        return problems

    def _built_twice_per_version(self) -> dict:
        """Intervals some version had built more than once during the race, from the state's runs table.

        With three applications, ``revert`` races a run of the version prod holds (the second) with an
        apply taking the first up again: both may build the same interval, each into its own version's table.
        """
        found = self.apps[0].python(
            "from pyspark_incr.state.store import StateStore; from pyspark_incr.state import tables as t; "
            "result = [(r['fingerprint'], r['start_ms'], r['end_ms']) for r in StateStore(spark).read(t.RUNS).to_pylist() "
            f"if r['model'] == {self.model!r} and r['status'] == 'ok' and r['start_ms'] is not None "
            f"and r['started_at'].timestamp() >= {self.raced_at!r}]")
        return {k: c for k, c in Counter(tuple(f) for f in found).items() if c > 1}

    def _same_rows(self, app: App, name: str) -> list[str]:
        """Problems if ``name`` (the model in prod or an environment) differs from the reference."""
        app.python(  # another application wrote the table: this session must list it again
            "from pyspark_incr.state.store import StateStore; from pyspark_incr.writers import tables; "
            "[tables.forget_cached(spark, e.table_name) for held in StateStore(spark).environments().values() "
            f"for n, e in held.items() if n == {self.model!r} and e.table_name]")
        problems = []
        for a, b in ((name, self.reference), (self.reference, name)):
            extra = app.sql(f"SELECT COUNT(*) FROM (SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b})")[0][0]
            if extra:
                problems.append(f"{extra} row(s) of {a} are not in {b}")
        return problems

    def _dev_whole_or_gone(self, app: App) -> list[str]:
        """Environment dev, after drop_environment raced an apply to it: whole, or gone without a trace."""
        envs = {r["env"] for r in _rows(app, call_sql("environments"))}
        db, table = self.model.split(".")
        view = f"{db}__dev.{table}"
        exists = app.python(f"result = spark.catalog.tableExists({view!r})")
        if "dev" in envs:
            self.note = "dev applied last"
            return self._same_rows(app, view) if exists else [f"state holds dev but {view} does not exist"]
        self.note = "dev dropped last"
        return [f"dev was dropped but {view} exists"] if exists else []


def _pause(app: App, after: float, length: float) -> None:
    time.sleep(after)
    app.pause()
    time.sleep(length)
    app.resume()


def _rows(app: App, sql: str) -> list[dict]:
    return _as_dicts(app.request({"sql": sql}))


def _as_dicts(answer: dict) -> list[dict]:
    if not answer.get("ok"):
        raise RuntimeError(answer.get("error"))
    return [dict(zip(answer["columns"], row)) for row in answer["rows"]]


def _echo(line: str) -> None:
    print(line, flush=True)


def schedule(rounds: int, kinds: list[str], modes: list[str]) -> list[tuple[str, str]]:
    """``rounds`` rounds of each kind, modes in turn, each kind starting at a different mode."""
    return [(kind, modes[(r + k) % len(modes)]) for k, kind in enumerate(kinds) for r in range(rounds)]


def covering(kinds: list[str], modes: list[str]) -> list[tuple[str, str]]:
    """As few rounds as race every kind and every mode at least once."""
    return [(kinds[i % len(kinds)], modes[i % len(modes)]) for i in range(max(len(kinds), len(modes)))]


def trials(rounds: list[tuple[str, str]], apps: int, seed: int, work: Path, echo=_echo,
           database: Postgres | None = None, master: str | None = None) -> dict[tuple[str, str], tuple[int, int]]:
    """Run the ``(kind, mode)`` rounds in order; ``{(kind, mode): (passed, total)}``.

    The metastore service keeps its catalog in Derby inside it, or in ``database``. A round's mode
    may be replaced by the one it is raced in (``revert`` by ``janitor`` for SCD type 2). With
    ``master`` (a standalone cluster's URL) every application runs its tasks in an executor of one
    core there instead of in its driver.
    """
    rng = random.Random(seed)
    service = MetastoreService.start(work / "metastore", database)
    running: list[App] = []
    tally: dict[tuple[str, str], list[int]] = {}
    try:
        conf = service.spark_conf()
        if master is not None:
            conf.update({"spark.master": master, "spark.cores.max": "1", "spark.executor.memory": "512m"})
        running = [App.start(conf, f"app{i}", work / f"app{i}") for i in range(apps)]

        def restart(i: int) -> App:
            running[i] = App.start(conf, f"app{i}", work / f"app{i}")
            return running[i]

        for number, (kind, mode) in enumerate(rounds, start=1):
            started = time.monotonic()
            trial = Round(number, KINDS[kind], mode, running, rng, restart, work)
            problems = trial.run()
            entry = tally.setdefault((kind, trial.mode), [0, 0])
            entry[0] += not problems
            entry[1] += 1
            verdict = "ok" + (f" ({trial.note})" if trial.note else "") if not problems else \
                "FAILED: " + "; ".join(problems)
            echo(f"round {number} {kind} {trial.mode} ({time.monotonic() - started:.1f} s): {verdict}")
    finally:
        for app in running:
            app.close()
        service.stop()
    return {k: (v[0], v[1]) for k, v in tally.items()}


def postgres(url: str) -> Postgres:
    """``postgresql://USER:PASSWORD@HOST:PORT/DB`` as a Postgres database."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    return Postgres(parts.hostname or "127.0.0.1", parts.port or 5432, parts.path.lstrip("/"),
                    unquote(parts.username or ""), unquote(parts.password or ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="rounds per kind (modes in turn)")
    parser.add_argument("--apps", type=int, default=2)
    parser.add_argument("--kinds", default="all", help="comma-separated, of: " + ", ".join(KINDS))
    parser.add_argument("--modes", default="all", help="comma-separated, of: " + ", ".join(MODES))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--postgres", default=None, metavar="postgresql://USER:PASSWORD@HOST:PORT/DB",
                        help="keep the metastore in this PostgreSQL database (its schema is created first)")
    parser.add_argument("--cluster", action="store_true",
                        help="run the applications on a Spark standalone master and worker started for the trials "
                             "(tests/services/cluster.py): tasks in executor JVMs, not in the drivers")
    args = parser.parse_args(argv)
    kinds = list(KINDS) if args.kinds == "all" else args.kinds.split(",")
    modes = list(MODES) if args.modes == "all" else args.modes.split(",")
    work = args.work or Path(tempfile.mkdtemp(prefix="incr-race-"))
    started = time.monotonic()
    database = None
    if args.postgres:
        database = postgres(args.postgres)
        database.create_schema(work / "schema")
    cluster = StandaloneCluster.start(work / "cluster", cores=args.apps, memory=f"{args.apps}g") if args.cluster else None
    try:
        tally = trials(schedule(args.rounds, kinds, modes), args.apps, args.seed, work, database=database,
                       master=cluster.url if cluster else None)
    finally:
        if cluster is not None:
            cluster.stop()
    passed = sum(p for p, _ in tally.values())
    total = sum(n for _, n in tally.values())
    for (kind, mode), (p, n) in sorted(tally.items()):
        print(f"{kind:30} {mode:6} {p}/{n}")
    print(json.dumps({"apps": args.apps, "cluster": args.cluster, "passed": passed, "rounds": total,
                      "minutes": round((time.monotonic() - started) / 60, 1)}))
    where = " on a standalone cluster" if args.cluster else ""
    print(f"race trials: {passed}/{total} passed with {args.apps} applications{where}")
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
