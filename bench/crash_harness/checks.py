"""What a checker verifies on the home a killed run left, before and after the rerun.

1. State never lists an interval whose rows are missing: per kind, the table must be a state the
   uninterrupted run passes through, and at least as far as state says.
2. The rerun (same execution time) converges: every table equals the reference row for row.

Each check returns problems as sentences (empty: passed) and says what it saw, for the report.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

from chispa import assert_df_equality

from crash_harness import project as p
from pyspark_incr.intervals.ranges import Interval, IntervalSet

EQUAL = dict(ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
DAY_MS = 86_400_000


def reference(spark, work: Path, which: str, model: str):
    """A reference table saved by the setup (``before``) or the uninterrupted run (``after``)."""
    return spark.read.parquet(str(work / "ref" / which / model))


def save(df, work: Path, which: str, model: str) -> None:
    df.write.mode("overwrite").parquet(str(work / "ref" / which / model))


def day_ms(d: date) -> int:
    return int(datetime(d.year, d.month, d.day, tzinfo=timezone.utc).timestamp() * 1000)


def built_days(coverage: IntervalSet) -> list[date]:
    """The trial's new days that state lists as built."""
    return [d for d in p.new_days() if coverage.covers(Interval(day_ms(d), day_ms(d) + DAY_MS))]


def rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def by_day(df) -> dict[date, list[tuple]]:
    """Rows by their ``ds`` (a partition column: Spark puts it last in the table, so it is moved first)."""
    out: dict[date, list[tuple]] = {}
    for row in rows(df.select("ds", *sorted(c for c in df.columns if c != "ds"))):
        out.setdefault(row[0], []).append(row)
    return out


def check_time_range(spark, work: Path, model: str, coverage: IntervalSet) -> tuple[list[str], str]:
    """Every day state lists has exactly the reference rows; any other day has them or none (never a mix)."""
    actual, expected = by_day(spark.table(model)), by_day(reference(spark, work, "after", model))
    built = built_days(coverage)
    problems = []
    for d, want in sorted(expected.items()):
        have = actual.get(d, [])
        base = d < p.new_days()[0]
        if (base or d in built) and have != want:
            problems.append(f"{model}: state lists {d} as built but the table has {len(have)} rows "
                            f"for it, the reference {len(want)} (or they differ)")
        elif have not in ([], want):
            problems.append(f"{model}: {d} (not in state) holds {len(have)} rows, neither none nor the reference's")
    present = sum(1 for d in p.new_days() if actual.get(d))
    return problems, f"{len(built)}/{p.NEW_DAYS} days in state, {present} in table"


def check_unique_key(spark, work: Path, model: str, coverage: IntervalSet) -> tuple[list[str], str]:
    """The table is exactly the table after some batch k, with k = days in state or one more
    (a batch published whose interval was not recorded yet); state's days are a prefix."""
    built = built_days(coverage)
    have = rows(spark.table(model))
    matches = [k for k in range(p.NEW_DAYS + 1) if rows(p.unique_key_after(spark, k)) == have]
    problems = []
    if built != p.new_days()[: len(built)]:
        problems.append(f"{model}: state lists days {built}, not a prefix of the new days")
    if not matches:
        problems.append(f"{model}: the table ({len(have)} rows) is the table after no batch of the reference run")
    elif matches[0] not in (len(built), len(built) + 1):
        problems.append(f"{model}: the table is the one after batch {matches[0]}, state lists {len(built)} batches")
    return problems, f"{len(built)}/{p.NEW_DAYS} batches in state, table after batch {matches[0] if matches else '?'}"


def check_one_batch(spark, work: Path, model: str, coverage: IntervalSet) -> tuple[list[str], str]:
    """SCD type 2 and cursor models build the run in one batch: the table is before or after it, and
    after it if state lists the interval."""
    built = built_days(coverage)
    have = rows(spark.table(model))
    before, after = (rows(reference(spark, work, w, model)) for w in ("before", "after"))
    seen = "after" if have == after else "before" if have == before else "neither"
    problems = []
    if built not in ([], p.new_days()):
        problems.append(f"{model}: state lists part of its one batch: {built}")
    if seen == "neither":
        problems.append(f"{model}: the table ({len(have)} rows) is neither the table before the batch "
                        f"({len(before)}) nor after it ({len(after)})")
    elif built and seen != "after":
        problems.append(f"{model}: state lists the batch as built but the table is the one before it")
    return problems, f"batch {'in state' if built else 'not in state'}, table {seen}"


CHECKS = {"time_range": check_time_range, "unique_key": check_unique_key,
          "scd2": check_one_batch, "cursor": check_one_batch}


def check_state(spark, work: Path) -> tuple[list[str], dict[str, str]]:
    """Check 1 on every model; problems, and what each model's table and state showed."""
    from pyspark_incr.state.store import StateStore

    store = StateStore(spark)
    env, coverage = store.environment("prod"), store.coverage()
    problems, seen = [], {}
    for m in p.MODELS:
        found, seen[m.name] = CHECKS[m.kind](spark, work, m.name, coverage.get(env[m.name].table_name, IntervalSet()))
        problems += found
    return problems, seen


def check_converged(spark, work: Path) -> list[str]:
    """Check 2, after the rerun: each table equals the reference, and state lists every new day."""
    from pyspark_incr.state.store import StateStore

    store = StateStore(spark)
    env, coverage = store.environment("prod"), store.coverage()
    problems = []
    for m in p.MODELS:
        try:
            assert_df_equality(spark.table(m.name), reference(spark, work, "after", m.name), **EQUAL)
        except Exception as e:  # noqa: BLE001 - chispa's DataFramesNotEqualError is no AssertionError
            problems.append(f"{m.name}: after the rerun the table differs from the reference: {str(e)[:400]}")
        if built_days(coverage.get(env[m.name].table_name, IntervalSet())) != p.new_days():
            problems.append(f"{m.name}: after the rerun state does not list every new day")
    return problems
