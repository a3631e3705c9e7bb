"""Python models (models/**/*.py with @model over execute(context, start, end, execution_time, **kwargs)), as
SQLMesh defines them: loaded, planned, built per batch through the writers, read by SQL models, re-run from state."""

from __future__ import annotations

import datetime as dt
import shutil
import textwrap
from pathlib import Path

import pytest
from chispa import assert_df_equality

from conftest import call as _call
from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model import python_model
from pyspark_incr.model.definition import parse_python_models, reparse
from pyspark_incr.model.fingerprint import data_hash, metadata_hash
from pyspark_incr.plan.categorize import categorize
from pyspark_incr.project.loader import load_project

T1, T2, T3 = "2024-01-05 00:00:00", "2024-01-07 00:00:00", "2024-01-08 00:00:00"


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def _files(root: Path, s: str, raw: str, log: Path) -> None:
    """A project of Python models: sliced (logging each call), FULL from pandas, yielded chunks, nothing; and
    a SQL model reading one of them."""
    write(root, "config.yaml", f"variables:\n  log_path: {log}\n  chunk_word: piece\n")
    write(root, "models/daily.py", f'''
        import typing as t
        from datetime import date, datetime

        from pyspark.sql import functions as F
        from sqlmesh import ExecutionContext, model
        from sqlmesh.core.model.kind import ModelKindName


        @model(
            "{s}.daily",
            kind=dict(name=ModelKindName.INCREMENTAL_BY_TIME_RANGE, time_column="ds", batch_size=2),
            columns={{"ds": "date", "total": "bigint"}},
            start="2024-01-01",
            cron="@daily",
            grain="ds",
        )
        def execute(context: ExecutionContext, start: datetime, end: datetime, execution_time: datetime,
                    log_path: str = "", **kwargs: t.Any):
            with open(log_path, "a") as log:
                log.write(f"{{start.isoformat()}} {{end.isoformat()}}\\n")
            raw = context.spark.table("{raw}")
            inside = raw.where((F.col("ds") >= F.lit(start.date())) & (F.col("ds") <= F.lit(end.date())))
            # a row outside the batch: the writer's output filter drops it, as for a SQL model
            stray = context.spark.createDataFrame([(date(1999, 1, 1), 7)], "ds date, total bigint")
            return inside.groupBy("ds").agg(F.sum("v").alias("total")).unionByName(stray)
    ''')
    write(root, "models/totals.py", f'''
        import pandas as pd
        from pyspark_incr.decorators import model


        @model("{s}.totals", kind="FULL", columns={{"days": "int", "total": "bigint"}})
        def execute(context, start, end, execution_time, **kwargs):
            df = context.fetchdf(f"SELECT ds, total FROM {{context.resolve_table('{s}.daily')}}")
            return pd.DataFrame({{"days": [len(df)], "total": [int(df["total"].sum())]}})
    ''')
    write(root, "models/chunks.py", f'''
        import pandas as pd
        from sqlmesh import model
        from sqlmesh.core.model.kind import FullKind


        @model("{s}.chunks", kind=FullKind(), columns={{"id": "int", "label": "text"}})
        def execute(context, **kwargs):
            for i in range(2):
                yield pd.DataFrame({{"id": [i], "label": [f"{{context.var('chunk_word', 'chunk')}} {{i}}"]}})
            yield context.spark.sql("SELECT 2 AS id, 'spark' AS label")
    ''')
    write(root, "models/nothing.py", f'''
        from sqlmesh import ExecutionContext, model


        @model("{s}.nothing", kind="full", columns={{"id": "int"}})
        def execute(context: ExecutionContext):
            yield from ()
    ''')
    write(root, "models/report.sql", f"MODEL (name {s}.report, kind FULL);\nSELECT days * 10 AS tens, total FROM {s}.totals")


@pytest.fixture(scope="module")
def project(spark, module_isolated, tmp_path_factory):
    root = tmp_path_factory.mktemp("pm") / "project"
    s, raw = f"{module_isolated}_m", f"{module_isolated}_raw.events"
    log = root.parent / "calls.log"
    _files(root, s, raw, log)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {module_isolated}_raw")
    spark.sql(f"CREATE TABLE {raw} USING parquet AS SELECT DATE_ADD(DATE'2024-01-01', CAST(id DIV 2 AS INT)) AS ds, "
              "CAST(id AS INT) AS v FROM range(20)")
    return root, s, log


