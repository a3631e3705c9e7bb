"""SQLMesh-format unit tests (``tests/test*.yaml``) run by ``CALL incr.test`` and ``pyspark-incr test``."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pytest

from conftest import call
from pyspark_incr import cli
from pyspark_incr.project.unit_tests import discover, parse_tests
from pyspark_incr.run.unit_tests import compare

EXAMPLE = Path(__file__).parent / "fixtures" / "unit_tests" / "example"
PYTHON_MODELS = Path(__file__).parent / "fixtures" / "unit_tests" / "python_models"


def _by_test(rows) -> dict:
    return {r["test"]: r for r in rows}


@pytest.fixture(scope="module")
def example_rows(spark):
    """Every test of the example project, run once through Spark SQL."""
    return _by_test(call(spark, "test", project=str(EXAMPLE)))


@pytest.mark.parametrize("name", [
    "test_example_full_model", "test_full_model_ctes", "test_full_model_csv", "test_full_model_csv_settings",
    "test_full_model_query_input", "test_full_model_vars", "test_incremental_model", "test_colors",
    "test_ratios_partial", "test_single_time_macro_and_yaml_path",
])
def test_the_example_projects_tests_pass(example_rows, name):
    row = example_rows[name]

    assert (row["status"], row["message"]) == ("passed", "")


def test_every_test_file_under_tests_is_read_and_only_those_named_test(example_rows):
    assert {r["file"] for r in example_rows.values()} == {"tests/test_full_model.yaml",
                                                           "tests/more/test_incremental_model.yml"}
    assert example_rows["test_incremental_model"]["model"] == "sqlmesh_example.incremental_model"


def _project(tmp_path: Path, tests: str, name: str = "test_it.yaml") -> Path:
    """A copy of the example project whose tests/ holds only ``tests``."""
    root = tmp_path / "project"
    shutil.copytree(EXAMPLE, root)
    shutil.rmtree(root / "tests")
    (root / "tests").mkdir()
    (root / "tests" / name).write_text(tests)
    return root


WRONG_COUNT = """
test_wrong_count:
  model: sqlmesh_example.full_model
  inputs:
    sqlmesh_example.incremental_model:
      - {id: 1, item_id: 1}
      - {id: 2, item_id: 1}
      - {id: 3, item_id: 2}
  outputs:
    query:
      - {item_id: 1, num_orders: 3}
      - {item_id: 2, num_orders: 1}
"""


def test_a_failing_test_shows_the_wrong_value_expected_against_actual(spark, tmp_path):
    [row] = call(spark, "test", project=str(_project(tmp_path, WRONG_COUNT)))

    assert row["status"] == "failed"
    assert row["message"] == (
        "query: Data mismatch (exp: expected, act: actual)\n\n"
        "     num_orders\n"
        "     exp  act\n"
        "  0  3    2"
    )


def test_a_different_row_count_lists_missing_and_unexpected_rows(spark, tmp_path):
    tests = WRONG_COUNT.replace("      - {item_id: 2, num_orders: 1}\n", "")
    [row] = call(spark, "test", project=str(_project(tmp_path, tests)))

    assert row["status"] == "failed"
    assert "Missing rows:\n\n  item_id  num_orders\n  1        3" in row["message"]
    assert "Unexpected rows:\n\n  item_id  num_orders\n  1        2\n  2        1" in row["message"]


def test_a_failing_cte_output_is_named_in_the_diff(spark, tmp_path):
    tests = WRONG_COUNT.replace("    query:\n", "    ctes:\n      filtered_orders_cte:\n        - {id: 1, item_id: 9}\n"
                                "        - {id: 2, item_id: 1}\n        - {id: 3, item_id: 2}\n    query:\n")
    [row] = call(spark, "test", project=str(_project(tmp_path, tests)))

    assert row["status"] == "failed"
    assert row["message"].startswith("CTE filtered_orders_cte: Data mismatch")
    assert "\n\nquery: Data mismatch" in row["message"]


def test_an_order_by_query_compares_rows_in_order(spark, tmp_path):
    tests = """
test_order:
  model: sqlmesh_example.ratios
  inputs:
    raw.sales:
      - {item_id: 1, amount: 3, sold_on: 2024-01-01}
      - {item_id: 2, amount: 6, sold_on: 2024-01-02}
  outputs:
    query:
      partial: true
      rows:
        - {item_id: 2, third: 2.0}
        - {item_id: 1, third: 1.0}
