"""Every ``MODEL (`` example of the reference docs parses to what the docs say it means.

The examples come from the text dumps of the reference pages in ``/work/shared/spec``
(``sqlmesh-model-kinds.txt``, ``sqlmesh-incremental-by-time-guide.txt``,
``vulcan-incremental-by-time.txt``). ``fixtures/spec_examples/<doc>_<line>_<name>.sql``
is one example, verbatim (comments, trailing commas, ``::TEXT`` casts and all) except
for the line-number gutters of the web page; ``<line>`` is the line of ``MODEL (`` in
the doc. A comment line right above the block that belongs to the example (Vulcan's
``-- Daily model``) is kept. ``<same>.expected.json`` holds the record the example must
parse to, checked by hand against the example and the prose around it:

- ``name``, ``cron``, ``interval_unit`` (the settled unit), ``start`` / ``end`` (ISO UTC
  instants or null; ``end`` is exclusive), ``grains``, ``tags``, ``terms``,
  ``description``, ``column_descriptions``, ``column_tags``, ``audits``, ``depends_on``
- ``kind``: ``{"name": ..., **dataclasses.asdict(kind)}``, every field of the kind record
- ``query``: the normalized Spark SQL, or null for kinds without a query
- ``query_appended``: see below
- optional ``note`` (why a value is what it is) and ``xfail`` (a parser bug: the JSON
  holds the value the docs ask for, the test is a strict xfail with that reason)

Several examples are a bare MODEL block: the docs show only the properties under
discussion and leave the query out (or abbreviate the block with ``-- ... rest stays
the same``). A block of a kind that needs no query (SEED, EXTERNAL) must parse as it
is. Every other kind needs a query, and parsing the bare block is rightly refused
("not followed by a query"), so the block is tested followed by the fixed
:data:`PLACEHOLDER` query and the JSON says ``"query_appended": true``; what is
asserted then is the block's properties, the placeholder only completes the
definition.
"""

from __future__ import annotations

import dataclasses
import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals import Interval, to_ms
from pyspark_incr.model.definition import Model, parse_model
from pyspark_incr.model.kinds import KINDS, IncrementalByTimeRangeKind
from pyspark_incr.model.render import time_bounds

FIXTURES = Path(__file__).parent / "fixtures" / "spec_examples"
EXAMPLES = sorted(FIXTURES.glob("*.sql"))
#: The docs the examples come from; the verbatim check is skipped where they are not available.
SPEC_DIR = Path(os.environ.get("INCR_SPEC_DIR", "/work/shared/spec"))
SPEC_DOCS = ("sqlmesh-model-kinds", "sqlmesh-incremental-by-time-guide", "vulcan-incremental-by-time")
#: The query completing an example that is a bare MODEL block of a kind that needs a query.
PLACEHOLDER = "SELECT 1 AS placeholder"
RECORD_KEYS = {
    "name", "kind", "cron", "interval_unit", "start", "end", "grains", "tags", "terms", "description",
    "column_descriptions", "column_tags", "audits", "depends_on", "query", "query_appended",
}


def _expected(sql_file: Path) -> dict:
    return json.loads(sql_file.with_name(sql_file.stem + ".expected.json").read_text(encoding="utf-8"))


def _params(marked: bool = False):
    """One param per example; ``marked`` adds the strict xfail of a known parser bug (record test only)."""
    for f in EXAMPLES:
        reason = _expected(f).get("xfail")
        bug = pytest.mark.xfail(reason=reason, strict=True, raises=(AssertionError, ModelDefinitionError))
        marks = [bug] if reason and marked else []
        yield pytest.param(f, id=f.name, marks=marks)