def _calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def _daily(spark, days: int):
    # raw rows 2d and 2d+1 fall on day d: their sum is 4d + 1
    rows = [(dt.date(2024, 1, 1) + dt.timedelta(days=d), 4 * d + 1) for d in range(days)]
    return spark.createDataFrame(rows, "ds date, total bigint")


@pytest.fixture(scope="module")
def applied(spark, project):
    root, s, log = project
    return _call(spark, "apply", project=str(root), execution_time=T1)


def test_python_models_are_built_per_batch_through_the_writers_and_read_by_a_sql_model(spark, project, applied):
    root, s, log = project
    assert all(r.status == "ok" for r in applied), [(r.model, r.message) for r in applied]

    assert _calls(log) == ["2024-01-01T00:00:00+00:00 2024-01-02T23:59:59.999999+00:00",
                           "2024-01-03T00:00:00+00:00 2024-01-04T23:59:59.999999+00:00"]
    assert_df_equality(spark.table(f"{s}.daily"), _daily(spark, 4), ignore_row_order=True,
                       ignore_column_order=True)
    assert_df_equality(spark.table(f"{s}.totals"), spark.createDataFrame([(4, 28)], "days int, total bigint"))
    assert_df_equality(spark.table(f"{s}.report"), spark.createDataFrame([(40, 28)], "tens int, total bigint"))
    assert_df_equality(spark.table(f"{s}.chunks"),
                       spark.createDataFrame([(0, "piece 0"), (1, "piece 1"), (2, "spark")], "id int, label string"),
                       ignore_row_order=True)
    assert_df_equality(spark.table(f"{s}.nothing"), spark.createDataFrame([], "id int"))


def test_a_run_computes_only_the_missing_intervals_of_a_python_model(spark, project, applied):
    root, s, log = project
    before = len(_calls(log))

    ran = _call(spark, "run", execution_time=T2)

    assert all(r.status == "ok" for r in ran), [(r.model, r.message) for r in ran]
    assert _calls(log)[before:] == ["2024-01-05T00:00:00+00:00 2024-01-06T23:59:59.999999+00:00"]
    assert_df_equality(spark.table(f"{s}.daily"), _daily(spark, 6), ignore_row_order=True,
                       ignore_column_order=True)
    assert_df_equality(spark.table(f"{s}.totals"), spark.createDataFrame([(6, 66)], "days int, total bigint"))


def test_a_python_model_runs_again_from_state_with_its_project_directory_gone(spark, project, applied, tmp_path):
    from pyspark_incr.state import snapshot
    from pyspark_incr.state.store import StateStore

    root, s, log = project
    _call(spark, "run", execution_time=T2)  # whatever the order tests run in, T2 is done
    moved = tmp_path / "moved"
    shutil.move(str(root), moved)
    # another application: nothing parsed or run yet
    for cache in (reparse, snapshot.model_of, snapshot._read, snapshot.judgement_of, python_model.registrations):
        cache.cache_clear()
    try:
        before = len(_calls(log))
        ran = _call(spark, "run", execution_time=T3)
        entry = StateStore(spark).environment("prod")[f"{s}.daily"]
        again = reparse(entry.definition, entry.model_source, entry.context)
    finally:
        shutil.move(str(moved), root)

    assert all(r.status == "ok" for r in ran), [(r.model, r.message) for r in ran]
    assert _calls(log)[before:] == ["2024-01-07T00:00:00+00:00 2024-01-07T23:59:59.999999+00:00"]
    assert_df_equality(spark.table(f"{s}.daily"), _daily(spark, 7), ignore_row_order=True,
                       ignore_column_order=True)
    assert (again.name, again.kind.name, again.query, again.columns) == (
        f"{s}.daily", "INCREMENTAL_BY_TIME_RANGE", None, (("ds", "DATE"), ("total", "BIGINT")))


