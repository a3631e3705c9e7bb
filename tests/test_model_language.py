"""The MODEL language, driven by fixture files (no Spark session needed).

``fixtures/models/valid/<case>.sql`` is a definition; ``<case>.expected.json``
holds what parsing it must give:

- ``name``, ``cron``, ``interval_unit`` (the settled unit), ``grains``, ``depends_on``
- ``kind``: ``{"name": ..., <every field of the kind record>}``
- ``start`` / ``end``: ISO instants (UTC) of ``start_ms`` / ``end_ms``; ``end`` is the
  *exclusive* end, so ``end '2024-12-31'`` expects ``"2025-01-01T00:00:00Z"``
- ``query``: the normalized Spark SQL text
- optional ``description``, ``owner``, ``tags``, ``dialect``
- optional ``xfail``: a known bug, the reason

``fixtures/models/invalid/<case>.sql`` starts with ``-- error: <substring>``; parsing
must raise :class:`ModelDefinitionError` whose message contains it. A second line
``-- xfail: <reason>`` marks a known bug.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals import Interval, to_ms
from pyspark_incr.model.block import KindSpec, parse_block
from pyspark_incr.model.definition import parse_model
from pyspark_incr.model.fingerprint import data_hash, metadata_hash
from pyspark_incr.model.kinds import KINDS, FullKind, IncrementalByTimeRangeKind, ViewKind
from pyspark_incr.model.render import render_query
from pyspark_incr.sqltext import split_statements

FIXTURES = Path(__file__).parent / "fixtures" / "models"
VALID = sorted((FIXTURES / "valid").glob("*.sql"))
INVALID = sorted((FIXTURES / "invalid").glob("*.sql"))
DAY = Interval(to_ms("2024-01-01"), to_ms("2024-01-02"))
CORE_KEYS = {"name", "kind", "cron", "interval_unit", "start", "end", "grains", "depends_on", "query"}


def _expected(sql_file: Path) -> dict:
    return json.loads(sql_file.with_name(sql_file.name.removesuffix(".sql") + ".expected.json").read_text())


def _valid_params():
    for f in VALID:
        reason = _expected(f).get("xfail")
        marks = [pytest.mark.xfail(reason=reason, strict=True, raises=(AssertionError, ModelDefinitionError))] if reason else []
        yield pytest.param(f, id=f.name, marks=marks)


def _invalid_header(sql_file: Path) -> tuple[str, str | None]:
    lines = sql_file.read_text().splitlines()
    assert lines[0].startswith("-- error: "), f"{sql_file.name} must start with '-- error: <substring>'"
    xfail = lines[1].removeprefix("-- xfail: ") if lines[1].startswith("-- xfail: ") else None
    return lines[0].removeprefix("-- error: "), xfail


def _invalid_params():
    for f in INVALID:
        reason = _invalid_header(f)[1]
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        yield pytest.param(f, id=f.name, marks=marks)


def _iso_ms(value: str | None) -> int | None:
    return None if value is None else to_ms(value)


# --------------------------------------------------------------------------- fixture sanity


def test_there_are_fixtures_and_each_valid_one_has_its_expectations():
    assert len(VALID) >= 10 and len(INVALID) >= 15
    for f in VALID:
        missing = CORE_KEYS - set(_expected(f))
        assert not missing, f"{f.name}: expected.json lacks {sorted(missing)}"


# --------------------------------------------------------------------------- valid definitions


@pytest.mark.parametrize("sql_file", list(_valid_params()))
def test_valid_definition_parses_to_its_expected_fields(sql_file: Path):
    expected = _expected(sql_file)
    model = parse_model(sql_file.read_text(encoding="utf-8"), source=str(sql_file))

    assert model.name == expected["name"]
    kind = {"name": model.kind.name, **dataclasses.asdict(model.kind)}
    assert kind == expected["kind"]
    assert model.schedule.cron == expected["cron"]
    assert model.schedule.unit.value == expected["interval_unit"]
    assert model.start_ms == _iso_ms(expected["start"])
    assert model.end_ms == _iso_ms(expected["end"])
    assert list(model.grains) == expected["grains"]
    assert list(model.depends_on) == expected["depends_on"]
    assert model.query == expected["query"]
    for key in ("description", "owner", "dialect"):
        if key in expected:
            assert getattr(model, key) == expected[key], key
    if "tags" in expected:
        assert list(model.tags) == expected["tags"]
    assert model.source == str(sql_file)


@pytest.mark.parametrize("sql_file", [p for p in _valid_params() if not p.marks])
def test_normalized_query_of_a_valid_definition_is_stable_when_parsed_again(sql_file: Path):
    """The stored query is Spark SQL: putting it behind a spark MODEL block again changes nothing."""
    model = parse_model(sql_file.read_text(encoding="utf-8"))
    again = parse_model(f"MODEL (name {_quoted(model.name)}, kind FULL); {model.query}")
    assert again.query == model.query
    assert again.depends_on == model.depends_on


def _quoted(name: str) -> str:
    return ".".join(f"`{p}`" for p in name.split("."))


# --------------------------------------------------------------------------- invalid definitions


@pytest.mark.parametrize("sql_file", list(_invalid_params()))
def test_invalid_definition_is_refused_with_a_clear_error(sql_file: Path):
    substring, _ = _invalid_header(sql_file)
    with pytest.raises(ModelDefinitionError) as info:
        parse_model(sql_file.read_text(encoding="utf-8"), source=str(sql_file))
    assert substring in str(info.value)


@pytest.mark.parametrize("sql_file", [p for p in _invalid_params() if not p.marks])
def test_error_of_an_invalid_project_file_names_the_file(sql_file: Path):
    with pytest.raises(ModelDefinitionError, match=sql_file.name):
        parse_model(sql_file.read_text(encoding="utf-8"), source=str(sql_file))


# --------------------------------------------------------------------------- the block without ';'


def test_model_block_may_be_followed_by_the_query_without_a_semicolon():
    with_semicolon = "MODEL (name shop.cli, kind INCREMENTAL_BY_TIME_RANGE (time_column ds)); SELECT ds FROM raw.e"
    without = "MODEL (name shop.cli, kind INCREMENTAL_BY_TIME_RANGE (time_column ds))\nSELECT ds FROM raw.e"
    assert parse_model(without) == parse_model(with_semicolon)


def test_definition_without_semicolon_survives_the_spark_sql_cli_statement_split():
    """spark-sql splits a script on ';': only the form without it stays one statement."""
    without = "MODEL (name shop.cli, kind FULL, description 'a;b')\nSELECT ';' AS x FROM raw.e"
    with_semicolon = "MODEL (name shop.cli, kind FULL, description 'a;b');\nSELECT ';' AS x FROM raw.e"
    assert split_statements(without) == [without]
    assert len(split_statements(with_semicolon)) == 2
    model = parse_model(split_statements(without)[0])
    assert (model.description, model.query) == ("a;b", "SELECT ';' AS x FROM raw.e")


# --------------------------------------------------------------------------- block reader details


def test_block_properties_keep_their_line_numbers_for_error_messages():
    block = parse_block("MODEL (\n  name a.b,\n\n  kind FULL,\n  cron '@daily'\n)\nSELECT 1")
    assert block.properties["name"].line == 2
    assert isinstance(block.properties["kind"], KindSpec) and block.properties["kind"].line == 4
    assert block.properties["cron"].line == 5
    assert block.query_line == 7 and block.query_text == "SELECT 1"


def test_kind_properties_are_read_from_the_nested_parentheses():
    block = parse_block("MODEL (kind incremental_by_time_range (Time_Column (ds, '%Y'), batch_size 2)); SELECT 1")
    spec = block.properties["kind"]
    assert spec.name == "INCREMENTAL_BY_TIME_RANGE"
    assert sorted(spec.properties) == ["batch_size", "time_column"]


def test_kind_followed_by_something_other_than_parentheses_is_refused():
    with pytest.raises(ModelDefinitionError, match=r"kind must be written NAME or NAME \(property value, \.\.\.\)"):
        parse_model("MODEL (name a.b, kind FULL extra); SELECT 1")


def test_every_kind_of_the_spec_is_registered_under_its_own_name():
    assert set(KINDS) == {
        "FULL", "VIEW", "EMBEDDED", "SEED", "EXTERNAL", "INCREMENTAL_UNMANAGED", "INCREMENTAL_BY_TIME_RANGE",
        "INCREMENTAL_BY_UNIQUE_KEY", "SCD_TYPE_2", "SCD_TYPE_2_BY_TIME", "SCD_TYPE_2_BY_COLUMN", "INCREMENTAL_BY_CURSOR",
        "INCREMENTAL_BY_PARTITION",
    }
    assert all(cls.name == name for name, cls in KINDS.items())
    assert ViewKind.has_intervals is False and FullKind.has_intervals and IncrementalByTimeRangeKind.has_intervals


def test_grain_and_grains_together_are_combined_in_order():
    model = parse_model("MODEL (name a.b, kind FULL, grain z, grains [x, y]); SELECT 1 AS x, 2 AS y, 3 AS z")
    assert model.grains == ("z", "x", "y")


def test_model_name_is_lowercased_and_split_into_schema_and_table():
    model = parse_model("MODEL (name Sales.Daily_Revenue, kind FULL); SELECT 1")
    assert (model.name, model.schema, model.table) == ("sales.daily_revenue", "sales", "daily_revenue")


def test_a_dot_inside_a_backquoted_name_part_is_not_taken_for_a_separator():
    try:
        model = parse_model("MODEL (name `my.db`.t, kind FULL); SELECT 1")
    except ModelDefinitionError:
        return  # refusing such a name is fine too
    # `my.db`.t becomes the name 'my.db.t', whose schema reads back as 'my' and table as 'db'
    assert (model.schema, model.table) == ("my.db", "t")



def test_a_date_only_end_is_inclusive_and_a_timestamp_end_is_exclusive():
    by_date = parse_model("MODEL (name a.b, kind FULL, start '2024-01-01', end '2024-01-31'); SELECT 1")
    by_ts = parse_model("MODEL (name a.b, kind FULL, start '2024-01-01', end '2024-01-31 00:00:00'); SELECT 1")
    assert by_date.end_ms == to_ms("2024-02-01")
    assert by_ts.end_ms == to_ms("2024-01-31")


def test_interval_unit_given_explicitly_overrides_the_one_inferred_from_the_cron():
    assert parse_model("MODEL (name a.b, kind FULL, cron '@daily'); SELECT 1").schedule.unit.value == "day"
    model = parse_model("MODEL (name a.b, kind FULL, cron '@daily', interval_unit 'HOUR'); SELECT 1")
    assert model.schedule.unit.value == "hour"


def test_ctes_are_not_references_but_a_qualified_table_with_a_cte_name_is():
    model = parse_model(
        "MODEL (name a.b, kind FULL); WITH events AS (SELECT * FROM raw.events) "
        "SELECT * FROM events JOIN other.events ON TRUE"
    )
    assert model.depends_on == ("other.events", "raw.events")


def test_subquery_and_join_tables_are_all_references():
    model = parse_model(
        "MODEL (name a.b, kind FULL); SELECT * FROM (SELECT * FROM s.one) AS x "
        "JOIN s.two ON TRUE WHERE x.id IN (SELECT id FROM S.Three)"
    )
    assert model.depends_on == ("s.one", "s.three", "s.two")


# --------------------------------------------------------------------------- dialects


def test_query_in_duckdb_dialect_is_transpiled_to_spark_sql():
    model = parse_model(
        "MODEL (name a.b, kind FULL, dialect duckdb); SELECT x::TEXT AS t, list_value(1, 2) AS l FROM s.t"
    )
    assert model.dialect == "duckdb"
    assert model.query == "SELECT CAST(x AS STRING) AS t, ARRAY(1, 2) AS l FROM s.t"


@pytest.mark.parametrize("dialect", ["spark", "postgres", "snowflake"])
def test_time_macros_survive_the_dialect_of_the_query(dialect: str):
    model = parse_model(
        f"MODEL (name a.b, kind FULL, dialect {dialect}); SELECT * FROM s.t WHERE ds BETWEEN @start_ds AND @end_ds"
    )
    rendered = render_query(model.query, DAY, to_ms("2024-01-02"), where="m").sql("spark")
    assert rendered == "SELECT * FROM s.t WHERE ds BETWEEN '2024-01-01' AND '2024-01-01'"


def test_time_macros_survive_a_duckdb_query():
    model = parse_model(
        "MODEL (name a.b, kind FULL, dialect duckdb); SELECT * FROM s.t WHERE ds BETWEEN @start_ds AND @end_ds"
    )
    rendered = render_query(model.query, DAY, to_ms("2024-01-02"), where="m").sql("spark")
    assert rendered == "SELECT * FROM s.t WHERE ds BETWEEN '2024-01-01' AND '2024-01-01'"


# --------------------------------------------------------------------------- fingerprints


def test_formatting_and_description_change_no_data_but_do_change_metadata():
    a = parse_model("MODEL (name a.b, kind FULL, description 'x'); SELECT 1 AS x FROM s.t")
    b = parse_model("MODEL (\n name a.b,\n kind FULL,\n description 'y'\n)\nselect   1   as x\nfrom s.t")
    assert data_hash(a) == data_hash(b)
    assert metadata_hash(a) != metadata_hash(b)


def test_time_column_and_query_change_the_data_hash():
    base = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds)); SELECT ds FROM s.t")
    other_column = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ts)); SELECT ds FROM s.t")
    other_query = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds)); SELECT ds FROM s.u")
    other_kind = parse_model("MODEL (name a.b, kind FULL); SELECT ds FROM s.t")
    hashes = {data_hash(m) for m in (base, other_column, other_query, other_kind)}
    assert len(hashes) == 4
    assert metadata_hash(base) == metadata_hash(other_column) == metadata_hash(other_query)


def test_batch_size_is_a_build_setting_that_changes_only_the_metadata_hash():
    base = parse_model("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds)); SELECT ds FROM s.t")
    batched = parse_model(
        "MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 3)); SELECT ds FROM s.t"
    )
    assert data_hash(base) == data_hash(batched)
    assert metadata_hash(base) != metadata_hash(batched)


def test_cron_and_start_change_only_the_metadata_hash():
    base = parse_model("MODEL (name a.b, kind FULL); SELECT 1 AS x")
    hourly = parse_model("MODEL (name a.b, kind FULL, cron '@hourly'); SELECT 1 AS x")
    started = parse_model("MODEL (name a.b, kind FULL, start '2024-01-01'); SELECT 1 AS x")
    assert data_hash(base) == data_hash(hourly) == data_hash(started)
    assert len({metadata_hash(base), metadata_hash(hourly), metadata_hash(started)}) == 3


def test_a_query_that_cannot_be_parsed_shows_its_line_with_a_caret_under_the_column():
    text = "MODEL (name shop.bad, kind FULL);\nSELECT id,\n       (amount + FROM raw.orders"

    with pytest.raises(ModelDefinitionError) as refused:
        parse_model(text, source="models/bad.sql")

    first, source, caret = str(refused.value).splitlines()
    assert first.startswith("model file models/bad.sql") or "models/bad.sql" in first
    assert ": line 3, column 18: the query cannot be parsed: " in first
    assert source == "           (amount + FROM raw.orders"
    assert caret == " " * 21 + "^^^^"  # under FROM, where the parser stopped
