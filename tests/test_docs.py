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


def test_every_subcommand_and_option_of_the_command_is_in_the_cli_page():
    import re

    from pyspark_incr import cli

    page = (DOCS / "cli.md").read_text()
    listed = set(re.findall(r"^\| `([a-z-]+)[ `]", page, re.M))
    verbs = cli._parser()._subparsers._group_actions[0].choices
    assert set(verbs) <= listed, f"docs/cli.md#subcommands lacks {sorted(set(verbs) - listed)}"
    for verb, parser in verbs.items():
        for action in parser._actions:
            if action.option_strings and action.dest != "help":
                flag = action.option_strings[0]
                assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", page), f"docs/cli.md lacks {verb} {flag}"


def test_every_setting_the_scheduled_jobs_read_is_in_the_jobs_page():
    import ast
    import re

    jobs = DOCS.parent / "sql" / "jobs"
    page = (DOCS / "jobs.md").read_text()
    read = set(re.findall(r"\$\{(\w+)\}", (jobs / "run.sql").read_text()))
    for node in ast.walk(ast.parse((jobs / "run_job.py").read_text())):
        if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        target = ast.unparse(node.func)
        # arguments, environment variables and Spark confs the job reads
        if name == "add_argument" or "environ" in target or name == "getenv" or target.endswith("conf.get"):
            read.add(node.args[0].value)
    assert {"--env", "--select", "--execution-time", "--concurrency", "--fail-fast", "env", "select",
            "execution_time"} <= read
    missing = sorted(name for name in read if f"`{name}" not in page)
    assert not missing, f"docs/jobs.md does not name {missing}"


def test_every_extra_the_docs_install_is_declared():
    import re
    import tomllib

    extras = set(tomllib.loads((DOCS.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    for page in [*DOCS.glob("*.md"), DOCS.parent / "README.md"]:
        for named in re.findall(r"pyspark-incr\[([\w,-]+)\]", page.read_text()):
            assert set(named.split(",")) <= extras, f"{page.name} installs pyspark-incr[{named}]"