"""
    [row] = call(spark, "test", project=str(_project(tmp_path, tests)))

    assert row["status"] == "failed"
    assert "item_id" in row["message"] and "third" in row["message"]


def test_floats_differing_beyond_the_tolerance_fail():
    assert compare(["x"], [(1.0,)], [(1.0 + 1e-7,)], ordered=True) is None
    assert compare(["x"], [(1.0,)], [(1.001,)], ordered=True) is not None


def test_time_macros_come_from_start_and_end_and_default_to_the_epochs_first_day(spark, tmp_path):
    tests = """
test_defaults:
  model: sqlmesh_example.incremental_model
  inputs:
    sqlmesh_example.seed_model:
      - {id: 1, item_id: 1, event_date: 1970-01-01}
      - {id: 2, item_id: 1, event_date: 1970-01-02}
  outputs:
    query:
      - {id: 1, item_id: 1, event_date: 1970-01-01}
test_end_timestamp_is_exclusive:
  model: sqlmesh_example.incremental_model
  inputs:
    sqlmesh_example.seed_model:
      - {id: 1, item_id: 1, event_date: 2020-01-01}
      - {id: 2, item_id: 1, event_date: 2020-01-02}
      - {id: 3, item_id: 1, event_date: 2020-01-03}
  outputs:
    query:
      - {id: 2, item_id: 1, event_date: 2020-01-02}
  vars:
    start: 2020-01-02
    end: '2020-01-03 00:00:00'
"""
    rows = _by_test(call(spark, "test", project=str(_project(tmp_path, tests))))

    assert {n: (r["status"], r["message"]) for n, r in rows.items()} == {
        "test_defaults": ("passed", ""), "test_end_timestamp_is_exclusive": ("passed", "")}


def test_no_real_table_is_read_or_written(spark, tmp_path):
    """The models' own tables and the raw table exist and hold other rows: the tests still see only their fixtures."""
    root = tmp_path / "renamed"
    shutil.copytree(EXAMPLE, root)
    own, raw = "ut_real_models", "ut_real_raw"
    for f in [*root.rglob("*.sql"), *root.rglob("*.y*ml")]:
        f.write_text(f.read_text().replace("sqlmesh_example", own).replace("raw.sales", f"{raw}.sales"))
    for db in (own, raw):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    spark.sql(f"CREATE TABLE {own}.incremental_model (id INT, item_id INT, event_date DATE) USING parquet")
    spark.sql(f"INSERT INTO {own}.incremental_model VALUES (9, 9, DATE'2020-01-01')")
    spark.sql(f"CREATE TABLE {raw}.sales (item_id INT, amount INT, sold_on DATE) USING parquet")
    spark.sql(f"INSERT INTO {raw}.sales VALUES (7, 7, DATE'2020-01-01')")
    databases = {d.name for d in spark.catalog.listDatabases()}
    try:
        rows = _by_test(call(spark, "test", project=str(root)))

        assert len(rows) == 10 and {r["status"] for r in rows.values()} == {"passed"}
        assert {t.name for db in (own, raw) for t in spark.catalog.listTables(db) if not t.isTemporary} == {
            "incremental_model", "sales"}
        assert {d.name for d in spark.catalog.listDatabases()} == databases  # no state schema either
        assert spark.sql(f"SELECT * FROM {own}.incremental_model").collect() == [(9, 9, date(2020, 1, 1))]
        assert not [t for t in spark.catalog.listTables() if t.name.startswith("__incr_test_")]
    finally:
        for db in (own, raw):
            spark.sql(f"DROP DATABASE {db} CASCADE")


SELF_READING = """MODEL (
  name sqlmesh_example.totals,
  kind INCREMENTAL_BY_UNIQUE_KEY (unique_key item_id),
  columns (item_id INT, total BIGINT)
);

SELECT s.item_id, CAST(s.amount + COALESCE(t.total, 0) AS BIGINT) AS total
FROM raw.sales AS s LEFT JOIN @this_model AS t ON s.item_id = t.item_id
"""


