"""Hand-written Spark SQL: the same writes with no tool around them (the lower bound).

A backfill is one ``INSERT OVERWRITE ... PARTITION (ds)`` over the window (dynamic partition
overwrite), or one per day for (d); a daily run overwrites that day's partition; the SCD2 job
computes the table's next version, writes it to a fresh directory and points the table at it
(what a careful job does on Parquet, where a table cannot be overwritten from itself).
A hand-written job keeps no state, so it has no "nothing due" run (c).
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    CHAIN_FIRST_SQL, CHAIN_NEXT_SQL, DAILY_SQL, SCD2_COLUMNS, SCD2_SQL, Tool, day, day_start, expected_rows, main,
)

#: f0u's table: the first load again, keeping one row per key (timed beside f0, then dropped).
ONE_PER_KEY = "bench.items_scd2_one_per_key"



class Bare(Tool):
    name = "bare"
    cannot = {"c": "keeps no state: a cron job would rewrite the day again (that is b)"}

    def setup(self) -> None:
        self.spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
        self.spark.sql("CREATE DATABASE IF NOT EXISTS bench")

    def reset(self, workload: str) -> None:
        names = self.objects(workload)
        for name in names:
            self.spark.sql(f"DROP TABLE IF EXISTS {name}")
        if workload in ("a", "d"):
            self._create(self.output(workload), "event_id BIGINT, user_id BIGINT, event_type STRING, amount DOUBLE, "
                                                "amount_gross DOUBLE, event_ts TIMESTAMP, ds DATE")
        if workload == "e":
            for name in names:
                self._create(name, "bucket INT, events BIGINT, total DOUBLE, ds DATE")

    def extra_steps(self, workload: str):
        """After f0: the first load as a job that cannot trust its source to hold one row per key (``f0u``).

        pyspark-incr and SQLMesh keep one row per key on a first load (SQLMesh's ``DISTINCT ON``), so a
        snapshot holding a key twice gives a history that says one thing of it; f0's hand-written job
        trusts this benchmark's source instead. f0u does the same work as the tools.
        """
        if workload != "f0":
            return {}

        def verify() -> None:
            got = self.spark.table(ONE_PER_KEY).count()
            self.spark.sql(f"DROP TABLE {ONE_PER_KEY}")
            if got != expected_rows(self.spark, self.spec, "f", 0):
                raise AssertionError(f"bare f0u: {got} rows, not one per key")

        self.spark.sql(f"DROP TABLE IF EXISTS {ONE_PER_KEY}")
        return {"f0u": (lambda: self.first_load(ONE_PER_KEY, deduplicated=True), verify)}

    def _create(self, name: str, columns: str) -> None:
        self.spark.sql(f"CREATE TABLE {name} ({columns}) USING parquet PARTITIONED BY (ds)")

    def backfill(self, workload: str, days: int) -> None:
        if workload == "d":
            for k in range(days):
                self._overwrite("d", k, k)
            return
        self._overwrite(workload, days - self.spec.chain_days if workload == "e" else 0, days - 1)

    def run(self, workload: str, newest: int) -> None:
        if workload == "f":
            return self._scd2(newest)
        self._overwrite(workload, newest, newest)

    def _overwrite(self, workload: str, first: int, last: int) -> None:
        start, end = f"DATE '{day(first)}'", f"DATE '{day(last)}'"
        if workload in ("a", "d"):
            select = DAILY_SQL.format(start=start, end=end)
            self.spark.sql(f"INSERT OVERWRITE TABLE {self.output(workload)} PARTITION (ds) {select}")
            return
        chain = self.objects("e")
        for k, table in enumerate(chain):
            select = (CHAIN_NEXT_SQL.format(start=start, end=end, parent=chain[k - 1]) if k
                      else CHAIN_FIRST_SQL.format(start=start, end=end))
            # the chain's columns are ordered (ds, bucket, ...) in the query and (bucket, ..., ds) in the table
            self.spark.sql(f"INSERT OVERWRITE TABLE {table} PARTITION (ds) "
                           f"SELECT bucket, events, total, ds FROM ({select})")

    def _scd2(self, snapshot: int) -> None:
        table = self.output("f")
        now = f"TIMESTAMP '{day_start(snapshot + 1):%Y-%m-%d %H:%M:%S}'"
        if not self.spark.catalog.tableExists(table):
            return self.first_load(table)
        location = Path(self.home, "scd2", uuid.uuid4().hex)
        same = " AND ".join(f"cur.{c} <=> src.{c}" for c in SCD2_COLUMNS)
        columns = ", ".join(f"src.{c}" for c in ("item_id", *SCD2_COLUMNS))
        old_columns = ", ".join(f"cur.{c}" for c in ("item_id", *SCD2_COLUMNS))
        self.spark.sql(f"""
            WITH src AS ({SCD2_SQL}),
                 cur AS (SELECT * FROM {table} WHERE valid_to IS NULL)
            SELECT * FROM {table} WHERE valid_to IS NOT NULL
            UNION ALL  -- current versions: kept, or closed when their key changed or went away
            SELECT {old_columns}, cur.valid_from,
                   CASE WHEN src.item_id IS NOT NULL AND {same} THEN NULL ELSE {now} END
            FROM cur LEFT JOIN src ON cur.item_id = src.item_id
            UNION ALL  -- new versions: changed or new keys
            SELECT {columns}, {now}, CAST(NULL AS TIMESTAMP)
            FROM src LEFT JOIN cur ON cur.item_id = src.item_id
            WHERE cur.item_id IS NULL OR NOT ({same})
        """).write.parquet(str(location))
        self.spark.sql(f"ALTER TABLE {table} SET LOCATION '{location}'")
        self.spark.catalog.refreshTable(table)

    def first_load(self, table: str, deduplicated: bool = False) -> None:
        """The SCD2 table's first version: every row open since 1970, written, then the table created over it.

        ``deduplicated``: one row per key, the least by the compared columns (as SQLMesh's ``DISTINCT ON``);
        not needed here, where the snapshot has one row per key (timed as compare.sh's ``f0u`` and by quick.py).
        """
        location = Path(self.home, "scd2", uuid.uuid4().hex)
        source = SCD2_SQL
        if deduplicated:
            order = ", ".join(SCD2_COLUMNS)
            source = (f"SELECT item_id, {order} FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY item_id ORDER BY "
                      f"{order}) AS row_number FROM ({SCD2_SQL})) WHERE row_number = 1")
        self.spark.sql(f"SELECT *, TIMESTAMP '1970-01-01 00:00:00' AS valid_from, CAST(NULL AS TIMESTAMP) AS valid_to "
                       f"FROM ({source})").write.parquet(str(location))
        self.spark.sql(f"CREATE TABLE {table} USING parquet LOCATION '{location}'")


if __name__ == "__main__":
    main(Bare)
