"""The docs site: every SQL block of the quickstart runs and returns what the page shows, and the site builds cleanly.

``tests/test_docs.py`` keeps the checked-in procedure reference and the page links true;
this module executes the quickstart page itself and builds the mkdocs site.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from pyspark_incr.sqltext import split_statements

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "quickstart.md"
SCRIPT = REPO / "sql" / "quickstart.sql"
#: Schemas the quickstart creates under fixed names (its raw data, and prod's views of its models).
QUICKSTART_SCHEMAS = ("quickstart", "quickstart_raw")


@dataclass(frozen=True)
class Block:
    """One ```sql block of a page: its statements, and the result table the page shows after it (if any)."""

    statements: tuple[str, ...]
    #: Column names, then one tuple of cell texts per row; None when the page shows no table for the block.
    claimed: tuple[tuple[str, ...], tuple[tuple[str, ...], ...]] | None


def sql_blocks(markdown: str) -> list[Block]:
    """The page's ```sql blocks in order, each with the Markdown table that follows it before the next block or heading."""
    blocks: list[Block] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```sql":
            i += 1
            continue
        end = lines.index("```", i + 1)
        statements = tuple(split_statements("\n".join(lines[i + 1:end])))
        i = end + 1
        table: list[str] = []
        while i < len(lines) and not lines[i].startswith(("```", "#")):
            if lines[i].startswith("|"):
                table.append(lines[i])
            elif table:
                break
            i += 1
        blocks.append(Block(statements, _parse_table(table) if table else None))
    return blocks


def _parse_table(lines: list[str]) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    def cells(line: str) -> tuple[str, ...]:
        return tuple(c.strip() for c in line.strip().strip("|").split("|"))

    return cells(lines[0]), tuple(cells(line) for line in lines[2:])


def cell_text(value: object) -> str:
    """A result value written as the page writes it: empty for NULL, a bare date for midnight."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d" if value.time() == datetime.min.time() else "%Y-%m-%d %H:%M:%S")
    return str(value)


def normalized(statement: str) -> str:
    """A statement without its comment lines and with whitespace collapsed."""
    code = [line for line in statement.splitlines() if not line.strip().startswith("--")]
    return " ".join(" ".join(code).split())


def test_the_quickstart_page_shows_exactly_the_statements_of_the_quickstart_script():
    page = [normalized(s) for block in sql_blocks(PAGE.read_text()) for s in block.statements]
    script = [normalized(s) for s in split_statements(SCRIPT.read_text())]

    assert page == script, "docs/quickstart.md and sql/quickstart.sql must show the same statements in the same order"


def _drop_quickstart_schemas(spark) -> None:
    # Their names are fixed by the page; tests/test_quickstart.py runs the same script on the default state.
    for schema in QUICKSTART_SCHEMAS:
        spark.sql(f"DROP DATABASE IF EXISTS `{schema}` CASCADE")


@pytest.fixture(scope="module")
def executed(spark, module_isolated):
    """Every statement of every ```sql block of the quickstart page, run in order: (block, statement, rows)."""
    _drop_quickstart_schemas(spark)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(REPO)  # the page names the example project by its path in the repository
            results = []
            for block in sql_blocks(PAGE.read_text()):
                for statement in block.statements:
                    results.append((block, statement, spark.sql(statement).collect()))
        yield results
    finally:
        _drop_quickstart_schemas(spark)


def _rows_of(executed, prefix: str) -> list[list]:
    return [rows for _, statement, rows in executed if normalized(statement).startswith(prefix)]


def test_every_result_table_on_the_quickstart_page_is_what_spark_returns(executed):
    checked = 0
    for block, statement, rows in executed:
        if block.claimed is None or statement != block.statements[-1]:
            continue
        columns, claimed = block.claimed
        actual = tuple(tuple(cell_text(row[c]) for c in columns) for row in rows)
        assert actual == claimed, f"docs/quickstart.md shows other rows for: {normalized(statement)}"
        checked += 1

    assert checked == 5, "the page shows results for plan, apply, the second run, status and the query"


