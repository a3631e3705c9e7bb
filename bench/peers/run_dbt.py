"""dbt-spark with the ``session`` method: the same models as a dbt project, run in-process by ``dbtRunner``.

dbt-spark's ``session`` method runs every statement through ``SparkSession.builder...getOrCreate()``, so it
reuses the session :func:`common.session` made (same Spark settings as every contender); :meth:`Dbt.setup`
checks that it really does. The project and ``profiles.yml`` are written under the tool's home
(``<work>/dbt/project``); dbt's ``target/`` and ``logs/`` stay there too. Every workload is selected by its
own models (``--select``), so a run of one workload never builds another's.

How each workload maps to dbt:

* a, b, c -- ``daily``: ``materialized='incremental'``, ``incremental_strategy='insert_overwrite'``,
  ``partition_by=['ds']``, parquet: the long-standing dbt-spark pattern for date-partitioned facts. The
  scheduled job passes its run date (``--vars '{ds: ...}'``, the newest complete day: dbt has no clock the
  benchmark's simulated days could set). The first run of the model (no table yet) builds every day up to
  it in one ``CREATE TABLE ... USING parquet PARTITIONED BY (ds) AS SELECT`` (a). A later run is the
  ``is_incremental()`` branch: its first day is the one after ``max(ds)`` of the table (dbt's usual
  ``{{ this }}`` pattern, read with ``run_query`` at compile time), so a job that missed days catches up;
  dbt then creates a temporary view of those days and runs one ``INSERT OVERWRITE TABLE ... PARTITION
  (ds)`` with dynamic partition overwrite (b). Microbatch is not used here: with ``batch_size='day'`` its
  first build is one query per day (that is workload d), and a run without ``--event-time-*`` places its
  batches by the wall clock, which the simulated days cannot follow.
* c (nothing due) -- dbt keeps no interval state, but the model above reads the newest day from its own
  table: when nothing new is due the range is empty, and dbt still runs the whole model (the ``max(ds)``
  query, the temporary view, an ``INSERT OVERWRITE`` of no rows, which dynamic overwrite turns into a
  no-op). That is what a dbt user's cron job costs when nothing arrived. (A job that only passes the run
  date and rewrites that one day could not catch up on missed days, and its c would just repeat b.)
* d -- ``daily_b1``: the same query as ``incremental_strategy='microbatch'``, ``event_time='ds'``,
  ``batch_size='day'``, ``begin='2024-01-01'``. The source ``src.events`` declares ``event_time: ds``, so
  dbt itself filters the model's input to each batch (the tool's own way to express the day bounds); the
  backfill is ``dbt run --event-time-start D0 --event-time-end DN`` = one batch per day, run one after
  another (``threads: 1``): the first batch creates the table, each next one is a temporary view plus an
  ``INSERT OVERWRITE ... PARTITION (ds)``.
* e -- ``chain_01`` .. ``chain_NN`` under ``models/chain``, each an insert_overwrite model like ``daily``
  reading the previous one through ``ref``; ``dbt run --select path:models/chain``.
* f -- cannot: see :attr:`Dbt.cannot` (dbt-spark's snapshot materialization refuses parquet).

The project is parsed once per process (:meth:`Dbt.setup`, untimed in warm mode; in cold mode the parent's
clock includes it) and the manifest is reused by every ``dbtRunner`` call: changing ``--vars`` would
otherwise make dbt drop its partial parse and parse the whole project again on every run.

Beware: dbt imports every top-level module named ``dbt_*`` on ``sys.path`` (its plugin discovery), and this
folder is on it: no ``dbt_*.py`` files here.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    CHAIN_FIRST_SQL, CHAIN_NEXT_SQL, DAILY_SQL, START, Tool, chain_name, chain_start, day, main,
)

#: The pieces the model files are made of (common.py's SQL, in dbt's words for a table and a config).
SOURCE = "{{ source('src', 'events') }}"
INSERT_OVERWRITE = ("{{ config(materialized='incremental', incremental_strategy='insert_overwrite', "
                    "file_format='parquet', partition_by=['ds']) }}\n")
MICROBATCH = ("{{ config(materialized='incremental', incremental_strategy='microbatch', event_time='ds', "
              f"batch_size='day', begin='{START}', file_format='parquet', partition_by=['ds']) }}}}\n")
#: The day bounds of an insert_overwrite model. The run date (``--vars``) is the last day: dbt has no clock
#: of its own that the benchmark's simulated days could set. The first day is the one after the newest
#: already in the table (dbt's usual ``max(...) from {{ this }}`` pattern, read at compile time so Spark
#: prunes partitions on a literal), or the project's first day when the model runs for the first time.
BOUNDS = """\
{%- set end = "DATE '" ~ var('ds') ~ "'" -%}
{%- set start = "DATE '" ~ var('begin') ~ "'" -%}
{%- if is_incremental() and execute -%}
  {%- set newest = run_query("SELECT max(ds) FROM " ~ this).columns[0].values()[0] -%}
  {%- if newest is not none -%}{%- set start = "date_add(DATE '" ~ newest ~ "', 1)" -%}{%- endif -%}
{%- endif %}
"""

PROJECT_YML = f"""\
name: bench
version: '1.0'
config-version: 2
profile: bench
model-paths: [models]
vars:
  begin: '{START}'
  ds: '{START}'
"""

PROFILES_YML = """\
bench:
  target: session
  outputs:
    session:
      type: spark
      method: session
      host: NA
      schema: bench
      threads: 1
"""

SOURCES_YML = """\
version: 2
sources:
  - name: src
    schema: src
    tables:
      - name: events
        config:
          event_time: ds