def test_explain_says_the_safety_check_does_not_read_python_code(spark, project, applied):
    root, s, log = project
    rows = _call(spark, "explain", model=f"{s}.daily", project=str(root), execution_time=T1)

    assert [(r[0], r[2]) for r in rows if r[0] == "safety"] == [("safety", python_model.UNCHECKED)]


def test_the_loaded_record_holds_the_declared_properties_and_the_reads_resolve_table_names(project):
    root, s, log = project
    models = {m.name: m for m in load_project(root)}

    daily, totals = models[f"{s}.daily"], models[f"{s}.totals"]
    assert (daily.kind.time_column, daily.kind.batch_size, daily.grains, daily.query) == ("ds", 2, ("ds",), None)
    assert totals.depends_on == (f"{s}.daily",)
    assert models[f"{s}.report"].depends_on == (f"{s}.totals",)
    assert python_model.is_python(daily) and not python_model.is_python(models[f"{s}.report"])


def test_a_unique_key_python_model_merges_each_batch_into_its_table(spark, isolated, tmp_path):
    write(tmp_path, "models/latest.py", f'''
        import pandas as pd
        from sqlmesh import model
        from sqlmesh.core.model.kind import ModelKindName


        @model("{isolated}_s.latest", kind=dict(name=ModelKindName.INCREMENTAL_BY_UNIQUE_KEY, unique_key="id"),
               columns={{"id": "int", "v": "int"}}, start="2024-01-01")
        def execute(context, start, end, execution_time, **kwargs):
            return pd.DataFrame({{"id": [1, 10 + start.day], "v": [start.day, 0]}})
    ''')

    first = _call(spark, "apply", project=str(tmp_path), execution_time="2024-01-03 00:00:00")
    second = _call(spark, "run", execution_time="2024-01-05 00:00:00")

    assert [r.status for r in [*first, *second]] == ["ok", "ok"], [*first, *second]
    assert_df_equality(spark.table(f"{isolated}_s.latest"),
                       spark.createDataFrame([(1, 3), (11, 0), (13, 0)], "id int, v int"), ignore_row_order=True)


# --- failures, named ------------------------------------------------------------------------------------------------

def _failed(spark, isolated, tmp_path, body: str, columns: str = '{"id": "int"}'):
    write(tmp_path, "models/m.py", f'''
        import pandas as pd
        from sqlmesh import model


        @model("{isolated}_s.m", kind="FULL", columns={columns})
        def execute(context, **kwargs):
        {textwrap.indent(textwrap.dedent(body), "    ")}
    ''')
    rows = _call(spark, "apply", project=str(tmp_path), execution_time=T1)
    assert [r.status for r in rows if r.status != "ok"] == ["failed"], rows
    return next(r.message for r in rows if r.status == "failed")


def test_an_execute_that_raises_fails_its_model_naming_it_and_the_error(spark, isolated, tmp_path):
    message = _failed(spark, isolated, tmp_path, 'raise ValueError("the API is down\\nsecond line")')

    assert message == f"Model {isolated}_s.m: execute() in {tmp_path / 'models/m.py'} raised ValueError: the API is down."


@pytest.mark.parametrize("frame, said", [
    ('pd.DataFrame({"id": [1], "other": [2]})', "returned has column(s) other that columns= does not declare;"),
    ('pd.DataFrame({"name": ["a"]})', "returned lacks column(s) id; has column(s) name that"),
])
def test_a_dataframe_without_exactly_the_declared_columns_fails_its_model(spark, isolated, tmp_path, frame, said):
    message = _failed(spark, isolated, tmp_path, f"return {frame}")

    assert message.startswith(f"Model {isolated}_s.m: the DataFrame execute() ")
    assert said in message and message.endswith("return exactly the columns declared in @model(columns=...): id.")