def test_the_quickstart_apply_builds_seven_days_and_the_second_run_exactly_one(executed):
    apply_rows, = _rows_of(executed, "CALL incr.apply(")
    same_time, next_day = _rows_of(executed, "CALL incr.run(")

    daily = [r for r in apply_rows if r.model == "quickstart.daily_revenue"]
    assert [(r.intervals, r.status) for r in daily] == [(7, "ok")]
    assert same_time == []
    assert [(r.start.date().isoformat(), r.end.date().isoformat(), r.intervals)
            for r in next_day if r.model == "quickstart.daily_revenue"] == [("2024-01-08", "2024-01-09", 1)]


def test_the_quickstart_query_shows_the_five_best_customers_of_the_raw_data(spark, executed):
    actual = spark.sql([s for _, s, _ in executed][-1])
    revenue = actual.schema["revenue"].dataType  # a SUM of SUMs is wider; the values are the claim
    expected = (spark.table("quickstart_raw.events").where(F.col("event_date") < F.lit("2024-01-09").cast("date"))
                .groupBy("customer_id").agg(F.sum("amount").cast(revenue).alias("revenue"))
                .orderBy(F.desc("revenue"), "customer_id").limit(5))

    assert_df_equality(actual, expected, ignore_nullable=True)


def test_the_site_renders_the_procedure_reference_from_the_registry():
    from importlib.util import module_from_spec, spec_from_file_location

    from pyspark_incr.procedures.reference import markdown

    spec = spec_from_file_location("mkdocs_hooks", REPO / "scripts" / "mkdocs_hooks.py")
    hooks = module_from_spec(spec)
    spec.loader.exec_module(hooks)
    page = SimpleNamespace(file=SimpleNamespace(src_uri="procedures.md"))
    other = SimpleNamespace(file=SimpleNamespace(src_uri="kinds.md"))

    assert hooks.on_page_read_source(page, None) == markdown()
    assert hooks.on_page_read_source(other, None) is None


_CALL = re.compile(r"CALL\s+incr\.(\w+)\s*\(([^;`]*?)\)\s*;", re.IGNORECASE)


def test_every_call_on_the_site_names_a_real_procedure_and_real_parameters():
    from pyspark_incr.procedures import REGISTRY, load_all

    load_all()
    calls = [(page.name, m) for page in sorted((REPO / "docs").glob("*.md")) if page.name != "procedures.md"
             for m in _CALL.finditer(page.read_text())]
    for page, call in calls:
        name, args = call.group(1), call.group(2)
        assert name in REGISTRY, f"docs/{page}: CALL incr.{name} is no procedure"
        params = {p.name for p in REGISTRY[name].params}
        for arg in re.findall(r"(\w+)\s*=>", args):
            assert arg in params, f"docs/{page}: incr.{name} has no parameter {arg!r} (it has {sorted(params)})"
    assert len(calls) > 50


@pytest.mark.parametrize("page", ["migration-sqlmesh.md", "migration-dbt.md", "intervals.md", "operations.md"])
def test_every_model_on_the_new_pages_parses(page):
    from pyspark_incr.model.definition import parse_model

    blocks = [b for b in re.findall(r"```sql\n(.*?)```", (REPO / "docs" / page).read_text(), re.S)
              if b.lstrip().startswith("MODEL")]
    for block in blocks:
        parse_model(block, f"docs/{page}")


def test_the_docs_site_builds_without_a_warning(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    output = proc.stdout + proc.stderr
    warnings = [line for line in output.splitlines() if line.startswith(("WARNING", "ERROR"))]

    assert proc.returncode == 0 and not warnings, output
    reference = (tmp_path / "site" / "procedures" / "index.html").read_text()
    assert re.search(r"<h2 id=\"incrrun\">", reference), "the site's procedure reference lacks incr.run"
