"""Hostile input never executes (issue 8, item 4).

Identifiers and values in CALL arguments and MODEL definitions never reach SQL
unquoted: quotes, backticks, ``; DROP TABLE``, comment markers, newlines,
control characters and unicode are either handled correctly (odd-but-valid names
and texts round-trip) or refused with a clear pyspark-incr error. A canary table
that every injection attempt tries to drop or write to must survive unchanged,
and no table or schema other than the expected ones may appear.
"""

from __future__ import annotations

import re
import pytest
from pyspark.errors import IllegalArgumentException

from conftest import call as _call
from pyspark_incr.procedures import REGISTRY, load_all
from pyspark_incr.sqltext import call_sql

#: The table every injection attempt targets.
CANARY_SCHEMA = "hostile_canary"
CANARY = f"{CANARY_SCHEMA}.victim"
CANARY_ROWS = [(1, "a"), (2, "b'c"), (3, "d`e")]

#: Hostile names and values; ``{canary}`` stands for the canary table.
HOSTILE = [
    "'", '"', "`", "''", "it's", 'say "hi"', "a`b", "``",
    "'; DROP TABLE {canary}; --",
    "`; DROP TABLE {canary}; --",
    '"; DROP TABLE {canary}; --',
    "x'); DROP TABLE {canary}; --",
    "x'); INSERT INTO {canary} VALUES (666, 'pwned'); --",
    "prod; DROP TABLE {canary}",
    "s.t; DROP TABLE {canary}",
    "' OR '1'='1",
    "/* comment */", "a/*", "*/ DROP TABLE {canary} /*", "-- comment", "a -- b", "a--b", "#", "a;b",
    "line1\nline2", "\nDROP TABLE {canary}", "a\rb", "a\tb", "\r\n", "nul\x00byte", "\x01\x07\x1b[31mred",
    "é", "日本語", "🔥💧", "\u200f", "a\u200bb", "\u202eevil", "\ufeffbom",
    "${canary}", "${spark.incr.stateSchema}", "${jndi:ldap://x/}", "@start_ds", "@{start_ds}", "@DEF(x, 1)",
    "\\", "a\\'b", "\\'; DROP TABLE {canary}; --", "\\\\", "\\u0027",
    "x" * 5000,
    "%s %d %(x)s", "{} {0} {name}",
    "SELECT", "DROP", "NULL", "null", "", " ", "*", "tag:'; DROP TABLE {canary}; --", "+{canary}+",
    "../../etc/passwd", "/dev/null",
]


def hostile(template: str) -> str:
    return template.replace("{canary}", CANARY)


