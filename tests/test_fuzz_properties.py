"""Property-based tests of the MODEL language parser (hypothesis).

The contract under test: whatever text it is given, :func:`parse_model` returns a
frozen, hashable :class:`Model` or raises :class:`ModelDefinitionError`. Any other
exception escaping (ValueError, KeyError, OSError, sqlglot or croniter errors,
RecursionError, ...) is a bug.

- (a) :func:`test_arbitrary_text_as_a_property_value`: arbitrary text as the value of
  every MODEL property (``MODEL_PROPS`` and aliases, plus ``name`` and ``kind``) and of
  every property of every kind's ``props`` table;
- (b) :func:`test_structured_value_as_a_property_value`: values built from a small SQL-ish
  grammar (identifiers, quoted strings with quotes / backslashes / unicode, numbers,
  nested parens and brackets, ``=``, ``:=``, commas, ``--`` and ``/* */`` comments) for the
  same properties, and :func:`test_interpreted_string_as_a_property_value`: crons, relative and
  ISO times, zone names, formats and dialect names for the properties read as strings;
- (c) :func:`test_arbitrary_definition_text`: ``MODEL (`` followed by random tokens;
- (d) :func:`test_reformatting_a_query_keeps_the_data_hash` and
  :func:`test_description_changes_the_metadata_hash_only`: reformatting a valid query (random
  whitespace, keyword / macro / function-name case, added comments) changes neither hash nor
  the parsed record; changing only ``description`` changes ``metadata_hash``, never ``data_hash``.

Each fuzz test draws the property from the whole table, so a fixed budget covers all of
them; :func:`test_every_property_slot_is_a_valid_definition_with_a_valid_value` shows every
frame around a fuzzed value is itself a valid definition.

Bugs the fuzzing found are kept in :data:`KNOWN_BUGS` (the exception that used to escape
and its minimal input) as regression tests: each minimal input must now be refused with a
ModelDefinitionError, and no fuzz test accepts any other exception.

Runs are reproducible (``derandomize=True``) and bounded (``max_examples``); set
``INCR_FUZZ_EXAMPLES=5000 INCR_FUZZ_RANDOM=1`` for a longer, random exploration.
"""

from __future__ import annotations

import decimal
import os
from dataclasses import dataclass

import pytest
from croniter import CroniterBadDateError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals import to_ms
from pyspark_incr.model.definition import MODEL_PROPS, Model, parse_model
from pyspark_incr.model.fingerprint import data_hash, metadata_hash
from pyspark_incr.model.kinds import KINDS