def test_a_model_reading_itself_reads_the_rows_the_test_gives_it_else_none(spark, tmp_path):
    tests = """
test_first_load:
  model: sqlmesh_example.totals
  inputs:
    raw.sales: [{item_id: 1, amount: 5}]
  outputs:
    query: [{item_id: 1, total: 5}]
test_with_earlier_rows:
  model: sqlmesh_example.totals
  inputs:
    raw.sales: [{item_id: 1, amount: 5}]
    sqlmesh_example.totals: [{item_id: 1, total: 10}]
  outputs:
    query: [{item_id: 1, total: 15}]
"""
    root = _project(tmp_path, tests)
    (root / "models" / "totals.sql").write_text(SELF_READING)
    rows = _by_test(call(spark, "test", project=str(root)))

    assert {n: (r["status"], r["message"]) for n, r in rows.items()} == {
        "test_first_load": ("passed", ""), "test_with_earlier_rows": ("passed", "")}


def test_a_table_the_inputs_do_not_give_is_an_error_not_a_read(spark, tmp_path):
    tests = """
test_missing_input:
  model: sqlmesh_example.full_model
  outputs:
    query: []
"""
    [row] = call(spark, "test", project=str(_project(tmp_path, tests)))

    assert row["status"] == "error"
    assert "reads sqlmesh_example.incremental_model, which inputs: does not give" in row["message"]


def test_a_yaml_error_names_the_file_the_test_and_the_field(spark, tmp_path):
    tests = """
test_bad_field:
  model: sqlmesh_example.full_model
  inputs:
    sqlmesh_example.incremental_model:
      rows: [{id: 1, item_id: 1}]
      query: SELECT 1 AS id
  outputs:
    query: []
test_good:
  model: sqlmesh_example.full_model
  inputs:
    sqlmesh_example.incremental_model: [{id: 1, item_id: 1}]
  outputs:
    query: [{item_id: 1, num_orders: 1}]
"""
    root = _project(tmp_path, tests)
    rows = _by_test(call(spark, "test", project=str(root)))

    bad = rows["test_bad_field"]
    assert bad["status"] == "error"
    assert bad["message"] == (f"{root}/tests/test_it.yaml: test test_bad_field: inputs.sqlmesh_example.incremental_model:"
                              " has both query and rows; keep one of them")
    assert rows["test_good"]["status"] == "passed"


def test_an_expected_value_spark_cannot_cast_to_the_column_type_is_an_error(spark, tmp_path):
    tests = WRONG_COUNT.replace("{item_id: 1, num_orders: 3}", "{item_id: 1, num_orders: many}")
    [row] = call(spark, "test", project=str(_project(tmp_path, tests)))

    assert row["status"] == "error"
    assert "test test_wrong_count: outputs.query: the expected rows cannot be read as the output's column types" \
        in row["message"]


@pytest.mark.parametrize("text, said", [
    ("test_x:\n  model: a.b\n  ouputs: {query: []}\n", "test test_x: unknown field 'ouputs'; did you mean outputs?"),
    ("test_x:\n  inputs: {}\n  outputs: {query: []}\n", "test test_x: field model is missing"),
    ("test_x:\n  model: a.b\n", "test test_x: field outputs is missing"),
    ("test_x:\n  model: a.b\n  outputs: {query: {format: xml, rows: []}}\n",
     "test test_x: outputs.query: format 'xml' is not supported"),
    ("test_x: [unclosed\n", "not valid YAML (line 2, column 1)"),
])
def test_malformed_tests_say_where_and_what(text, said):
    [t] = parse_tests(text, Path("tests/test_f.yaml"))

    assert t.error is not None and said in str(t.error) and str(t.error).startswith("tests/test_f.yaml")


def test_jinja_var_in_a_test_file_reads_the_project_variable():
    [t] = parse_tests("test_x:\n  model: \"{{ var('gold') }}.full_model\"\n  outputs: {query: []}\n",
                      Path("tests/test_f.yaml"), {"gold": "sqlmesh_example"})

    assert t.model == "sqlmesh_example.full_model"


def test_select_runs_the_tests_it_names_by_name_model_or_file(spark):
    by_model = call(spark, "test", project=str(EXAMPLE), select="sqlmesh_example.incr*")
    by_file = call(spark, "test", project=str(EXAMPLE), select="tests/more/*::test_colors")

    assert [r["test"] for r in by_model] == ["test_incremental_model", "test_single_time_macro_and_yaml_path"]
    assert [r["test"] for r in by_file] == ["test_colors"]