"""

SNAPSHOT_WHY = ("dbt-spark 1.10 snapshots need file_format delta, iceberg or hudi (they MERGE INTO the "
                "snapshot table); with parquet the snapshot materialization stops with 'Invalid file format: "
                "parquet. Snapshot functionality requires file_format be set to 'delta' or 'iceberg' or 'hudi''")


class Dbt(Tool):
    """The dbt project under ``<home>/project``, run by one in-process ``dbtRunner`` on a manifest parsed once."""

    name = "dbt"
    cannot = {"f": SNAPSHOT_WHY}

    @classmethod
    def versions(cls) -> dict[str, str]:
        from importlib.metadata import version

        return {p: version(p) for p in ("dbt-core", "dbt-spark", "pyspark")}

    # ------------------------------------------------------------------ project

    @property
    def project(self) -> Path:
        return self.home / "project"

    def setup(self) -> None:
        """Write the project (only files whose text changed), parse it once and check dbt uses our session."""
        self._write_project()
        # dbt would phone home and check PyPI for a newer version: neither belongs in a timing
        os.environ["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
        os.environ["DBT_VERSION_CHECK"] = "false"
        from dbt.cli.main import dbtRunner

        manifest = self._invoke(dbtRunner(), ["parse"]).result
        self.runner = dbtRunner(manifest=manifest)
        self._check_session()

    def _write_project(self) -> None:
        files = {
            "dbt_project.yml": PROJECT_YML + f"  chain_begin: '{chain_start(self.spec)}'\n",
            "profiles.yml": PROFILES_YML,
            "models/sources.yml": SOURCES_YML,
            "models/daily.sql": INSERT_OVERWRITE + BOUNDS + DAILY_SQL.format(
                start="{{ start }}", end="{{ end }}").replace("src.events", SOURCE),
            # no bounds in the text: dbt filters the source to each batch by its event_time
            "models/daily_b1.sql": MICROBATCH + DAILY_SQL.split(" WHERE ")[0].replace("src.events", SOURCE),
        }
        for k in range(1, self.spec.chain + 1):
            select = (CHAIN_FIRST_SQL if k == 1 else CHAIN_NEXT_SQL).format(
                start="{{ start }}", end="{{ end }}", parent=f"{{{{ ref('{chain_name(k - 1)}') }}}}")
            files[f"models/chain/{chain_name(k)}.sql"] = (INSERT_OVERWRITE + BOUNDS.replace("var('begin')", "var('chain_begin')")
                                                          + select.replace("src.events", SOURCE))
        for path, text in files.items():
            _write_if_changed(self.project / path, text)
        # a smaller spec.chain leaves models of a longer chain behind: they would join the selection
        for stale in (self.project / "models/chain").glob("chain_*.sql"):
            if f"models/chain/{stale.name}" not in files:
                stale.unlink()

    def _check_session(self) -> None:
        """dbt-spark calls SparkSession.builder.getOrCreate(): make sure that is ours, not a second catalog."""
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.enableHiveSupport().getOrCreate()
        if spark is not self.spark or spark.conf.get("spark.app.name") != f"bench-{self.name}":
            raise RuntimeError("dbt-spark's session is not the benchmark's SparkSession")

    # ------------------------------------------------------------------ dbt calls

    def _dbt(self, *args: str) -> None:
        """One ``dbt`` command on the parsed project (raises when a node fails)."""
        self._invoke(self.runner, list(args))

    def _invoke(self, runner, args: list[str]):
        flags = ["--project-dir", str(self.project), "--profiles-dir", str(self.project),
                 "--target-path", str(self.project / "target"), "--log-path", str(self.project / "logs"),
                 "--quiet", "--no-use-colors", "--no-send-anonymous-usage-stats", "--no-version-check"]
        # dbt prints to stdout, which carries only BENCH lines
        with contextlib.redirect_stdout(sys.stderr):
            res = runner.invoke([args[0], *flags, *args[1:]])
        if not res.success:
            failed = [f"{r.node.name}: {r.message}" for r in getattr(res.result, "results", None) or []
                      if str(r.status) in ("error", "fail", "skipped")]
            raise RuntimeError(f"dbt {' '.join(args)} failed: {failed or res.exception}")
        return res

    def _selection(self, workload: str) -> str:
        return {"a": "daily", "d": "daily_b1", "e": "path:models/chain"}[workload]

    # ------------------------------------------------------------------ steps

    def reset(self, workload: str) -> None:
        """Drop the workload's tables: dbt's next run of them is a first build (it keeps no other state)."""
        for name in self.objects(workload):
            self.spark.sql(f"DROP TABLE IF EXISTS {name}")

    def backfill(self, workload: str, days: int) -> None:
        if workload == "d":
            # --event-time-end is exclusive: batches are the days [0, days)
            self._dbt("run", "--select", self._selection("d"),
                      "--event-time-start", str(day(0)), "--event-time-end", str(day(days)))
            return
        self._run_for(workload, days - 1)  # the model's first run: everything up to the run date

    def run(self, workload: str, newest: int) -> None:
        if workload == "d":
            self._dbt("run", "--select", self._selection("d"),
                      "--event-time-start", str(day(newest)), "--event-time-end", str(day(newest + 1)))
            return
        self._run_for(workload, newest)

    def _run_for(self, workload: str, newest: int) -> None:
        """The daily job: ``dbt run --select ... --vars '{ds: <run date>}'``."""
        self._dbt("run", "--select", self._selection(workload), "--vars", f"{{ds: '{day(newest)}'}}")


def _write_if_changed(path: Path, text: str) -> None:
    """Rewriting an unchanged file would only make dbt's partial parse look at it again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


if __name__ == "__main__":
    main(Dbt)
