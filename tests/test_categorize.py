"""Change categories (pyspark_incr.plan.categorize), driven by tests/fixtures/categorize/*.sql.

Each fixture holds the old model, a line ``-- NEW``, the new model, a line
``-- EXPECT breaking|non-breaking`` and optionally ``-- REASON contains <text>``.
A line ``-- CONTENT <hash>`` in a model sets its content hash (a seed's CSV).
No Spark needed.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from pyspark_incr.errors import ArgumentError
from pyspark_incr.model.definition import Model, parse_model
from pyspark_incr.model.fingerprint import data_hash
from pyspark_incr.plan.categorize import BREAKING, NON_BREAKING, Category, categorize, parse_overrides

FIXTURES = Path(__file__).parent / "fixtures" / "categorize"
CASES = sorted(FIXTURES.glob("*.sql"))
_DIRECTIVE = re.compile(r"^-- (NEW|EXPECT|REASON contains|CONTENT)\b ?(.*)$")


def _model(lines: list[str]) -> Model:
    content = [m.group(2).strip() for m in map(_DIRECTIVE.match, lines) if m and m.group(1) == "CONTENT"]
    model = parse_model("\n".join(line for line in lines if not _DIRECTIVE.match(line)))
    return dataclasses.replace(model, content_hash=content[0]) if content else model


def load_case(path: Path) -> tuple[Model, Model, str, str | None]:
    """(old, new, expected category, expected reason fragment) of one fixture file."""
    lines = path.read_text().splitlines()
    marks = {m.group(1): (i, m.group(2).strip()) for i, m in enumerate(map(_DIRECTIVE.match, lines)) if m}
    new_at, expect_at = marks["NEW"][0], marks["EXPECT"][0]
    reason = marks.get("REASON contains", (None, None))[1]
    return _model(lines[:new_at]), _model(lines[new_at + 1:expect_at]), marks["EXPECT"][1], reason


def test_there_are_enough_cases():
    assert len(CASES) >= 20


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_fixture(path: Path):
    old, new, expected, reason = load_case(path)
    assert expected in (BREAKING, NON_BREAKING), f"{path.name}: bad EXPECT line"
    category = categorize(old, new)
    assert isinstance(category, Category)
    assert (category.name, path.name) == (expected, path.name), category.reason
    if reason:
        assert reason in category.reason


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_undoing_an_addition_is_breaking(path: Path):
    """Undoing a non-breaking change removes the added columns; only a no-op undoes to non-breaking."""
    old, new, expected, reason = load_case(path)
    if expected == NON_BREAKING and "no change" not in (reason or ""):
        assert categorize(new, old).name == BREAKING


def test_whitespace_and_comments_are_not_a_data_change():
    """The planner calls categorize only when data hashes differ; whitespace and comments never make them differ."""
    old = parse_model("MODEL (name a.b, kind FULL); SELECT id, amount FROM raw.orders WHERE amount > 0")
    new = parse_model("MODEL (name a.b, kind FULL);\nSELECT id,  amount -- cents\nFROM raw.orders /* real */ WHERE amount>0")
    assert data_hash(old) == data_hash(new)
    assert categorize(old, new) == Category(NON_BREAKING, "no change to the query, kind or data properties")


def test_identifier_case_changes_the_hash_but_not_the_data():
    """Identifier case is kept in the stored query, so the planner does ask; Spark resolves names case-insensitively."""
    old, new, _, _ = load_case(FIXTURES / "formatting_only.sql")
    assert data_hash(old) != data_hash(new)
    assert categorize(old, new).name == NON_BREAKING


def test_metadata_and_build_properties_do_not_count():
    old = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds)); SELECT ds FROM t")
    new = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 3), "
                      "cron '@hourly', owner 'me'); SELECT ds FROM t")
    assert categorize(old, new).name == NON_BREAKING


def test_seed_path_change_is_breaking():
    old = parse_model("MODEL (name a.s, kind SEED (path 'a.csv'))")
    new = parse_model("MODEL (name a.s, kind SEED (path 'b.csv'))")
    assert categorize(old, new) == Category(BREAKING, "changes kind property path: a.csv -> b.csv")


KNOWN = ["shop.daily", "Shop.Totals"]


@pytest.mark.parametrize("text, expected", [
    (None, {}),
    ("", {}),
    ("   ", {}),
    ("shop.daily:breaking", {"shop.daily": BREAKING}),
    ("SHOP.DAILY : Breaking , shop.totals:non-breaking,", {"shop.daily": BREAKING, "shop.totals": NON_BREAKING}),
    ("shop.totals:non_breaking", {"shop.totals": NON_BREAKING}),
    ("shop.daily:breaking, shop.daily:breaking", {"shop.daily": BREAKING}),
])
def test_parse_overrides(text, expected):
    assert parse_overrides(text, KNOWN) == expected


@pytest.mark.parametrize("text, fragment", [
    ("shop.weekly:breaking", "names model shop.weekly, which is not a changed model of this plan"),
    ("shop.dayly:breaking", "did you mean shop.daily?"),
    ("shop.daily:forward-only", "has category 'forward-only'"),
    ("shop.daily", "is not model:category"),
    ("shop.daily:", "is not model:category"),
    (":breaking", "is not model:category"),
    ("shop.daily:breaking:x", "is not model:category"),
    ("shop.daily:breaking, shop.daily:non-breaking", "contradicts an earlier item for shop.daily"),
])
def test_parse_overrides_errors(text, fragment):
    with pytest.raises(ArgumentError) as raised:
        parse_overrides(text, KNOWN)
    message = str(raised.value)
    assert fragment in message
    assert message.startswith("categorize item '")
    assert message.endswith("use 'model:breaking' or 'model:non-breaking'")
