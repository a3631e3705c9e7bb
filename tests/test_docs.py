"""The docs stay true: the procedure reference is the registry's, and the quickstart names real files."""

from __future__ import annotations

from pathlib import Path

from pyspark_incr.procedures.reference import markdown

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_procedure_reference_matches_the_registry():
    assert (DOCS / "procedures.md").read_text() == markdown(), (
        "docs/procedures.md is stale: python -m pyspark_incr.procedures.reference > docs/procedures.md"
    )


def test_docs_link_only_to_files_that_exist():
    import re

    root = DOCS.parent
    for page in [*DOCS.glob("*.md"), root / "README.md"]:
        for target in re.findall(r"\]\(([^)#:]+)\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_the_shim_table_in_the_architecture_page_matches_the_java_sources():
    import re

    sources = DOCS.parent / "jvm-shim" / "src" / "pysparkincr"
    actual = {path.stem: len(path.read_text().splitlines()) for path in sources.glob("*.java")}
    page = (DOCS / "architecture.md").read_text()
    listed = {name: int(lines) for name, lines in re.findall(r"^\| `(\w+)` \| (\d+) \|", page, re.M)}
    total = re.search(r"only what must run in the JVM: ([\d,]+) lines in (\d+) classes", page)

    assert listed == actual, "docs/architecture.md#the-shim: update the table (wc -l jvm-shim/src/pysparkincr/*.java)"
    assert total and (int(total[1].replace(",", "")), int(total[2])) == (sum(actual.values()), len(actual))
    for name in actual:
        head = (sources / f"{name}.java").read_text().split("*/", 1)[0]
        assert "Why Java:" in head, f"{name}.java: its first comment must say why it cannot live in Python"


def test_describe_procedure_shows_the_real_parameters_of_run(spark):
    text = "\n".join(" ".join(str(v) for v in row) for row in spark.sql("DESCRIBE PROCEDURE incr.run").collect())

    for parameter in ("env", "select", "start", "end", "execution_time", "ignore_cron"):
        assert parameter in text
    assert "scheduled job" in text


def test_show_procedures_lists_every_registered_procedure(spark):
    listed = {row[-1] for row in spark.sql("SHOW PROCEDURES IN incr").collect()}

    assert {"create_model", "drop_model", "plan", "apply", "run", "status", "version"} <= listed
