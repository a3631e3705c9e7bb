"""Incremental safety classifier: fixture-driven cases, the refusal message and bad overrides.

Each ``tests/fixtures/safety/*.sql`` starts with header comments::

    -- PARTITION ds                      (comma list)
    -- TIMESERIES raw.events, db.x      (optional)
    -- OVERRIDES allow_limit            (optional)
    -- INTERVAL hour                    (optional: the model's interval unit, a day by default)
    -- EXPECT safe | refused rule@line:column, ...   (findings in order)

and the query follows verbatim; positions are relative to the query after the header.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals.units import IntervalUnit
from pyspark_incr.safety.classify import OVERRIDES, RULES, Finding, Verdict, classify, message

FIXTURES = Path(__file__).parent / "fixtures" / "safety"
HEADER_KEYS = ("PARTITION", "TIMESERIES", "OVERRIDES", "INTERVAL", "EXPECT")


def _read_case(path: Path) -> tuple[dict[str, str], str]:
    lines = path.read_text().splitlines(keepends=True)
    header: dict[str, str] = {}
    while lines and lines[0].startswith("-- ") and lines[0][3:].split(" ", 1)[0] in HEADER_KEYS:
        key, _, value = lines.pop(0)[3:].strip().partition(" ")
        header[key] = value.strip()
    return header, "".join(lines)


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _expected(value: str) -> list[str]:
    if value == "safe":
        return []
    assert value.startswith("refused "), value
    return _csv(value[len("refused "):])


CASES = sorted(FIXTURES.glob("*.sql"))


def test_enough_cases():
    assert len(CASES) >= 30


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_fixture(path):
    header, query = _read_case(path)
    verdict = classify(
        query,
        _csv(header["PARTITION"]),
        timeseries_sources=_csv(header.get("TIMESERIES", "")),
        overrides=_csv(header.get("OVERRIDES", "")),
        interval_ms=IntervalUnit(header.get("INTERVAL", "day")).approx_ms,
    )
    got = [f"{f.rule}@{f.line}:{f.column}" for f in verdict.findings]
    assert got == _expected(header["EXPECT"]), (verdict.findings, verdict.admitted)
    assert verdict.safe == (not got)
    for finding in verdict.findings:
        assert finding.rule in RULES and len(finding.construct) <= 80 and finding.why


def test_constructs_and_admitted_notes():
    query = (
        "SELECT ds, ROW_NUMBER() OVER (ORDER BY ts) AS rn,\n"
        "  FIRST_VALUE(id) OVER (PARTITION BY DS ORDER BY ts) AS f,\n"
        "  LAG(ts) OVER (PARTITION BY id ORDER BY ts RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW)\n"
        "FROM raw.events LIMIT 5"
    )
    verdict = classify(query, ["ds"], overrides=["allow_limit"])
    assert verdict.findings == (
        Finding("window", "ROW_NUMBER() OVER (ORDER BY ts)", 1, 12, verdict.findings[0].why),
    )
    assert verdict.admitted[0] == "window partitioned by DS: FIRST_VALUE(id) OVER (PARTITION BY DS ORDER BY ts)"
    assert verdict.admitted[1].startswith("window with a bounded RANGE BETWEEN INTERVAL frame: LAG(ts)")
    assert verdict.admitted[2] == "allowed by allow_limit: LIMIT 5"


def test_long_construct_is_shortened():
    cols = ", ".join(f"column_number_{i}" for i in range(20))
    verdict = classify(f"SELECT DISTINCT {cols} FROM t", ["ds"])
    (finding,) = verdict.findings
    assert len(finding.construct) == 80 and finding.construct.endswith("...")


def test_message_lists_findings_and_fixes():
    query = "SELECT user_id,\n  ROW_NUMBER() OVER (ORDER BY ts) AS rn\nFROM raw.events\nLIMIT 100"
    text = message("daily_sessions", classify(query, ["ds"]))
    assert text.splitlines() == [
        "Incremental safety check refused model 'daily_sessions': on a time slice it may compute "
        "different rows than on the full data.",
        "  line 2, column 3: ROW_NUMBER() OVER (ORDER BY ts): a window function whose PARTITION BY does not "
        "include the partition column computes different results on one time slice than on the full dataset.",
        "  line 4, column 1: LIMIT 100: LIMIT on partial data returns different rows than on the full table.",
        "Fix the SQL, or set safety_overrides (allow_window_functions: true, allow_limit: true) if you have "
        "verified this usage is safe on partial data, or pass allow_downgrade => true to fall back to a "
        "full-table refresh for this run.",
    ]


def test_message_for_a_safe_model():
    assert message("m", Verdict(findings=(), admitted=())) == "Model 'm' passes the incremental safety check."


def test_unknown_override_is_named():
    with pytest.raises(ModelDefinitionError) as info:
        classify("SELECT 1", ["ds"], overrides=["allow_limit", "allow_joins"])
    assert "'allow_joins'" in str(info.value)
    assert all(name in str(info.value) for name in OVERRIDES)


def test_override_mapping_keeps_only_true_keys():
    query = "SELECT * FROM t LIMIT 1"
    assert not classify(query, ["ds"], overrides={"allow_limit": False}).safe
    assert classify(query, ["ds"], overrides={"allow_limit": True}).safe


def test_unparseable_query_is_a_model_error():
    with pytest.raises(ModelDefinitionError, match="does not parse"):
        classify("SELECT FROM WHERE (", ["ds"])


HOUR_MS = IntervalUnit.HOUR.approx_ms


@pytest.mark.parametrize("written, interval, fix", [
    ("DATE_TRUNC('MONTH', ds)", "day", "set interval_unit to month and a cron no more frequent (cron @monthly "
                                       "alone sets both), or write the time column ds at its own grain"),
    ("DATE(ts)", "hour", "set interval_unit to day and a cron no more frequent (cron @daily alone sets both), or "
                         "write the time column ds at its own grain"),
    ("TRUNC(ds, 'Q')", "month", "set interval_unit to quarter and a cron no more frequent, or write the time "
                                "column ds at its own grain"),
])
def test_a_coarse_time_column_is_refused_naming_the_interval_unit_that_fits(written, interval, fix):
    query = f"SELECT {written} AS ds, SUM(amount) AS total\nFROM raw.events GROUP BY 1"
    verdict = classify(query, ["ds"], interval_ms=IntervalUnit(interval).approx_ms)

    (finding,) = verdict.findings
    assert (finding.rule, finding.line, finding.column) == ("coarse_time", 1, 8)
    assert finding.construct.endswith(" AS ds") and finding.why.endswith(fix)
    assert "allow_coarse_time: true" in message("monthly_totals", verdict)


def test_the_time_column_argument_picks_which_partition_column_is_sliced_on():
    query = "SELECT CAST(ts AS DATE) AS event_date, ts, amount FROM raw.events"

    assert classify(query, ["event_date", "ts"], interval_ms=HOUR_MS, time_column="ts").safe
    (finding,) = classify(query, ["event_date", "ts"], interval_ms=HOUR_MS, time_column="event_date").findings
    assert finding.construct == "CAST(ts AS DATE) AS event_date"