def _ident(value: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", value.encode("unicode_escape").decode().lower())[:20] or "x"


IDS = [f"{i:02d}_{_ident(v)}" for i, v in enumerate(HOSTILE)]


def spark_literal(value: str) -> str:
    """``value`` as a Spark SQL string literal, escaped by hand (as a user would), not by the library."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


# -- canary and checks ---------------------------------------------------------------------------


def canary_rows(spark) -> list[tuple]:
    return sorted(tuple(r) for r in spark.table(CANARY).collect())


def schemas(spark) -> set[str]:
    return {r[0] for r in spark.sql("SHOW DATABASES").collect()}


def snapshot(spark, prefix: str) -> tuple[set[str], set[str]]:
    """Schemas that exist, and the tables of every schema this module may touch."""
    mine = {s for s in schemas(spark) if s.startswith(prefix) or s == CANARY_SCHEMA}
    tables = {f"{s}.{t.name}" for s in mine for t in spark.catalog.listTables(s)}
    return schemas(spark), tables


def assert_canary(spark) -> None:
    assert spark.catalog.tableExists(CANARY), f"{CANARY} was dropped"
    assert canary_rows(spark) == sorted(CANARY_ROWS), f"{CANARY} was written to"


def assert_clear_error(error: BaseException, *context: str) -> None:
    """A pyspark-incr error (IllegalArgumentException from the shim), not an internal error or a SQL
    parse error from SQL pyspark-incr generated."""
    message = str(error)
    assert isinstance(error, IllegalArgumentException), f"{type(error).__name__}: {message}"
    assert error.getCondition().startswith("INCR_") and error.getCondition() != "INCR_INTERNAL_ERROR", message
    assert "PARSE_SYNTAX_ERROR" not in message and "ParseException" not in message, message
    if context:
        assert any(c in message for c in context), f"none of {context} in: {message}"


@pytest.fixture(scope="module")
def baseline(spark, module_isolated):
    """A canary table and a registered, applied model (with an audit) every hostile call could damage."""
    prefix = module_isolated
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {CANARY_SCHEMA}")
    spark.sql(f"DROP TABLE IF EXISTS {CANARY}")
    spark.sql(f"CREATE TABLE {CANARY} (id INT, v STRING) USING parquet")
    spark.sql(f"INSERT INTO {CANARY} VALUES " + ", ".join(f"({i}, {spark_literal(v)})" for i, v in CANARY_ROWS))
    _call(spark, "create_model", definition=(
        f"MODEL (name {prefix}.ok, kind FULL, audits (not_null(columns := (id)))); "
        "SELECT CAST(id AS INT) AS id, DATE'2024-01-01' AS ds FROM range(3)"
    ))
    _call(spark, "apply", execution_time="2024-01-02")
    assert_canary(spark)
    return prefix


# -- every string argument of every procedure --------------------------------------------------------

load_all()
STRING_PARAMS = sorted((name, p.name) for name, spec in REGISTRY.items() for p in spec.params if p.type == "string")
#: Where each parameter name gets every hostile value, written both by call_sql and by hand: the cheapest
#: procedure taking it (the value is read by the same code wherever it is passed).
_PREFERRED = ("plan", "explain", "status", "history", "create_model", "drop_model", "janitor", "audit")
CANONICAL = {}
for _proc in (*_PREFERRED, *sorted(REGISTRY)):
    for _p in REGISTRY[_proc].params:
        if _p.type == "string":
            CANONICAL.setdefault(_p.name, _proc)
#: Everywhere else: the sharpest values (injections, quotes, comments, newline, NUL, unicode, length).
SHARP = [hostile(t) for t in HOSTILE if t in {
    "'", "`", "'; DROP TABLE {canary}; --", "`; DROP TABLE {canary}; --", '"; DROP TABLE {canary}; --',
    "x'); INSERT INTO {canary} VALUES (666, 'pwned'); --", "/* comment */", "line1\nline2", "nul\x00byte",
    "日本語", "\\'; DROP TABLE {canary}; --", "x" * 5000, "${spark.incr.stateSchema}",
}]


def test_value_lists_are_long_enough():
    assert len(HOSTILE) >= 40 and len(set(HOSTILE)) == len(HOSTILE)
    assert len(SHARP) == 13
    assert set(CANONICAL) == {p for _, p in STRING_PARAMS}


@pytest.mark.parametrize("procedure,param", STRING_PARAMS, ids=[f"{a}.{b}" for a, b in STRING_PARAMS])
def test_every_string_argument_is_handled_or_refused(spark, baseline, procedure, param):
    """Each hostile value in each string argument: handled (the call succeeds) or refused by pyspark-incr."""
    canonical = CANONICAL[param] == procedure
    before = snapshot(spark, baseline)
    required = {p.name: "x" for p in REGISTRY[procedure].params if p.required and p.name != param}
    if "model" in required:
        required["model"] = f"{baseline}.ok"
    outcomes, unclear = {}, []
    for value in [hostile(t) for t in HOSTILE] if canonical else SHARP:
        args = {**required, param: value}
        statements = [call_sql(procedure, **args)]
        if canonical and value in SHARP:
            # also as a user writes it by hand
            named = ", ".join(f"{k} => {spark_literal(v)}" for k, v in args.items())
            statements.append(f"CALL incr.{procedure}({named})")
        for statement in statements:
            try:
                spark.sql(statement).collect()
                outcomes[value] = "ok"
            except Exception as e:  # noqa: BLE001 - classified below
                try:
                    assert_clear_error(e)
                except AssertionError as bad:
                    unclear.append(f"{param} => {value[:60]!r}: {str(bad)[:300]}")
                outcomes[value] = str(e)
        assert spark.catalog.tableExists(CANARY), f"{CANARY} dropped by {param} => {value!r}"
    assert not unclear, "\n".join(unclear)
    assert_canary(spark)
    if procedure in ("create_model", "drop_model"):
        return
    after = snapshot(spark, baseline)
    if param == "env" and procedure in ("apply", "run", "restate"):
        # a valid environment name gets its schema of views: nothing else
        envs = {s for s in after[0] - before[0] if re.fullmatch(re.escape(baseline) + r"__\w+", s)}
        after = (after[0] - envs, {t for t in after[1] if t.split(".")[0] not in envs})
    assert after == before


# -- MODEL properties: odd but valid values round-trip ----------------------------------------------

#: Odd column names, each with a hostile description: (column, description).
ODD_COLUMNS = [
    ("it's", "desc with ' quote"),
    ("a`b", "tick ` and \"double\""),
    ("日本", "nihon 🔥 é \u200b"),
    ("sp ace", "-- not a comment"),
    ("semi;colon", "/* not */ '; DROP TABLE {canary}; --"),
    ("--dash", "\\ backslash \\' and \\n"),
    ("/*", "line1\nline2\ttab"),
]
DESCRIPTION = "It's \"quoted\" `tick`; DROP TABLE {canary}; -- /* c */ é 日本 🔥 \\ back\nsecond line ${x} @start_ds %s {}"
OWNER = "o'wner\"; DROP TABLE {canary}; --"
TAGS = ("t'1", "é", "日本", "; DROP TABLE {canary}; --", "/*")
PROPERTIES = {"k'ey; DROP": "v'al; DROP TABLE {canary}; --", "hostile.uni": "日本 🔥 \\"}


def sql_string(value: str) -> str:
    """A Spark string literal as a model author writes it (``\\'`` for a quote, ``\\\\`` for a backslash)."""
    return spark_literal(hostile(value))


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def odd_definition(name: str, description: str, columns: list[tuple[str, str]]) -> str:
    described = ", ".join(f"{quoted(c)} = {sql_string(d)}" for c, d in columns)
    selected = ", ".join(f"{sql_string(d)} AS {quoted(c)}" for c, d in columns)
    props = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in PROPERTIES.items())
    return (
        f"MODEL (\n  name {name},\n  kind FULL,\n  description {sql_string(description)},\n"
        f"  owner {sql_string(OWNER)},\n  tags ({', '.join(sql_string(t) for t in TAGS)}),\n"
        f"  terms ({sql_string('a`b')}),\n  column_descriptions ({described}),\n"
        f"  column_tags ({quoted(columns[0][0])} = ('pii', {sql_string(TAGS[0])})),\n"
        f"  physical_properties ({props}),\n  grain ({quoted(columns[0][0])}, {quoted(columns[1][0])}),\n"
        f"  audits (not_null(columns := ({', '.join(quoted(c) for c, _ in columns)})),\n"
        f"          accepted_values(column := {quoted(columns[0][0])}, is_in := ({sql_string(columns[0][1])}, "
        f"{sql_string(TAGS[3])})))\n);\n"
        f"SELECT {selected} -- trailing comment; DROP TABLE {CANARY}\n"
    )


def table_properties(spark, name: str) -> dict[str, str]:
    return {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}


def assert_documented(spark, name: str, description: str, columns: list[tuple[str, str]], is_view: bool) -> None:
    df = spark.table(name)
    assert df.columns == [c for c, _ in columns]
    assert [tuple(r) for r in df.collect()] == [tuple(hostile(d) for _, d in columns)]
    db, _, table = name.replace("`", "").partition(".")
    assert spark.catalog.getTable(f"{db}.{table}").description == hostile(description)
    comments = {c.name: c.description for c in spark.catalog.listColumns(table, db)}
    assert comments == {c: hostile(d) for c, d in columns}
    props = table_properties(spark, name)
    assert props["incr.owner"] == hostile(OWNER)
    assert props["incr.tags"] == ",".join(hostile(t) for t in TAGS)
    assert props["incr.terms"] == "a`b"
    if not is_view:
        for k, v in PROPERTIES.items():
            assert props[hostile(k)] == hostile(v)


def test_odd_but_valid_model_properties_round_trip(spark, baseline):
    """Quotes, backticks, comment markers, ';', newlines and unicode in column names, descriptions, owner,
    tags, terms, column tags, physical properties, grain and audit arguments reach the catalog verbatim."""
    from conftest import physical

    name = f"{baseline}.odd"
    before = snapshot(spark, baseline)
    _call(spark, "create_model", definition=odd_definition(name, DESCRIPTION, ODD_COLUMNS))
    rows = _call(spark, "apply", select=name, execution_time="2024-01-02")
    assert {r.status for r in rows} == {"ok"}, rows
    assert_canary(spark)
    table = physical(spark, name)
    assert_documented(spark, name, DESCRIPTION, ODD_COLUMNS, is_view=True)
    assert_documented(spark, table, DESCRIPTION, ODD_COLUMNS, is_view=False)
    audits = _call(spark, "audit", model=name)
    assert {(r.status, r.bad_rows) for r in audits} == {("ok", 0)}, audits

    # a metadata-only change updates the comments and properties in place (ALTER ... COMMENT, SET TBLPROPERTIES)
    changed = [(c, d + " \\' changed; DROP TABLE {canary}; --") for c, d in ODD_COLUMNS]
    description = DESCRIPTION + " `changed`'"
    _call(spark, "create_model", definition=odd_definition(name, description, changed).replace(
        "SELECT " + ", ".join(f"{sql_string(d)} AS {quoted(c)}" for c, d in changed),
        "SELECT " + ", ".join(f"{sql_string(d)} AS {quoted(c)}" for c, d in ODD_COLUMNS)))
    plan = _call(spark, "plan", select=name)
    assert [r.change for r in plan] == ["metadata"], plan
    rows = _call(spark, "apply", select=name, execution_time="2024-01-02")
    assert {r.status for r in rows} <= {"ok"}, rows
    assert physical(spark, name) == table
    for shown in (name, table):
        db, _, t = shown.replace("`", "").partition(".")
        comments = {c.name: c.description for c in spark.catalog.listColumns(t, db)}
        assert comments == {c: hostile(d) for c, d in changed}, shown
        assert spark.catalog.getTable(f"{db}.{t}").description == hostile(description), shown
    assert [tuple(r) for r in spark.table(name).collect()] == [tuple(hostile(d) for _, d in ODD_COLUMNS)]
    assert_canary(spark)
    after = snapshot(spark, baseline)
    assert after[0] == before[0]
    assert after[1] - before[1] == {name, table.replace("`", "")}


def test_odd_time_column_format_and_audit_arguments(spark, baseline):
    """A time-sliced model with a time format holding a quote and an injection, and audit arguments holding
    injections: built, audited, explained, restated. (A time column named with ';' or spaces is refused:
    see REFUSED.)"""
    name = f"{baseline}.odd_time"
    column, fmt = "ds", "%Y-%m-%d'; DROP TABLE {canary}; --"
    values = [("a'b", "2024-01-01"), ("; DROP TABLE {canary}; --", "2024-01-02"), ("é `x`", "2024-01-02")]
    rows = ", ".join(f"({sql_string(v)}, {sql_string(d + hostile(fmt)[8:])})" for v, d in values)
    definition = (
        f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column ({quoted(column)}, {sql_string(fmt)})),\n"
        f"  start '2024-01-01', cron '@daily', description {sql_string(DESCRIPTION)},\n"
        f"  audits (not_null(columns := (`it's`, {quoted(column)})),\n"
        f"          accepted_values(column := `it's`, is_in := ({', '.join(sql_string(v) for v, _ in values)})),\n"
        f"          unique_combination_of_columns(columns := (`it's`, {quoted(column)}))));\n"
        f"SELECT `it's`, {quoted(column)} FROM VALUES {rows} AS t(`it's`, {quoted(column)})\n"
        f"WHERE LEFT({quoted(column)}, 10) BETWEEN @start_ds AND @end_ds"
    )
    created = _call(spark, "create_model", definition=definition)
    assert [r.status for r in created] == ["created"]
    built = _call(spark, "apply", select=name, execution_time="2024-01-03")
    assert {r.status for r in built} == {"ok"}, [(r.start, r.status, r.message) for r in built]
    assert_canary(spark)
    got = sorted(tuple(r) for r in spark.table(name).collect())
    assert got == sorted((hostile(v), d + hostile(fmt)[8:]) for v, d in values)
    audits = _call(spark, "audit", model=name)
    assert {(r.status, r.bad_rows) for r in audits} == {("ok", 0)}, audits
    assert _call(spark, "explain", model=name, execution_time="2024-01-03")
    restated = _call(spark, "restate", model=name, start="2024-01-02", end="2024-01-02", execution_time="2024-01-03")
    assert {r.status for r in restated} == {"ok"}, restated
    assert sorted(tuple(r) for r in spark.table(name).collect()) == got
    assert_canary(spark)