FUZZ = settings(
    max_examples=int(os.environ.get("INCR_FUZZ_EXAMPLES", "300")),
    derandomize=not os.environ.get("INCR_FUZZ_RANDOM"),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


# --------------------------------------------------------------------------- known bugs


@dataclass(frozen=True)
class Bug:
    """A known escaping exception: its type, a pattern of its message, the package function it
    escapes through (a frame of the traceback), and the minimal input."""

    key: str
    error: type[BaseException]
    message: str
    through: str
    reason: str
    minimal: str


KNOWN_BUGS: tuple[Bug, ...] = (
    Bug(
        "relative-time-overflow", OverflowError, r"int too large|must have magnitude", "times.py:to_ms",
        "bug: start/end 'N days ago' with N beyond timedelta's range raises OverflowError "
        "(intervals/times.py to_ms, via definition._time which only catches ArgumentError)",
        "MODEL (name a.b, kind FULL, start '1000000000 days ago'); SELECT 1 AS x",
    ),
    Bug(
        "cron-never-fires", CroniterBadDateError, r"failed to find next date", "schedule.py:_shortest_gap_ms",
        "bug: a cron croniter accepts but that never fires (Feb 30) raises CroniterBadDateError "
        "(intervals/schedule.py Schedule.parse -> _shortest_gap_ms)",
        "MODEL (name a.b, kind FULL, cron '0 0 30 2 *'); SELECT 1 AS x",
    ),
    Bug(
        "int-digit-limit", ValueError, r"Exceeds the limit \(\d+ digits\) for integer string", "values.py:read",
        "bug: a whole-number property of more than 4300 digits raises ValueError from int() "
        "(model/values.py as_int)",
        "MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size " + "1" * 4301
        + ")); SELECT ds FROM raw.t",
    ),
    Bug(
        "zoneinfo-oserror", OSError, r"Is a directory|File name too long", "values.py:as_timezone",
        "bug: cron_tz naming a tz directory ('America') or an over-long name raises "
        "IsADirectoryError / OSError from ZoneInfo (model/values.py as_timezone catches only "
        "ZoneInfoNotFoundError and ValueError)",
        "MODEL (name a.b, kind FULL, cron_tz 'America'); SELECT 1 AS x",
    ),
    Bug(
        "value-sqlglot-invalid-operation", decimal.InvalidOperation, r"ConversionSyntax", "block.py:_property",
        "bug: sqlglot raises decimal.InvalidOperation for a value like {{1BD}}; "
        "model/block.py _property catches only ParseError and TokenError",
        "MODEL (name a.b, kind FULL, description {{1BD}}); SELECT 1 AS x",
    ),
    Bug(
        "query-sqlglot-invalid-operation", decimal.InvalidOperation, r"ConversionSyntax", "definition.py:_query",
        "bug: sqlglot raises decimal.InvalidOperation for a query like SELECT {{1BD}}; "
        "model/definition.py _query catches only ParseError and TokenError",
        "MODEL (name a.b, kind FULL); SELECT {{1BD}} AS x",
    ),
    Bug(
        "value-recursion", RecursionError, r"maximum recursion depth", "block.py:_property",
        "bug: a deeply nested property value (about 50 parens) raises RecursionError from sqlglot "
        "(model/block.py _property catches only ParseError and TokenError)",
        "MODEL (name a.b, kind FULL, description " + "(" * 200 + "'x'" + ")" * 200 + "); SELECT 1 AS x",
    ),
    Bug(
        "query-recursion", RecursionError, r"maximum recursion depth", "definition.py:_query",
        "bug: a deeply nested query (about 50 parens) raises RecursionError from sqlglot "
        "(model/definition.py _query catches only ParseError and TokenError)",
        "MODEL (name a.b, kind FULL); SELECT " + "(" * 200 + "1" + ")" * 200 + " AS x",
    ),
)


def check(text: str) -> Model | None:
    """Parse ``text``: a hashable Model, or None for a ModelDefinitionError; anything else fails the test."""
    try:
        model = parse_model(text)
    except ModelDefinitionError:
        return None
    except Exception as error:  # noqa: BLE001 - RecursionError included; anything else is reported
        raise AssertionError(f"{type(error).__name__} escaped parse_model for {text!r}: {error}") from error
    assert isinstance(model, Model)
    hash(model)  # frozen record of plain, hashable values
    return model


@pytest.mark.parametrize("bug", [pytest.param(b, id=b.key) for b in KNOWN_BUGS])
def test_input_that_once_crashed_the_parser_is_refused_with_a_model_definition_error(bug: Bug):
    """Each bug the fuzzing found, on its minimal input: now a clear ModelDefinitionError."""
    with pytest.raises(ModelDefinitionError):
        parse_model(bug.minimal)


def test_an_accepted_cron_ticks_at_the_same_times_every_time():
    """A cron either is refused or always gives the same ticks (a schedule must be reproducible)."""
    try:
        model = parse_model("MODEL (name a.b, kind FULL, cron 'R R * * *'); SELECT 1 AS x")
    except ModelDefinitionError:
        return
    ticks = {model.schedule.last_tick(to_ms("2024-01-05 23:59:00")) for _ in range(20)}
    assert len(ticks) == 1, sorted(ticks)


# --------------------------------------------------------------------------- definitions around a value

#: A valid value for each required kind property, used when another property is fuzzed.
REQUIRED = {
    "time_column": "time_column ds",
    "unique_key": "unique_key id",
    "columns": "columns (a, b)",
    "cursor_column": "cursor_column ts",
    "path": "path 'items.csv'",
}
QUERY = "SELECT ds, id, a, b, ts FROM raw.t WHERE ds BETWEEN @start_ds AND @end_ds"


def _model_slots() -> list[tuple[str, str]]:
    """(property, template with ``{v}`` for the value) for every MODEL property."""
    slots = [("name", "MODEL (name {v}, kind FULL); " + QUERY), ("kind", "MODEL (name a.b, kind {v}); " + QUERY)]
    for prop in MODEL_PROPS:
        for key in (prop.name, *prop.aliases):
            slots.append((key, f"MODEL (name a.b, kind FULL, {key} {{v}}); {QUERY}"))
    return slots


def _kind_slots() -> list[tuple[str, str]]:
    """(kind.property, template) for every property of every kind."""
    slots = []
    for name, cls in KINDS.items():
        for prop in cls.props:
            for key in (prop.name, *prop.aliases):
                others = [REQUIRED[p.name] for p in cls.props if p.required and p.name != prop.name]
                inner = ", ".join([*others, f"{key} {{v}}"])
                query = f"; {QUERY}" if cls.needs_query else ""
                needed = ", partitioned_by ds" if getattr(cls, "needs_partitioned_by", False) else ""
                slots.append((f"{name}.{key}", f"MODEL (name a.b, kind {name} ({inner}){needed}){query}"))
    return slots


MODEL_SLOTS = _model_slots()
KIND_SLOTS = _kind_slots()
ALL_SLOTS = MODEL_SLOTS + KIND_SLOTS


#: A valid value of each property, to show the frame around a fuzzed value is itself valid.
VALID = {
    "name": "a.b", "kind": "FULL", "start": "'2024-01-01'", "end": "'2024-12-31'", "cron": "'@daily'",
    "cron_tz": "'UTC'", "interval_unit": "day", "week_start": "sunday", "owner": "x", "description": "'d'",
    "column_descriptions": "(a = 'x')", "columns": "(a INT)", "grain": "ds", "grains": "(ds, id)", "tags": "(t)",
    "terms": "('x.y')", "column_tags": "(a = ('t'))", "partitioned_by": "ds", "clustered_by": "(id)",
    "table_format": "delta", "storage_format": "parquet", "physical_properties": "(k = 'v')",
    "allow_partials": "true", "enabled": "false", "dialect": "spark", "references": "(x.y)",
    "audits": "(not_null(columns := (id)))", "assertions": "(not_null(columns := (id)))",
    "materialized": "true", "insert_overwrite": "true", "path": "'x.csv'", "csv_settings": "(delimiter = ',')",
    "batch_size": "2", "time_column": "(ds, '%Y%m%d')", "batch_concurrency": "2", "lookback": "1",
    "forward_only": "true", "on_destructive_change": "warn", "on_additive_change": "error",
    "disable_restatement": "true", "unique_key": "(id, ds)",
    "when_matched": "WHEN MATCHED THEN UPDATE SET target.a = source.a", "merge_filter": "source.ds > target.ds",
    "valid_from_name": "vf", "valid_to_name": "vt", "invalidate_hard_deletes": "false", "time_data_type": "DATE",
    "updated_at_name": "u", "updated_at_as_valid_from": "true", "execution_time_as_valid_from": "true",
    "cursor_column": "ts", "initial_value": "0", "safety_overrides": "(allow_limit = true)",
    "signals": "(ready := 'SELECT TRUE')",  # signals
    "session_properties": "(spark.sql.shuffle.partitions = 4)", "virtual_properties": "(team = 'core')",
    "auto_restatement_cron": "'@weekly'", "auto_restatement_intervals": "7",
    "ignored_rules": "['noselectstar']", "formatting": "false",  # pyspark-incr lint / format
}


@pytest.mark.parametrize("slot", [pytest.param(s, id=s[0]) for s in ALL_SLOTS])
def test_every_property_slot_is_a_valid_definition_with_a_valid_value(slot: tuple[str, str]):
    """The frames are sound, so fuzzing a value exercises that property's reader, not a broken frame."""
    key = slot[0].split(".")[-1]
    value = "*" if slot[0] == "SCD_TYPE_2_BY_COLUMN.columns" else VALID[key]
    assert isinstance(parse_model(slot[1].replace("{v}", value)), Model)


def test_every_property_name_is_fuzzed():
    keys = {k for k, _ in MODEL_SLOTS} | {k.split(".")[1] for k, _ in KIND_SLOTS}
    assert {n for p in MODEL_PROPS for n in (p.name, *p.aliases)} <= keys
    assert {p.name for cls in KINDS.values() for p in cls.props} <= keys
    assert all(cls.props for cls in KINDS.values() if cls.name not in ("FULL", "EMBEDDED", "EXTERNAL"))


# --------------------------------------------------------------------------- (a) arbitrary text

#: Characters that matter to the tokenizer, mixed with arbitrary unicode (no lone surrogates).
SQL_CHARS = "()[]{},;:=@$%'\"`\\-+*/.<>!|&^~#?_ \t\n\r0123456789aeEdxzAZ"
CHARS = st.one_of(st.sampled_from(SQL_CHARS), st.characters(exclude_categories=("Cs",)))
TEXT = st.text(alphabet=CHARS, max_size=60)


@FUZZ
@given(slot=st.sampled_from(ALL_SLOTS), value=TEXT)
def test_arbitrary_text_as_a_property_value(slot: tuple[str, str], value: str):
    check(slot[1].replace("{v}", value))


# --------------------------------------------------------------------------- (b) structured values

WORDS = st.sampled_from([
    "ds", "id", "a", "b", "x", "true", "false", "TRUE", "null", "select", "from", "when", "matched", "then",
    "update", "set", "insert", "delete", "not", "and", "or", "FULL", "VIEW", "SEED", "INCREMENTAL_BY_TIME_RANGE",
    "SCD_TYPE_2", "TIMESTAMP", "DATE", "INT", "STRING", "daily", "hour", "day", "@daily", "@start_ds", "@this_model",
    "source", "target", "target.x", "source.x", "spark", "duckdb", "UTC", "Europe/Berlin", "*", "%Y-%m-%d",
])
IDENT = st.one_of(WORDS, st.from_regex(r"[A-Za-z_][A-Za-z0-9_$]{0,8}", fullmatch=True))
QUOTABLE = st.text(
    alphabet=st.one_of(
        st.sampled_from("'\"`\\%-/*;()\n ab09é漢🙂\x00\u2028"), st.characters(exclude_categories=("Cs",))
    ),
    max_size=16,
)


def _quote(pair: tuple[str, str]) -> str:
    """A string literal in one of several spellings, escaped or deliberately not."""
    style, s = pair
    if style == "single":
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if style == "single-doubled":
        return "'" + s.replace("'", "''") + "'"
    if style == "double":
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if style == "backtick":
        return "`" + s.replace("`", "``") + "`"
    if style == "raw":
        return "r'" + s.replace("'", "") + "'"
    return "'" + s + "'"  # unescaped: may well be malformed


QUOTE_STYLES = st.sampled_from(["single", "single-doubled", "double", "backtick", "raw", "unescaped"])
STRING = st.tuples(QUOTE_STYLES, QUOTABLE).map(_quote)
NUMBER = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.from_regex(r"-?[0-9]{1,25}(\.[0-9]{0,5})?([eE][+-]?[0-9]{1,4})?[LSYDlsyd]?", fullmatch=True),
    st.sampled_from(["0", "1", "-1", "7", "1BD", "0x1F", ".5", "1.", "1e", "00012"]),
)
TYPED = st.tuples(st.sampled_from(["TIMESTAMP", "DATE", "INTERVAL", "X"]), STRING).map(" ".join)
CRON_FIELD = st.one_of(
    st.sampled_from(["*", "?", "L", "W", "1W", "L-2", "5L", "1#5", "2#6", "*/0", "*/7", "1-3", "3-1", "1,2",
                     "MON", "FRI-MON", "JAN", "H", "R", "0-59/15", "1-31/30"]),
    st.integers(0, 61).map(str),
)
#: Values aimed at the readers behind the string properties: cron, start/end, cron_tz, dialect, formats.
SPECIAL = st.one_of(
    st.lists(CRON_FIELD, min_size=1, max_size=6).map(" ".join),
    st.sampled_from(["@daily", "@weekly", "@monthly", "@yearly", "@hourly", "@reboot", "@every 5m"]),
    st.tuples(st.integers(0, 10**13), st.sampled_from(["minute", "hours", "day", "weeks", "years"])).map(
        lambda t: f"{t[0]} {t[1]} ago"
    ),
    st.tuples(st.integers(0, 10000), st.integers(0, 13), st.integers(0, 32), st.sampled_from(
        ["", "T00:00:00", " 23:59:59.999", "T12:00:00Z", "T00:00:00+14:00", "T25:00", "+01:00"])).map(
        lambda t: f"{t[0]:04d}-{t[1]:02d}-{t[2]:02d}{t[3]}"
    ),
    st.sampled_from(["UTC", "America", "Etc", "America/Argentina", "Europe/", "/UTC", "..", "posixrules",
                     "iso3166.tab", "Factory", "a" * 300, "spark", "duckdb, normalization_strategy = x", "",
                     "%Y-%m-%d", "yyyy-MM-dd", "%", "%Y%", "%q", "HH:mm", "TIMESTAMP", "DECIMAL(38, 9)"]),
)
ATOM = st.one_of(
    IDENT,
    st.lists(IDENT, min_size=2, max_size=3).map(".".join),
    STRING,
    NUMBER,
    TYPED,
    SPECIAL.map(lambda v: "'" + v + "'"),
    st.integers(4290, 4310).map(lambda n: "1" * n),
)
COMMENT_TEXT = st.text(alphabet=st.sampled_from("abc -*/'\"()é;"), max_size=10)


