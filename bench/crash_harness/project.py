"""The generated project the crash trials kill: four models, one of each kind, over two Parquet sources.

Sources live in schema ``crash_raw`` of the same embedded catalog. ``events`` grows by one
insert per day (so a scan has several files); ``customers`` is a snapshot, overwritten when new
data arrives. The base apply builds days 1..BASE_DAYS; then NEW_DAYS more days arrive, and the
trial's work is one ``incr.run`` at RUN_AT covering all of them, for every kind at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

BASE_DAYS, NEW_DAYS = 3, 3
FIRST = date(2024, 1, 1)
EVENTS_PER_DAY, CUSTOMERS = 24, 9
#: 'now' of the base apply, and of the trial's run (the day after the last new day).
BASE_AT = f"{FIRST + timedelta(days=BASE_DAYS)} 00:00:00"
RUN_AT = f"{FIRST + timedelta(days=BASE_DAYS + NEW_DAYS)} 00:00:00"
RAW = "crash_raw"
#: A short lease, so the lock of a killed run expires within seconds (default 300 s).
LOCK_LEASE_S = "15"


@dataclass(frozen=True)
class ModelDef:
    name: str
    kind: str  # time_range, unique_key, scd2, cursor: which check applies
    definition: str


def _model(name: str, kind_sql: str, query: str, extra: str = "") -> str:
    return f"MODEL (name {name}, kind {kind_sql}, start '{FIRST}', cron '@daily'{extra}); {query}"


MODELS = (
    ModelDef("crash.orders_daily", "time_range", _model(
        "crash.orders_daily", "INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 1)",
        f"SELECT ds, customer, SUM(amount) AS total, COUNT(*) AS n FROM {RAW}.events "
        "WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds, customer")),
    ModelDef("crash.customer_last", "unique_key", _model(
        "crash.customer_last", "INCREMENTAL_BY_UNIQUE_KEY (unique_key customer, batch_size 1)",
        f"SELECT customer, id AS last_id, amount AS last_amount, ds AS last_ds, customer % 3 AS region "
        f"FROM {RAW}.events WHERE ds BETWEEN @start_ds AND @end_ds "
        "QUALIFY ROW_NUMBER() OVER (PARTITION BY customer ORDER BY ts DESC, id DESC) = 1",
        ", partitioned_by region")),
    ModelDef("crash.customer_tiers", "scd2", _model(
        "crash.customer_tiers", "SCD_TYPE_2_BY_COLUMN (unique_key id, columns [tier])",
        f"SELECT id, name, tier FROM {RAW}.customers")),
    ModelDef("crash.event_feed", "cursor", _model(
        "crash.event_feed", "INCREMENTAL_BY_CURSOR (cursor_column ts, initial_value '2024-01-01')",
        f"SELECT id, customer, amount, ts FROM {RAW}.events WHERE ts > @last_value")),
)


def day(n: int) -> date:
    """Day ``n`` of the project, 1-based."""
    return FIRST + timedelta(days=n - 1)


def new_days() -> list[date]:
    return [day(n) for n in range(BASE_DAYS + 1, BASE_DAYS + NEW_DAYS + 1)]


def events_sql(n: int) -> str:
    """The events of day ``n``: deterministic, a strictly growing ``ts`` (the cursor) and unique ids."""
    return (f"SELECT CAST({n} * 1000 + i AS BIGINT) AS id, CAST((i * 7 + {n}) % {CUSTOMERS} AS INT) AS customer, "
            f"CAST((i * 13 + {n} * 5) % 50 + 1 AS INT) AS amount, DATE'{day(n)}' AS ds, "
            f"TIMESTAMP'{day(n)} 00:00:00' + make_interval(0, 0, 0, 0, 0, CAST(i * 30 + 7 AS INT), 0) AS ts "
            f"FROM range(0, {EVENTS_PER_DAY}) AS r(i)")


def customers_sql(version: int) -> str:
    """The customers snapshot after ``version`` data arrivals: some tiers change, one customer leaves."""
    leaving = f"AND id <> {version % CUSTOMERS}" if version else ""
    return (f"SELECT CAST(id AS INT) AS id, CONCAT('c', id) AS name, "
            f"CASE WHEN (id + {version}) % 4 = 0 THEN 'gold' WHEN id % 2 = 0 THEN 'silver' ELSE 'bronze' END AS tier "
            f"FROM range(0, {CUSTOMERS}) AS r(id) WHERE TRUE {leaving}")


def create_sources(spark) -> None:
    """The sources as the base apply finds them: days 1..BASE_DAYS of events, the first customers snapshot."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {RAW}")
    spark.sql(f"CREATE TABLE {RAW}.events USING parquet AS {events_sql(1)}")
    for n in range(2, BASE_DAYS + 1):
        spark.sql(f"INSERT INTO {RAW}.events {events_sql(n)}")
    spark.sql(f"CREATE TABLE {RAW}.customers USING parquet AS {customers_sql(0)}")


def arrive(spark) -> None:
    """New data arrives: NEW_DAYS days of events (one insert each) and a changed customers snapshot."""
    for n in range(BASE_DAYS + 1, BASE_DAYS + NEW_DAYS + 1):
        spark.sql(f"INSERT INTO {RAW}.events {events_sql(n)}")
    spark.sql(f"INSERT OVERWRITE {RAW}.customers {customers_sql(1)}")


def unique_key_after(spark, batches: int):
    """crash.customer_last after ``batches`` of the trial's daily batches: each customer's latest event
    up to that day (a batch upserts the day's latest event per customer, so later days win)."""
    last = day(BASE_DAYS + batches)
    return spark.sql(
        f"SELECT customer, id AS last_id, amount AS last_amount, ds AS last_ds, customer % 3 AS region "
        f"FROM {RAW}.events WHERE ds <= DATE'{last}' "
        "QUALIFY ROW_NUMBER() OVER (PARTITION BY customer ORDER BY ts DESC, id DESC) = 1")
