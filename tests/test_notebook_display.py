"""The IPython display of procedure results, in process: which DataFrames become tables, and how."""

from __future__ import annotations

from types import SimpleNamespace

from pyspark_incr.bridge.notebook import (
    MAX_ROWS, dataframe_html, is_procedure_result, result_table, show_procedure_results_as_tables,
)


def test_a_call_result_renders_as_a_table_with_the_procedures_columns(spark):
    df = spark.sql("CALL incr.version()")

    html = dataframe_html(df)

    assert is_procedure_result(df)
    assert html.startswith("<table border='1'>\n<tr><th>version</th><th>spark_version</th><th>python</th></tr>\n<tr><td>0.1.0")


def test_other_dataframes_keep_pysparks_own_html(spark):
    df = spark.range(3)

    assert not is_procedure_result(df)
    assert dataframe_html(df) is None, "no eager evaluation unless the user turns it on"
    spark.conf.set("spark.sql.repl.eagerEval.enabled", "true")
    try:
        assert dataframe_html(df) == df._repr_html_() and "<th>id</th>" in dataframe_html(df)
    finally:
        spark.conf.unset("spark.sql.repl.eagerEval.enabled")


def test_long_results_are_cut_and_say_so():
    html = result_table(["n"], [(i,) for i in range(MAX_ROWS + 1)])

    assert html.count("<tr>") == MAX_ROWS + 1
    assert f"only the first {MAX_ROWS} rows are shown" in html


def test_an_empty_result_says_nothing_was_done():
    assert "(no rows: nothing to do)" in result_table(["model"], [])


def test_the_formatter_is_registered_for_dataframes_only_inside_ipython():
    from pyspark.sql import DataFrame

    registered = {}
    shell = SimpleNamespace(display_formatter=SimpleNamespace(formatters={
        "text/html": SimpleNamespace(for_type=lambda cls, fn: registered.update({cls: fn}))}))

    assert show_procedure_results_as_tables(shell) is True
    assert registered == {DataFrame: dataframe_html}
    assert show_procedure_results_as_tables() is False, "pytest is not an IPython shell"