# -- MODEL properties: hostile values that cannot stand are refused clearly ----------------------------

#: (definition with {p} for the schema prefix, fragments one of which the error must hold)
REFUSED = [
    ("MODEL (name {p}.`t; DROP TABLE {canary}; --`, kind FULL); SELECT 1 AS a", "may only hold|must be schema.table"),
    ("MODEL (name {p}.`t--x`, kind FULL); SELECT 1 AS a", "may only hold|must be schema.table"),
    ("MODEL (name {p}.`t/*x*/`, kind FULL); SELECT 1 AS a", "may only hold|must be schema.table"),
    ("MODEL (name {p}.`it's`, kind FULL); SELECT 1 AS a", "may only hold|must be schema.table"),
    ("MODEL (name {p}.`a``b`, kind FULL); SELECT 1 AS a", "may only hold|must be schema.table"),
    ("MODEL (name {p}.`日本`, kind FULL); SELECT 1 AS a", "may only hold|must be schema.table"),
    ("MODEL (name {p}.`new\nline`, kind FULL); SELECT 1 AS a", "may only hold|must be schema.table"),
    ("MODEL (name `{p}; DROP TABLE {canary}`.t, kind FULL); SELECT 1 AS a", "may only hold|must be schema.table"),
    ("MODEL (name '{p}.t; DROP TABLE {canary}', kind FULL); SELECT 1 AS a", "must be schema.table"),
    ("MODEL (name {p}.t, kind FULL; DROP TABLE {canary}); SELECT 1 AS a", "model"),
    ("MODEL (name {p}.t, kind `FULL; DROP TABLE {canary}`); SELECT 1 AS a", "kind"),
    ("MODEL (name {p}.t, kind FULL, cron '@daily\\'; DROP TABLE {canary}; --'); SELECT 1 AS a", "cron"),
    ("MODEL (name {p}.t, kind FULL, cron_tz 'UTC; DROP TABLE {canary}'); SELECT 1 AS a", "cron_tz"),
    ("MODEL (name {p}.t, kind FULL, dialect 'spark; DROP TABLE {canary}'); SELECT 1 AS a", "dialect"),
    ("MODEL (name {p}.t, kind FULL, start '2024-01-01\\'; DROP TABLE {canary}; --'); SELECT 1 AS a", "start"),
    ("MODEL (name {p}.t, kind FULL, end '2024-01-01 -- x'); SELECT 1 AS a", "end"),
    ("MODEL (name {p}.t, kind FULL, interval_unit 'day; DROP TABLE {canary}'); SELECT 1 AS a", "interval_unit"),
    ("MODEL (name {p}.t, kind FULL, week_start 'monday/*'); SELECT 1 AS a", "week_start"),
    ("MODEL (name {p}.t, kind FULL, table_format 'parquet; DROP TABLE {canary}'); SELECT 1 AS a", "table_format"),
    ("MODEL (name {p}.t, kind FULL, columns (a INT) ; DROP TABLE {canary}); SELECT 1 AS a", "model"),
    ("MODEL (name {p}.t, kind FULL, partitioned_by ('; DROP TABLE {canary}; --')); SELECT 1 AS a", "partitioned_by"),
    ("MODEL (name {p}.t, kind FULL, grain ('a\\'; DROP TABLE {canary}')); SELECT 1 AS a", "grain"),
    ("MODEL (name {p}.t, kind FULL, tags (upper('x'))); SELECT 1 AS a", "tags"),
    ("MODEL (name {p}.t, kind FULL, physical_properties (k = concat('a', 'b'))); SELECT 1 AS a", "physical_properties"),
    ("MODEL (name {p}.t, kind FULL, audits ('; DROP TABLE {canary}; --')); SELECT 1 AS a", "audits"),
    ("MODEL (name {p}.t, kind FULL, audits (`drop table {canary}`)); SELECT 1 AS a", "audit"),
    ("MODEL (name {p}.t, kind FULL, safety_overrides ('; DROP TABLE {canary}')); SELECT 1 AS a", "safety override"),
    ("MODEL (name {p}.t, kind FULL, description 'unclosed); SELECT 1 AS a", "model definition"),
    ("MODEL (name {p}.t, kind FULL, description \"it's\" \"; DROP TABLE {canary}\"); SELECT 1 AS a", "description"),
    ("MODEL (name {p}.t, kind FULL, `owner; DROP TABLE {canary}` 'x'); SELECT 1 AS a", "unknown MODEL property"),
    ("MODEL (name {p}.t, kind INCREMENTAL_BY_TIME_RANGE (time_column '; DROP TABLE {canary}')); SELECT 1 AS a",
     "time_column"),
    ("MODEL (name {p}.t, kind INCREMENTAL_BY_TIME_RANGE (time_column `d;s -- x`), start '2024-01-01'); "
     "SELECT `d;s -- x` FROM VALUES (DATE'2024-01-01') AS v(`d;s -- x`) WHERE `d;s -- x` BETWEEN @start_ds AND @end_ds",
     "partition column 'd;s -- x' may only hold"),
    ("MODEL (name {p}.t, kind FULL, partitioned_by (`a b`)); SELECT 1 AS `a b`", "partition column"),
    ("MODEL (name {p}.t, kind INCREMENTAL_BY_TIME_RANGE (time_column (ds, '%Q; DROP TABLE {canary}'))); "
     "SELECT DATE'2024-01-01' AS ds", "time format"),
    ("MODEL (name {p}.t, kind INCREMENTAL_BY_UNIQUE_KEY (unique_key ('; DROP TABLE {canary}'))); SELECT 1 AS a",
     "unique_key"),
    ("MODEL (name {p}.t, kind INCREMENTAL_BY_UNIQUE_KEY (unique_key a, merge_filter 1 = 1; DROP TABLE {canary}));"
     " SELECT 1 AS a", "model"),
    ("MODEL (name {p}.t, kind SEED (path '../x\\'; DROP TABLE {canary}; --.csv'))", "seed file"),
    # Statements after the query are SQLMesh's post-statements, run as written; those writing the model's own
    # table would falsify its recorded intervals and are refused.
    ("MODEL (name {p}.t, kind FULL); SELECT 1 AS a; DROP TABLE @this_model", "model"),
    ("MODEL (name {p}.t, kind FULL); SELECT 1 AS a; INSERT INTO @this_model VALUES (666)", "model"),
    ("MODEL (name {p}.t, kind FULL); DROP TABLE {canary}", "model"),
    ("MODEL (name {p}.t, kind FULL); SELECT 1 AS a /* unclosed", "model"),
    ("MODEL (name {p}.t, kind FULL); SELECT '$\\{x}' AS a FROM `{canary}; DROP TABLE x`", "model"),
]


