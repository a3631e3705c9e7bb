"""incr.table_diff: two tables, or one model in two environments, compared exactly, in one join."""

from __future__ import annotations

import re

import pytest
from chispa import assert_df_equality

from conftest import call
from pyspark_incr.diff import compare, table_side
from pyspark_incr.errors import ArgumentError, UnknownModelError
from pyspark_incr.sqltext import call_sql

SCHEMA = ("section string, finding string, column string, key string, source string, target string, rows bigint, "
          "pct double, model string")


@pytest.fixture(scope="module")
def pair(spark, module_isolated):
    """A source and a target table differing in every way a diff reports."""
    db = f"{module_isolated}_d"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    # id 1: price within 3 decimals; 2: name changed; 3: NULL = NULL; 4: price beyond 3 decimals; 5: name to NULL;
    # 6: source only; 7: twice in the source; 8, 9: target only; NULL id: a NULL key on both sides, equal rows;
    # tags: a map, which Spark cannot compare; the key id: int in the source, bigint in the target
    spark.sql(f"""CREATE TABLE {db}.src USING parquet AS SELECT *, map('k', name) AS tags FROM VALUES
        (1, 'a', 1.0001D, 1, 'x'), (2, 'b', 2.0D, 2, 'x'), (3, NULL, 3.0D, 3, 'x'), (4, 'd', 4.0D, 4, 'x'),
        (5, 'e', 5.0D, 5, 'x'), (6, 'f', 6.0D, 6, 'x'), (7, 'g', 7.0D, 7, 'x'), (7, 'g2', 7.0D, 7, 'x'),
        (NULL, 'n', 1.0D, 0, 'x') AS t(id, name, price, qty, old)""")
    spark.sql(f"""CREATE TABLE {db}.tgt USING parquet AS
        SELECT CAST(id AS BIGINT) AS id, name, price, qty, new, map('k', name) AS tags FROM VALUES
        (1, 'a', 1.0002D, 1L, 'y'), (2, 'B', 2.0D, 2L, 'y'), (3, NULL, 3.0D, 3L, 'y'), (4, 'd', 4.01D, 4L, 'y'),
        (5, NULL, 5.0D, 5L, 'y'), (7, 'g', 7.0D, 7L, 'y'), (8, 'h', 8.0D, 8L, 'y'), (9, 'i', 9.0D, 9L, 'y'),
        (NULL, 'n', 1.0D, 0L, 'y') AS t(id, name, price, qty, new)""")
    return f"{db}.src", f"{db}.tgt"


def _diff(spark, **args):
    return spark.sql(call_sql("table_diff", **args))


def _rows(spark, rows, model=None):
    return spark.createDataFrame([(*r, model) for r in rows], SCHEMA)