def test_values_are_cast_to_the_declared_types(spark, isolated, tmp_path):
    write(tmp_path, "models/m.py", f'''
        import pandas as pd
        from sqlmesh import model


        @model("{isolated}_s.m", kind="FULL", columns={{"id": "int", "amount": "decimal(10, 2)", "name": "text"}})
        def execute(context, **kwargs):
            return pd.DataFrame({{"name": ["a"], "id": [1.0], "amount": ["2.5"]}})
    ''')
    rows = _call(spark, "apply", project=str(tmp_path), execution_time=T1)

    assert [r.status for r in rows] == ["ok"], rows
    from decimal import Decimal
    assert_df_equality(spark.table(f"{isolated}_s.m"),
                       spark.createDataFrame([(1, Decimal("2.50"), "a")], "id int, amount decimal(10,2), name string"))


def _load_error(tmp_path: Path, text: str) -> str:
    write(tmp_path, "models/m.py", text)
    with pytest.raises(ModelDefinitionError) as e:
        load_project(tmp_path)
    return str(e.value)


def test_a_python_file_of_models_without_a_model_is_refused(tmp_path):
    assert _load_error(tmp_path, "def helper():\n    return 1\n") == (
        f"{tmp_path / 'models/m.py'}: no @model(...) in this Python file of models/; declare one over "
        "def execute(context, ...) (from sqlmesh import model), or move helper code out of models/")


def test_two_models_of_one_name_in_a_file_are_refused(tmp_path):
    text = ('from sqlmesh import model\n@model("s.a", columns={"x": "int"})\ndef one(context): ...\n'
            '@model("S.A", columns={"x": "int"})\ndef two(context): ...\n')
    assert _load_error(tmp_path, text) == f"{tmp_path / 'models/m.py'}: two @model(...) are named s.a; rename one"


def test_a_syntax_error_names_the_file_and_line(tmp_path):
    message = _load_error(tmp_path, 'from sqlmesh import model\n\n@model("s.a", columns={"x": "int"})\ndef f(:\n')
    assert message.startswith(f"{tmp_path / 'models/m.py'}: line 4: ")


def test_a_model_without_columns_is_refused_saying_what_to_declare(tmp_path):
    message = _load_error(tmp_path, 'from sqlmesh import model\n@model("s.a", kind="FULL")\ndef f(context): ...\n')
    assert message.startswith(f"model s.a ({tmp_path / 'models/m.py'}): @model needs columns={{name: type, ...}}")


@pytest.mark.parametrize("argument, said", [
    ('kind="VIEW"', "kind VIEW cannot be a Python model; use a SQL model"),
    ('kind="EMBEDDED"', "kind EMBEDDED cannot be a Python model"),
    ('kind=dict(name="SEED", path="x.csv")', "kind SEED cannot be a Python model"),
    ('kind="EXTERNAL"', "kind EXTERNAL cannot be a Python model"),
    ('kind=dict(name="INCREMENTAL_BY_CURSOR", cursor_column="ts")', "kind INCREMENTAL_BY_CURSOR cannot be a Python"),
    ('cron="@sometimes"', "cron '@sometimes' is not a valid cron expression"),
    ('colour="red"', "@model argument 'colour'"),
])
def test_a_wrong_model_argument_is_named(tmp_path, argument, said):
    message = _load_error(tmp_path, f'from sqlmesh import model\n@model("s.a", columns={{"x": "int"}}, {argument})\n'
                                    'def f(context): ...\n')
    assert message.startswith("model s.a") and said in message


def test_a_read_only_known_when_running_needs_depends_on(tmp_path):
    text = ('from sqlmesh import model\n@model("s.a", columns={"x": "int"})\ndef f(context, **kwargs):\n'
            '    return context.spark.table(context.resolve_table(kwargs["which"]))\n')
    message = _load_error(tmp_path, text)
    assert "line 4: cannot tell which model context.resolve_table(...) reads before running it" in message
    write(tmp_path, "models/m.py", text.replace('columns={"x": "int"}', 'columns={"x": "int"}, depends_on=["s.b"]'))
    assert load_project(tmp_path)[0].depends_on == ("s.b",)


# --- fingerprints ---------------------------------------------------------------------------------------------------

BASE = '''from sqlmesh import model
@model("s.a", kind="FULL", columns={"x": "int"}, owner="ann")
def execute(context, **kwargs):
    return context.spark.sql("SELECT 1 AS x")
'''