def test_select_naming_no_test_is_an_error_listing_the_tests(spark):
    with pytest.raises(Exception, match="names no test"):
        call(spark, "test", project=str(EXAMPLE), select="nothing_like_it")


def test_discover_skips_files_not_named_test():
    names = [t.name for t in discover(EXAMPLE)]

    assert "test_colors" in names and all(t.error is None for t in discover(EXAMPLE))


def test_the_cli_exits_non_zero_when_a_test_fails_or_cannot_run(spark, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "_session", lambda args: spark)
    failing = _project(tmp_path / "failing", WRONG_COUNT)
    broken = _project(tmp_path / "broken", "test_broken:\n  model: sqlmesh_example.colors\n")

    assert cli.main(["test", str(EXAMPLE), "--select", "test_colors"]) == 0
    assert cli.main(["test", str(failing)]) == 1
    assert cli.main(["test", "--project", str(broken)]) == 1
    out = capsys.readouterr().out
    assert "test_colors" in out and "passed" in out and "test_wrong_count" in out and "failed" in out


# --- Python models --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def python_run(spark):
    """The Python-model project's tests, run once while real tables of the same names hold other rows.

    Yields the rows by test and what the real tables held before and after the run.
    """
    spark.sql("CREATE DATABASE IF NOT EXISTS py_raw")
    spark.sql("CREATE DATABASE IF NOT EXISTS py_shop")
    spark.sql("CREATE TABLE py_raw.orders (item_id INT, qty INT) USING parquet")
    spark.sql("INSERT INTO py_raw.orders VALUES (9, 99)")
    spark.sql("CREATE TABLE py_raw.customers (id INT) USING parquet")
    spark.sql("INSERT INTO py_raw.customers VALUES (1), (2), (3)")
    spark.sql("CREATE TABLE py_shop.totals (item_id INT, qty BIGINT) USING parquet")
    spark.sql("INSERT INTO py_shop.totals VALUES (7, 7)")

    def tables() -> set:
        return {(t.database, t.name) for db in ("py_raw", "py_shop") for t in spark.catalog.listTables(db)}

    before = tables()
    try:
        rows = _by_test(call(spark, "test", project=str(PYTHON_MODELS)))
        yield {"rows": rows, "before": before, "after": tables(),
               "orders": spark.table("py_raw.orders").collect(), "totals": spark.table("py_shop.totals").collect(),
               "temp_views": [t.name for t in spark.catalog.listTables() if t.name.startswith("__incr_test_")]}
    finally:
        spark.sql("DROP DATABASE py_raw CASCADE")
        spark.sql("DROP DATABASE py_shop CASCADE")


@pytest.mark.parametrize("name", [
    "test_spark_frame", "test_spark_frame_with_vars", "test_pandas_frame_vars_and_times", "test_pandas_frame_defaults",
    "test_generator",
])
def test_a_python_models_test_passes_when_execute_gives_the_expected_rows(python_run, name):
    row = python_run["rows"][name]

    assert (row["status"], row["message"]) == ("passed", "")


def test_a_python_models_wrong_rows_show_the_same_diff_as_a_sql_models(python_run):
    row = python_run["rows"]["test_generator_wrong"]

    assert row["status"] == "failed"
    assert row["message"] == ("query: Data mismatch (exp: expected, act: actual)\n\n"
                              "     qty\n"
                              "     exp  act\n"
                              "  1  5    4")


def test_a_python_model_reading_a_table_its_test_does_not_give_is_an_error_naming_it(python_run):
    row = python_run["rows"]["test_unlisted_table"]

    assert row["status"] == "error"
    assert ("test test_unlisted_table: execute() of model py_shop.sneaky reads py_raw.customers, which inputs: "
            "does not give") in row["message"]


def test_a_python_models_test_reads_and_writes_no_real_table(python_run):
    """Real tables named like the inputs and the models hold other rows; only the fixture rows are seen."""
    writer = python_run["rows"]["test_writer"]

    assert python_run["rows"]["test_generator"]["status"] == "passed"  # read py_raw.orders by its own name
    assert writer["status"] == "error" and "reads py_shop.written, which inputs: does not give" in writer["message"]
    assert python_run["after"] == python_run["before"]
    assert python_run["orders"] == [(9, 99)] and python_run["totals"] == [(7, 7)]
    assert python_run["temp_views"] == []