@pytest.mark.parametrize("template,fragment", REFUSED, ids=[f"{i:02d}" for i in range(len(REFUSED))])
def test_hostile_model_property_is_refused_clearly(spark, baseline, template, fragment):
    """Refused when the model is registered, or at the latest by incr.plan (a SEED's file is read there):
    the error names the model or the property, and nothing is built."""
    from conftest import state_rows

    definition = hostile(template.replace("{p}", baseline))
    before = snapshot(spark, baseline)
    rows = state_rows(spark, baseline)
    try:
        with pytest.raises(Exception) as info:
            _call(spark, "create_model", definition=definition)
            assert state_rows(spark, baseline) != rows  # registered: then planning it must refuse it
            _call(spark, "plan", select=f"{baseline}.t")
        assert_clear_error(info.value, *fragment.split("|"))
        assert_canary(spark)
        assert snapshot(spark, baseline) == before
    finally:
        if state_rows(spark, baseline) != rows:
            _call(spark, "drop_model", name=f"{baseline}.t")


# -- a project directory with hostile file names and content -----------------------------------------


def test_project_directory_with_hostile_names_and_content(spark, baseline, tmp_path):
    """A project path and model file names holding quotes, ';' and unicode; a model file whose texts are
    hostile (handled), and one whose name is (refused, naming the file)."""
    root = tmp_path / "proj 'x\"; DROP TABLE y; -- 日本"
    (root / "models").mkdir(parents=True)
    name = f"{baseline}.from_project"
    good = root / "models" / "it's; DROP TABLE x; --.sql"
    good.write_text(
        f"MODEL (name {name}, kind FULL, description {sql_string(DESCRIPTION)}, owner {sql_string(OWNER)},\n"
        f"  column_descriptions (`a;b` = {sql_string(ODD_COLUMNS[4][1])}));\n"
        f"SELECT {sql_string(ODD_COLUMNS[5][1])} AS `a;b` -- ${{env:HOME}} ; DROP TABLE {CANARY}\n",
        encoding="utf-8",
    )
    plan = _call(spark, "plan", project=str(root), select=name)
    assert [(r.model, r.change) for r in plan] == [(name, "added")]
    built = _call(spark, "apply", project=str(root), select=name, execution_time="2024-01-02")
    assert {r.status for r in built} == {"ok"}, built
    assert [tuple(r) for r in spark.table(name).collect()] == [(hostile(ODD_COLUMNS[5][1]),)]
    db, _, t = name.partition(".")
    assert spark.catalog.getTable(f"{db}.{t}").description == hostile(DESCRIPTION)
    assert {c.name: c.description for c in spark.catalog.listColumns(t, db)} == {"a;b": hostile(ODD_COLUMNS[4][1])}
    assert_canary(spark)

    bad = root / "models" / "bad `名前`.sql"
    bad.write_text(f"MODEL (name {baseline}.`x'; DROP TABLE {CANARY}; --`, kind FULL); SELECT 1 AS a\n")
    with pytest.raises(Exception) as info:
        _call(spark, "plan", project=str(root))
    assert_clear_error(info.value, "bad `名前`.sql")
    assert "must be schema.table" in str(info.value) or "may only hold" in str(info.value)
    assert_canary(spark)