def _compound(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    items = st.lists(children, max_size=4)
    sep = st.sampled_from([", ", ",", " , ", ",\n"])
    trailing = st.sampled_from(["", ","])
    return st.one_of(
        st.tuples(items, sep, trailing).map(lambda t: "(" + t[1].join(t[0]) + t[2] + ")"),
        st.tuples(items, sep, trailing).map(lambda t: "[" + t[1].join(t[0]) + t[2] + "]"),
        st.tuples(children, st.sampled_from([" = ", "=", " := ", ":=", " => ", " "]), children).map("".join),
        st.tuples(IDENT, items).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.tuples(COMMENT_TEXT.map(lambda c: c.replace("*/", "")), children).map(lambda t: f"/* {t[0]} */ {t[1]}"),
        st.tuples(children, COMMENT_TEXT).map(lambda t: f"{t[0]} -- {t[1]}\n"),
        st.tuples(st.sampled_from(["-", "NOT ", "+"]), children).map("".join),
    )


VALUE = st.recursive(ATOM, _compound, max_leaves=16)
#: Deep nesting, which breaks recursive-descent parsers (hypothesis itself raises the recursion limit).
NESTED = st.tuples(st.integers(0, 300), st.sampled_from("([{"), ATOM).map(
    lambda t: t[1] * t[0] + t[2] + {"(": ")", "[": "]", "{": "}"}[t[1]] * t[0]
)


@FUZZ
@given(slot=st.sampled_from(ALL_SLOTS), value=st.one_of(ATOM, VALUE, VALUE, NESTED))
def test_structured_value_as_a_property_value(slot: tuple[str, str], value: str):
    check(slot[1].replace("{v}", value))


#: Slots whose value is read as a string and then interpreted (time, cron, zone, dialect, type, format).
STRING_SLOTS = [s for s in ALL_SLOTS if s[0].split(".")[-1] in (
    "start", "end", "cron", "cron_tz", "interval_unit", "dialect", "time_data_type", "path", "storage_format",
)] + [("INCREMENTAL_BY_TIME_RANGE.time_column format",
       "MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column (ds, {v}))); " + QUERY)]


@FUZZ
@given(slot=st.sampled_from(STRING_SLOTS), value=st.one_of(SPECIAL, STRING.map(lambda q: q[1:-1])))
def test_interpreted_string_as_a_property_value(slot: tuple[str, str], value: str):
    check(slot[1].replace("{v}", _quote(("single", value))))


# --------------------------------------------------------------------------- (c) whole definitions

TOKENS = st.one_of(
    st.sampled_from([
        "(", ")", "(", ")", ",", ",", ";", "=", ":=", "[", "]", "{", "}", ".", "*", "@", "--\n", "/*", "*/", "/**/",
        "name", "a.b", "kind", "FULL", "VIEW", "SEED", "EXTERNAL", "EMBEDDED", "INCREMENTAL_BY_TIME_RANGE",
        "INCREMENTAL_BY_UNIQUE_KEY", "INCREMENTAL_BY_CURSOR", "SCD_TYPE_2_BY_COLUMN", "time_column", "unique_key",
        "dialect", "duckdb", "bigquery", "tsql", "start", "'2024-01-01'", "cron", "'@hourly'", "grain", "audits",
        "name a.b,", "kind FULL", "kind INCREMENTAL_BY_TIME_RANGE (time_column ds)", "dialect duckdb,",
        ");", ") SELECT 1 AS x", "); SELECT ds FROM raw.t", "SELECT", "FROM", "WHERE", "WITH", "AS", "JOIN", "ON",
        "UNION", "GROUP BY", "@start_ds", "@end_ts", "@this_model", "@DEF(x, 1);", "@DEF", "@VAR('v')",
        "@VAR('v', 1)", "@x", "@unknown", "$1", "?", "'", '"', "`", "\\", "'\\'", "x::INT", "CAST(x AS INT)",
        "MODEL", "MODEL (", "\u00a0", "\x00", "漢字", "🙂",
    ]),
    ATOM,
)
SEPARATOR = st.sampled_from([" ", " ", "", "\n", "\t", " -- c\n", " /* c */ "])


#: Dialects the query may be written in (sqlglot's), and a few that do not exist.
DIALECTS = st.sampled_from(["spark", "duckdb", "postgres", "bigquery", "snowflake", "tsql", "mysql", "trino",
                            "clickhouse", "oracle", "hive", "databricks", "nope", "'spark'"])
#: ``MODEL (`` and random tokens, or a valid block in some dialect followed by random tokens.
DEFINITION = st.one_of(
    st.lists(st.tuples(SEPARATOR, TOKENS), max_size=40).map(lambda ts: "MODEL (" + "".join(a + b for a, b in ts)),
    st.tuples(DIALECTS, st.lists(st.tuples(SEPARATOR, TOKENS), max_size=30)).map(
        lambda t: f"MODEL (name a.b, kind FULL, dialect {t[0]}); SELECT " + "".join(a + b for a, b in t[1])
    ),
)


@FUZZ
@given(text=DEFINITION)
def test_arbitrary_definition_text(text: str):
    check(text)


# --------------------------------------------------------------------------- (d) fingerprints

BLOCKS = [
    "MODEL (name shop.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, batch_size 3), start '2024-01-01')",
    "MODEL (name shop.full, kind FULL, cron '@hourly', grain (ds, id))",
    "MODEL (name shop.keyed, kind INCREMENTAL_BY_UNIQUE_KEY (unique_key (id, ds)))",
    "MODEL (name shop.hist, kind SCD_TYPE_2 (unique_key id))",
    "MODEL (name shop.v)",
]
QUERIES = [
    "SELECT ds, id, SUM(amount) AS total FROM raw.sales WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds, id",
    "WITH base AS (SELECT id, ds, amount FROM raw.sales WHERE amount > 0) "
    "SELECT b.ds, b.id, COUNT(*) AS n FROM base AS b JOIN raw.shops AS s ON b.id = s.id GROUP BY b.ds, b.id",
    "SELECT id, ds, CASE WHEN amount IS NULL THEN 'n/a; -- not a comment' ELSE 'ok' END AS status, "
    "amount::DOUBLE AS amount, updated_at FROM raw.sales WHERE ds >= @start_date AND ds < @end_date",
    "SELECT ds, id, ROW_NUMBER() OVER (PARTITION BY id ORDER BY ds DESC) AS rn FROM raw.events "
    "WHERE NOT ds IN (SELECT ds FROM raw.holidays) UNION ALL SELECT ds, id, 0 AS rn FROM raw.extra",
    "@DEF(factor, 2); SELECT id, ds, amount * @factor AS doubled, @VAR('region', 'eu') AS region "
    "FROM raw.sales WHERE ds BETWEEN @start_ds AND @end_ds ORDER BY id LIMIT 10",
]
_UNITS = {TokenType.VAR, TokenType.IDENTIFIER, TokenType.STRING, TokenType.NUMBER, TokenType.PARAMETER}


def _reformat(query: str, draw) -> str:
    """``query`` with random whitespace and comments between tokens, and random case of keywords,
    macro names (``@START_DS``) and function names (``Sum(...)``), all case-insensitive.

    ``@name``, dotted names and ``::`` stay glued; hints (``/*+``) are never produced. Identifier
    case is left alone: the normalized query keeps it.
    """
    tokens = Dialect.get_or_raise("spark").tokenize(query)
    out = []
    for i, token in enumerate(tokens):
        text = query[token.start : token.end + 1]
        keyword = token.token_type not in _UNITS and text.isalpha()
        macro = i > 0 and tokens[i - 1].text == "@"
        function = i + 1 < len(tokens) and tokens[i + 1].text == "(" and token.token_type == TokenType.VAR
        if keyword or macro or function:
            text = "".join(draw(st.sampled_from([c.lower(), c.upper()])) for c in text)
        glued = i > 0 and (
            tokens[i - 1].end + 1 == token.start
            and (tokens[i - 1].text in ("@", ".", "::") or token.text in (".", "::", "(") or tokens[i - 1].text == "(")
        )
        if i and not glued:
            out.append(draw(st.sampled_from([
                " ", "  ", "\n", "\n\t  ", " /* note */ ", "/* x */", " -- comment ; ' \"\n", "\r\n",
            ])))
        out.append(text)
    lead = draw(st.sampled_from(["", "\n", "-- leading comment\n", "/* lead */ "]))
    tail = draw(st.sampled_from(["", "\n", " -- trailing", ";", " ;\n-- done\n"]))
    return lead + "".join(out) + tail


@FUZZ
@given(block=st.sampled_from(BLOCKS), query=st.sampled_from(QUERIES), data=st.data())
def test_reformatting_a_query_keeps_the_data_hash(block: str, query: str, data):
    original = parse_model(f"{block}; {query}")
    reformatted_text = _reformat(query, data.draw)
    reformatted = parse_model(f"{block}\n{reformatted_text}")
    assert reformatted.query == original.query, reformatted_text
    assert reformatted == original, reformatted_text
    assert data_hash(reformatted) == data_hash(original), reformatted_text
    assert metadata_hash(reformatted) == metadata_hash(original), reformatted_text


def _string_literal(value: str) -> str:
    return exp.Literal.string(value).sql("spark")


@FUZZ
@given(
    block=st.sampled_from(BLOCKS),
    query=st.sampled_from(QUERIES),
    first=st.text(alphabet=CHARS, max_size=40),
    second=st.text(alphabet=CHARS, max_size=40),
)
def test_description_changes_the_metadata_hash_only(block: str, query: str, first: str, second: str):
    def with_description(description: str) -> Model:
        return parse_model(f"{block[:-1]}, description {_string_literal(description)}); {query}")

    a, b = with_description(first), with_description(second)
    assert (a.description, b.description) == (first, second)
    assert data_hash(a) == data_hash(b) == data_hash(parse_model(f"{block}; {query}"))
    assert (metadata_hash(a) == metadata_hash(b)) == (first == second)