def test_a_change_to_the_code_is_a_data_change_and_to_a_metadata_argument_is_not():
    base = parse_python_models(BASE, "a.py")[0]
    owner = parse_python_models(BASE.replace('"ann"', '"bob"'), "a.py")[0]
    code = parse_python_models(BASE.replace("SELECT 1", "SELECT 2"), "a.py")[0]
    comment = parse_python_models(BASE + "# a note\n", "a.py")[0]

    assert (data_hash(owner), metadata_hash(owner) != metadata_hash(base)) == (data_hash(base), True)
    assert data_hash(code) != data_hash(base)
    assert categorize(base, code).name == "breaking"
    assert (data_hash(comment), metadata_hash(comment)) == (data_hash(base), metadata_hash(base))


# --- SQLMesh's own examples -----------------------------------------------------------------------------------------

#: The "Basic" example of SQLMesh's Python models page (docs/concepts/models/python_models.md), unedited.
SPEC_BASIC = '''
import typing as t
from datetime import datetime

import pandas as pd
from sqlglot.expressions import to_column
from sqlmesh import ExecutionContext, model

@model(
    "docs_example.basic",
    owner="janet",
    cron="@daily",
    columns={
        "id": "int",
        "name": "text",
    },
    column_descriptions={
        "id": "Unique ID",
        "name": "Name corresponding to the ID",
    },
    audits=[
        ("not_null", {"columns": [to_column("id")]}),
    ],
)
def execute(
    context: ExecutionContext,
    start: datetime,
    end: datetime,
    execution_time: datetime,
    **kwargs: t.Any,
) -> pd.DataFrame:

    return pd.DataFrame([
        {"id": 1, "name": "name"}
    ])
'''

#: The "PySpark" example of the same page, unedited.
SPEC_PYSPARK = '''
import typing as t
from datetime import datetime

import pandas as pd
from pyspark.sql import DataFrame, functions

from sqlmesh import ExecutionContext, model

@model(
    "docs_example.pyspark",
    columns={
        "id": "int",
        "name": "text",
        "country": "text",
    },
)
def execute(
    context: ExecutionContext,
    start: datetime,
    end: datetime,
    execution_time: datetime,
    **kwargs: t.Any,
) -> DataFrame:
    # get the upstream model's name and register it as a dependency
    table = context.resolve_table("upstream_model")

    # use the spark DataFrame api to add the country column
    df = context.spark.table(table).withColumn("country", functions.lit("USA"))

    # returns the pyspark DataFrame directly, so no data is computed locally
    return df
'''


def test_sqlmesh_example_files_load_unedited(tmp_path):
    write(tmp_path, "models/basic.py", SPEC_BASIC)
    write(tmp_path, "models/pyspark.py", SPEC_PYSPARK)
    models = {m.name: m for m in load_project(tmp_path)}

    basic, pyspark = models["docs_example.basic"], models["docs_example.pyspark"]
    assert (basic.kind.name, basic.owner, basic.schedule.cron, basic.columns) == (
        "FULL", "janet", "@daily", (("id", "INT"), ("name", "STRING")))
    assert basic.column_descriptions == (("id", "Unique ID"), ("name", "Name corresponding to the ID"))
    assert basic.audits == (("not_null", (("columns", "(id)"),)),)
    assert (pyspark.depends_on, pyspark.columns[-1]) == (("upstream_model",), ("country", "STRING"))


def test_the_sqlmesh_basic_example_is_built_as_sqlmesh_builds_it(spark, isolated, tmp_path):
    write(tmp_path, "models/basic.py", SPEC_BASIC.replace("docs_example.", f"{isolated}_docs."))

    rows = _call(spark, "apply", project=str(tmp_path), execution_time=T1)

    assert [r.status for r in rows] == ["ok"], rows
    # (the column descriptions are the columns' comments: metadata)
    assert_df_equality(spark.table(f"{isolated}_docs.basic"), spark.createDataFrame([(1, "name")], "id int, name string"),
                       ignore_metadata=True)
    assert [f.metadata.get("comment") for f in spark.table(f"{isolated}_docs.basic").schema] == [
        "Unique ID", "Name corresponding to the ID"]
