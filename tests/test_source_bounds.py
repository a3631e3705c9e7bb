"""Per-source bound derivation (smelt Form A / Form B), one fixture query per case.

Each ``tests/fixtures/bounds/*.sql`` starts with header comments:

* ``-- TIME ds``: the model's time column;
* ``-- SOURCE raw.events ts``: a timeseries source and its time column (one per source);
* ``-- EXPECT raw.events bounded ts PT30M PT0S`` / ``unbounded`` / ``not-derivable``: one per source
  expected in the result; the result must hold exactly these sources (lookups are absent);
* ``-- REASON raw.events LAG``: optional, text the reason must contain (case-insensitive).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pyspark_incr.safety.bounds import BOUNDED, NOT_DERIVABLE, UNBOUNDED, Bound, derive, iso_duration

FIXTURES = Path(__file__).parent / "fixtures" / "bounds"
KINDS = {"bounded": BOUNDED, "unbounded": UNBOUNDED, "not-derivable": NOT_DERIVABLE}


def _parse(path: Path) -> dict:
    case: dict = {"time": None, "sources": {}, "expect": {}, "reasons": [], "query": []}
    for line in path.read_text().splitlines():
        words = line.split()
        if words[:1] == ["--"] and len(words) > 1 and words[1] in ("TIME", "SOURCE", "EXPECT", "REASON"):
            key, args = words[1], words[2:]
            if key == "TIME":
                case["time"] = args[0]
            elif key == "SOURCE":
                case["sources"][args[0]] = args[1]
            elif key == "EXPECT":
                case["expect"][args[0]] = args[1:]
            else:
                case["reasons"].append((args[0], " ".join(args[1:])))
        else:
            case["query"].append(line)
    case["query"] = "\n".join(case["query"])
    return case


CASES = sorted(FIXTURES.glob("*.sql"))


def test_enough_cases():
    assert len(CASES) >= 20


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_fixture(path: Path):
    case = _parse(path)
    assert case["time"] and case["expect"], f"{path.name}: missing TIME or EXPECT header"
    got = derive(case["query"], case["time"], case["sources"])
    assert set(got) == set(case["expect"]), {k: v.iso() for k, v in got.items()}
    for source, expect in case["expect"].items():
        bound = got[source]
        assert bound.source == source
        assert bound.kind == KINDS[expect[0]], bound
        if bound.kind == BOUNDED:
            column, before, after = expect[1:]
            assert (bound.column, iso_duration(bound.before_ms), iso_duration(bound.after_ms)) == (column, before, after)
            assert bound.iso() == {"type": "bounded", "partition_col": column, "before": before, "after": after}
        else:
            assert bound.reason, bound
            assert bound.iso()["reason"] == bound.reason
    for source, text in case["reasons"]:
        assert text.lower() in got[source].reason.lower(), got[source].reason


@pytest.mark.parametrize("ms, text", [
    (0, "PT0S"), (1000, "PT1S"), (30 * 60_000, "PT30M"), (3_600_000, "PT1H"), (86_400_000, "P1D"),
    (36 * 3_600_000, "P1DT12H"), (90 * 60_000 + 500, "PT1H30M0.5S"), (7 * 86_400_000, "P7D"),
])
def test_iso_duration(ms, text):
    assert iso_duration(ms) == text


@pytest.mark.parametrize("interval, ms", [
    ("INTERVAL '30 minutes'", 30 * 60_000), ("INTERVAL 30 MINUTES", 30 * 60_000),
    ("INTERVAL '1' DAY", 86_400_000), ("INTERVAL 1 DAY", 86_400_000), ("INTERVAL '2 weeks'", 14 * 86_400_000),
    ("INTERVAL '45 seconds'", 45_000), ("INTERVAL '1 day 6 hours'", 30 * 3_600_000),
])
def test_interval_spellings(interval, ms):
    got = derive(f"SELECT * FROM raw.e WHERE ts BETWEEN @start_ts - {interval} AND @end_ts", "ts", {"raw.e": "ts"})
    assert got["raw.e"] == Bound("raw.e", BOUNDED, "ts", ms, 0)


@pytest.mark.parametrize("unit", ["month", "year"])
def test_variable_units_not_derivable(unit):
    got = derive(f"SELECT * FROM raw.e WHERE ts BETWEEN @start_ts - INTERVAL 1 {unit.upper()} AND @end_ts",
                 "ts", {"raw.e": "ts"})
    assert got["raw.e"].kind == NOT_DERIVABLE and unit in got["raw.e"].reason


def test_source_keys_are_case_insensitive():
    got = derive("SELECT * FROM RAW.Events WHERE TS = @start_ds", "ds", {"Raw.EVENTS": "Ts"})
    assert got == {"raw.events": Bound("raw.events", BOUNDED, "ts")}


def test_hidden_macros_count_as_run_window():
    # hide_macros spells @start_ds as a plain identifier when a query is parsed outside spark
    got = derive("SELECT * FROM raw.e WHERE ts >= __incr_macro__start_ds - INTERVAL 1 HOUR "
                 "AND ts <= __incr_macro__end_ds", "ts", {"raw.e": "ts"})
    assert got["raw.e"] == Bound("raw.e", BOUNDED, "ts", 3_600_000, 0)


def test_tie_to_an_unbounded_source_is_not_a_bound():
    # b follows a's time column, but a itself is read in full: neither is bounded
    got = derive("SELECT * FROM raw.a JOIN raw.b ON b.ts BETWEEN a.ts - INTERVAL 1 DAY AND a.ts",
                 "ts", {"raw.a": "ts", "raw.b": "ts"})
    assert {k: v.kind for k, v in got.items()} == {"raw.a": UNBOUNDED, "raw.b": UNBOUNDED}


def test_source_not_read_is_absent():
    assert derive("SELECT 1 AS x", "ds", {"raw.e": "ds"}) == {}