def _iso(ms: int | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def record(model: Model) -> dict:
    """The parsed model as the JSON the fixtures hold (tuples as lists)."""
    return {
        "name": model.name,
        "kind": {"name": model.kind.name, **json.loads(json.dumps(dataclasses.asdict(model.kind)))},
        "cron": model.schedule.cron,
        "interval_unit": model.schedule.unit.value,
        "start": _iso(model.start_ms),
        "end": _iso(model.end_ms),
        "grains": list(model.grains),
        "tags": list(model.tags),
        "terms": list(model.terms),
        "description": model.description,
        "column_descriptions": [list(p) for p in model.column_descriptions],
        "column_tags": [[column, list(tags)] for column, tags in model.column_tags],
        "audits": [[name, [list(arg) for arg in args]] for name, args in model.audits],
        "depends_on": list(model.depends_on),
        "query": model.query,
    }


def _definition(sql_file: Path) -> str:
    """The example, completed with :data:`PLACEHOLDER` when its JSON says so."""
    text = sql_file.read_text(encoding="utf-8")
    if _expected(sql_file)["query_appended"]:
        return text.rstrip() + "\n\n" + PLACEHOLDER + "\n"
    return text


# --------------------------------------------------------------------------- the fixture set


def test_every_example_of_the_docs_is_a_fixture_with_its_expectations():
    assert len(EXAMPLES) == 26
    for f in EXAMPLES:
        stem, line, _ = f.stem.split("_", 2)
        assert stem in SPEC_DOCS and line.isdigit(), f"{f.name}: name must be <doc>_<line>_<short-name>.sql"
        expected = _expected(f)
        missing = RECORD_KEYS - set(expected)
        assert not missing, f"{f.name}: expected.json lacks {sorted(missing)}"
        assert expected["doc"] == f"{stem}.txt" and expected["line"] == int(line)


@pytest.mark.skipif(not SPEC_DIR.is_dir(), reason=f"reference docs not available at {SPEC_DIR}")
def test_fixtures_are_the_doc_examples_verbatim_and_none_is_missing():
    """Each fixture is the doc text at its line; every ``MODEL (`` line of the docs has a fixture."""
    by_place = {}
    for f in EXAMPLES:
        stem, line, _ = f.stem.split("_", 2)
        by_place[(stem, int(line))] = f
    for stem in SPEC_DOCS:
        doc = (SPEC_DIR / f"{stem}.txt").read_text(encoding="utf-8").splitlines()
        lines = [i + 1 for i, text in enumerate(doc) if text.startswith("MODEL (")]
        assert sorted(line for s, line in by_place if s == stem) == lines, stem
        for line in lines:
            example = by_place[(stem, line)].read_text(encoding="utf-8").splitlines()
            first = line - 1 - example.index("MODEL (")
            assert doc[first : first + len(example)] == example, by_place[(stem, line)].name


# --------------------------------------------------------------------------- each example


@pytest.mark.parametrize("sql_file", list(_params(marked=True)))
def test_doc_example_parses_to_the_record_the_docs_describe(sql_file: Path):
    expected = _expected(sql_file)
    model = parse_model(_definition(sql_file), source=str(sql_file))
    assert record(model) == {k: v for k, v in expected.items() if k in RECORD_KEYS - {"query_appended"}}
    assert model.source == str(sql_file)


@pytest.mark.parametrize("sql_file", list(_params()))
def test_bare_block_parses_alone_exactly_when_its_kind_needs_no_query(sql_file: Path):
    """The placeholder is appended only where the kind needs a query and the docs left it out."""
    expected = _expected(sql_file)
    text = sql_file.read_text(encoding="utf-8")
    kind = KINDS[expected["kind"]["name"]]
    if not expected["query_appended"]:
        assert parse_model(text).query == expected["query"]
        return
    assert kind.needs_query, f"{sql_file.name}: a {kind.name} block needs no query; do not append one"
    with pytest.raises(ModelDefinitionError, match="not followed by a query"):
        parse_model(text, source=str(sql_file))


@pytest.mark.parametrize(
    "sql_file", [p for p in _params() if _expected(p.values[0])["kind"]["name"] == "INCREMENTAL_BY_TIME_RANGE"]
)
def test_time_column_without_format_uses_the_default_format(sql_file: Path):
    """SQLMesh: "By default, SQLMesh assumes the time column is in the %Y-%m-%d format"."""
    kind = parse_model(_definition(sql_file)).kind
    assert isinstance(kind, IncrementalByTimeRangeKind)
    days = Interval(to_ms("2024-03-01"), to_ms("2024-03-03"))
    lo, hi, inclusive = time_bounds(days, "string", kind.time_column_format)
    assert (lo.this, hi.this, inclusive) == ("2024-03-01", "2024-03-02", True)


@pytest.mark.parametrize("sql_file", list(_params()))
def test_normalized_query_of_a_doc_example_is_stable_when_parsed_again(sql_file: Path):
    model = parse_model(_definition(sql_file))
    if model.query is None:
        return
    quoted = ".".join(f"`{part}`" for part in model.name.split("."))
    again = parse_model(f"MODEL (name {quoted}, kind FULL); {model.query}")
    assert (again.query, again.depends_on) == (model.query, model.depends_on)