def test_two_tables_differ_in_schema_counts_and_values_each_reported_exactly(spark, pair):
    src, tgt = pair

    found = _diff(spark, source=src, target=tgt, on="id", show_sample=True)

    s, t = (re.sub(r"(\w+)", r"`\1`", name) for name in (src, tgt))
    expected = _rows(spark, [
        ("tables", "compared", None, "id", s, t, None, None),
        ("schema", "column added", "new", None, None, "string", None, None),
        ("schema", "column removed", "old", None, "string", None, None, None),
        ("schema", "type changed", "id", None, "int", "bigint", None, None),
        ("schema", "type changed", "qty", None, "int", "bigint", None, None),
        ("rows", "source rows", None, None, None, None, 9, None),
        ("rows", "target rows", None, None, None, None, 9, None),
        ("rows", "joined", None, None, None, None, 6, None),
        ("rows", "full match", None, None, None, None, 3, 50.0),
        ("rows", "changed", None, None, None, None, 3, 50.0),
        ("rows", "source only", None, None, None, None, 1, None),
        ("rows", "target only", None, None, None, None, 2, None),
        ("rows", "duplicate keys", None, None, "2 rows", "1 row", 3, None),
        ("rows", "null keys", None, None, "1 row", "1 row", 2, None),
        ("column", "match rate", "name", None, None, None, 4, 66.67),
        ("column", "match rate", "price", None, None, None, 5, 83.33),
        ("column", "not compared", "tags", None, "map<string,string>", "map<string,string>", None, None),
        ("sample", "changed", "name", "id=2", "b", "B", None, None),
        ("sample", "changed", "price", "id=4", "4.0", "4.01", None, None),
        ("sample", "changed", "name", "id=5", "e", "NULL", None, None),
        ("sample", "duplicate key", None, "id=7", "2 rows", "1 row", None, None),
        ("sample", "source only", None, "id=6", "name=f, price=6.0", None, None, None),
        ("sample", "target only", None, "id=8", None, "name=h, price=8.0", None, None),
        ("sample", "target only", None, "id=9", None, "name=i, price=9.0", None, None),
    ])
    assert_df_equality(found, expected, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
    shown = found.collect()
    assert [r.section for r in shown][:6] == ["tables", "schema", "schema", "schema", "schema", "rows"]
    assert [r.key for r in shown if r.section == "sample"] == ["id=2", "id=4", "id=5", "id=6", "id=8", "id=9", "id=7"]


def test_decimals_where_and_skip_columns_narrow_what_counts_as_a_difference(spark, pair):
    src, tgt = pair

    rounded = {r.column: r.rows for r in call(spark, "table_diff", source=src, target=tgt, on="id", decimals=1)
               if r.finding == "match rate"}
    filtered = {r.finding: r.rows for r in call(spark, "table_diff", source=src, target=tgt, on="id",
                                                 where="id <= 3 AND name IS NOT NULL", skip_columns="price")}
    skipped = {r.column for r in call(spark, "table_diff", source=src, target=tgt, on="id", skip_columns="`PRICE`")
               if r.finding == "match rate"}
    nothing = {r.finding: r.rows for r in call(spark, "table_diff", source=src, target=tgt, on="id", where="false",
                                               show_sample=True) if r.section in ("rows", "sample")}

    assert rounded == {"name": 4, "price": 6}  # 4.0 and 4.01 agree to one place
    assert (filtered["source rows"], filtered["target rows"], filtered["joined"], filtered["changed"]) == (2, 2, 2, 1)
    assert skipped == {"name"}
    assert nothing == dict.fromkeys(["source rows", "target rows", "joined", "full match", "changed", "source only",
                                     "target only"], 0)  # Spark plans no join at all for it: still counted


def test_a_table_compared_with_a_view_of_itself_matches_fully(spark, pair):
    src, _ = pair
    spark.sql(f"CREATE VIEW {src}_view AS SELECT * FROM {src}")

    found = {r.finding: r for r in call(spark, "table_diff", source=src, target=f"{src}_view", on="id")}

    assert found["schemas match"].section == "schema"
    assert (found["joined"].rows, found["full match"].pct, found["source only"].rows) == (7, 100.0, 0)
    assert found["duplicate keys"].rows == 4


def test_only_the_sample_reaches_the_driver_from_one_action_over_one_join(spark, module_isolated, monkeypatch):
    from pyspark.sql.classic.dataframe import DataFrame  # the class whose collect a session's frames run

    db = f"{module_isolated}_d"
    spark.range(0, 1000).selectExpr("id", "id AS v").write.saveAsTable(f"{db}.wide_src", format="parquet")
    spark.range(500, 1500).selectExpr("id", "id + 1 AS v").write.saveAsTable(f"{db}.wide_tgt", format="parquet")
    collected = []
    real = DataFrame.collect

    def recording(df):
        rows = real(df)
        collected.append((df, len(rows)))
        return rows

    monkeypatch.setattr(DataFrame, "collect", recording)
    source, target = table_side(spark, "source", f"{db}.wide_src"), table_side(spark, "target", f"{db}.wide_tgt")

    sampled = compare(spark, source, target, ("id",), limit=2)
    counted = compare(spark, source, target, ("id",))

    assert [n for _, n in collected] == [6, 1]  # two each of source only, target only, changed; then one row
    assert (sampled.counts.source_only, sampled.counts.target_only, sampled.counts.joined) == (500, 500, 500)
    assert sampled.counts == counted.counts and sampled.column_matches == counted.column_matches == (("v", 0),)
    for df, _ in collected:
        plan = df._jdf.queryExecution().executedPlan().executedPlan().toString()  # the adaptive plan's final form
        assert len(re.findall(r"(SortMergeJoin|ShuffledHashJoin|BroadcastHashJoin|NestedLoopJoin)", plan)) == 1
        assert len(re.findall(r"Exchange hashpartitioning\(_k#", plan)) == 2  # the join shuffles nothing again
        for table in ("wide_src", "wide_tgt"):
            assert len(re.findall(rf"Scan \w+ \S*{table}\b", plan)) == 1, plan


@pytest.fixture(scope="module")
def environments(spark, module_isolated):
    """SQLMesh's table diff example: prod, and dev where item 3 became 4 and id 1 is gone."""
    raw, name = f"{module_isolated}_raw.seed", f"{module_isolated}.incremental_model"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {module_isolated}_raw")
    spark.sql(f"""CREATE TABLE {raw} USING parquet AS SELECT id, item_id, CAST(event_date AS DATE) AS event_date
        FROM VALUES (1, 2, '2020-01-01'), (2, 1, '2020-01-01'), (3, 3, '2020-01-03'), (4, 1, '2020-01-04'),
        (5, 1, '2020-01-05'), (6, 1, '2020-01-06'), (7, 1, '2020-01-07') AS t(id, item_id, event_date)""")
    head = (f"MODEL (name {name}, kind INCREMENTAL_BY_TIME_RANGE (time_column event_date), start '2020-01-01', "
            "cron '@daily', grain (id, event_date)); ")
    when = "event_date BETWEEN @start_ds AND @end_ds"
    call(spark, "create_model", definition=head + f"SELECT id, item_id, event_date FROM {raw} WHERE {when}")
    # for select: a model reading it (so changed with it in dev) and one left alone
    call(spark, "create_model", definition=f"MODEL (name {module_isolated}.item_counts, kind FULL, grain item_id); "
                                           f"SELECT item_id, COUNT(*) AS n FROM {name} GROUP BY item_id")
    call(spark, "create_model", definition=f"MODEL (name {module_isolated}.untouched, kind FULL, grain k); "
                                           "SELECT 1 AS k")
    call(spark, "apply", execution_time="2020-01-08")
    call(spark, "create_model", definition=head + "SELECT id, CASE WHEN item_id = 3 THEN 4 ELSE item_id END AS "
                                                  f"item_id, event_date FROM {raw} WHERE {when} AND id != 1")
    call(spark, "apply", env="dev", execution_time="2020-01-08")
    return name


def test_a_model_in_prod_and_dev_is_paired_on_its_grain_as_in_sqlmeshs_example(spark, environments):
    found = _diff(spark, source="prod", target="dev", model=environments, show_sample=True)

    shown = found.collect()
    rows, compared = [tuple(r)[1:-1] for r in shown if r.section != "tables"], shown[0]
    assert {r.model for r in shown} == {environments}
    assert rows == [
        ("schemas match", None, None, None, None, None, None),
        ("source rows", None, None, None, None, 7, None), ("target rows", None, None, None, None, 6, None),
        ("joined", None, None, None, None, 6, None), ("full match", None, None, None, None, 5, 83.33),
        ("changed", None, None, None, None, 1, 16.67), ("source only", None, None, None, None, 1, None),
        ("target only", None, None, None, None, 0, None),
        ("match rate", "item_id", None, None, None, 5, 83.33),
        ("changed", "item_id", "id=3, event_date=2020-01-03", "3", "4", None, None),
        ("source only", None, "id=1, event_date=2020-01-01", "item_id=2", None, None, None),
    ]
    assert compared.key == "id, event_date"
    assert compared.source.startswith("prod: `") and compared.target.startswith("dev: `")
    assert compared.source != compared.target.replace("dev: ", "prod: ")  # two versions, two physical tables


def test_a_selector_compares_each_model_the_change_touches_and_names_the_rest(spark, environments):
    p = environments.rsplit(".", 1)[0]

    shown = _diff(spark, source="prod", target="dev", select=f"{p}.*").collect()

    counts = {(r.model, r.finding): r.rows for r in shown if r.section == "rows"}
    assert counts[(environments, "changed")] == 1 and counts[(environments, "source only")] == 1
    # item_counts read the changed model: prod (1: 5, 2: 1, 3: 1), dev (1: 5, 4: 1), paired on its grain
    assert [counts[(f"{p}.item_counts", f)] for f in ("full match", "source only", "target only")] == [1, 2, 1]
    skipped = [(r.model, r.finding, r.source) for r in shown if r.finding == "not compared"]
    assert skipped == [(f"{p}.untouched", "not compared", "the same version in both: nothing to compare")]
    assert [r.model for r in shown if r.section == "tables"][0] == f"{p}.untouched"  # listed first, then the diffs


def test_a_selector_and_a_model_together_are_refused(spark, environments):
    from pyspark_incr.procedures import dispatch

    with pytest.raises(ArgumentError, match="pass model .* or select .*, not both"):
        dispatch(spark, "table_diff", {"source": "prod", "target": "dev", "model": environments, "select": "*"})


def test_the_cli_verb_prints_the_same_diff(spark, environments, capsys):
    from pyspark_incr import cli

    args = cli._parser().parse_args(["table-diff", "prod", "dev", "--model", environments, "--on", "id"])
    assert cli._call(spark, args) == 0

    printed = capsys.readouterr().out
    assert "incr.table_diff" in printed and "match rate" in printed and "83.33" in printed


@pytest.mark.parametrize("args, error, words", [
    (dict(source="nope.missing", target="nope.other", on="id"), ArgumentError,
     "source table 'nope.missing' does not exist"),
    (dict(on=None), ArgumentError, "pass on => 'id'"),
    (dict(on="id, qty2"), ArgumentError, "key column 'qty2' is not a column of the source"),
    (dict(on="id", where="id = 1; DROP TABLE x"), ArgumentError, "must be one condition"),
    (dict(on="id", where="no_such_column > 1"), ArgumentError, "the source `"),
    (dict(on="id", skip_columns="nme"), ArgumentError, "skip_columns names 'nme'"),
    (dict(on="id", decimals=-1), ArgumentError, "decimals -1 must be 0 or more"),
    (dict(source="db.a; DROP TABLE b", on="id"), ArgumentError, "source table 'db.a; DROP TABLE b' does not exist"),
])
def test_bad_arguments_are_refused_naming_what_to_fix(spark, pair, args, error, words):
    from pyspark_incr.procedures import dispatch

    given = {"source": pair[0], "target": pair[1], **args}
    with pytest.raises(error, match=re.escape(words)):
        dispatch(spark, "table_diff", given)


@pytest.mark.parametrize("args, error, words", [
    (dict(model="nope.model"), UnknownModelError, "model 'nope.model' is not in source environment prod"),
    (dict(target="staging"), ArgumentError, "target environment 'staging' holds no models"),
    (dict(source="db.table"), ArgumentError, "source 'db.table' is not an environment name"),
])
def test_environments_and_models_that_are_not_there_are_named(spark, environments, args, error, words):
    from pyspark_incr.procedures import dispatch

    given = {"source": "prod", "target": "dev", "model": environments, **args}
    with pytest.raises(error, match=re.escape(words)):
        dispatch(spark, "table_diff", given)
