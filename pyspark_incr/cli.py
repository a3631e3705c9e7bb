"""The ``pyspark-incr`` command: the embedded default (local Spark, persistent catalog) from a shell.

Every subcommand that touches tables goes through the same CALL statements a Spark SQL user
types, its options derived from the procedure's parameters (``cli_args``); ``init``,
``validate``, ``lint`` and ``format`` work on project files alone, without Spark.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from pyspark_incr.sqltext import call_sql, split_statements

_PACKAGE = Path(__file__).resolve().parent
#: The quickstart's files, in the checkout's layout: the script, the scheduled jobs, the example project.
QUICKSTART_FILES = ("sql/quickstart.sql", "sql/jobs/run.sql", "sql/jobs/run_job.py", "examples/quickstart")


def examples_root() -> Path:
    """Where ``sql/quickstart.sql`` and ``examples/quickstart`` are: a checkout, else the wheel's copy."""
    for root in (_PACKAGE.parent, _PACKAGE / "_quickstart"):
        if (root / "sql" / "quickstart.sql").is_file() and (root / "examples" / "quickstart").is_dir():
            return root
    from pyspark_incr.errors import BridgeError

    raise BridgeError(f"Cannot find the quickstart's files under {_PACKAGE}: reinstall pyspark-incr from its wheel")


def default_home() -> Path:
    """Where the embedded catalog and warehouse live: $PYSPARK_INCR_HOME, else ./.incr."""
    return Path(os.environ.get("PYSPARK_INCR_HOME", ".incr")).resolve()


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if args.command not in _PASSTHROUGH and extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    from pyspark.errors import PySparkException

    from pyspark_incr.errors import IncrError

    try:
        return args.handler(args, extra)
    except (PySparkException, IncrError) as e:  # its message names the fault and the fix; no traceback
        print(f"pyspark-incr: {_first_lines(str(e))}", file=sys.stderr)
        return 1


def _first_lines(message: str) -> str:
    """The message without the JVM stack trace pyspark may append to it."""
    return message.split("\n\nJVM stacktrace:", 1)[0].strip()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pyspark-incr", description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=None, help="embedded catalog/warehouse directory (default: $PYSPARK_INCR_HOME or ./.incr)")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run sql/quickstart.sql end to end on the embedded default")
    demo.add_argument("--script", type=Path, default=None,
                      help="SQL script to run, with paths relative to the current directory "
                           "(default: the quickstart, from the checkout or the installed package)")
    demo.set_defaults(handler=_demo)
    quickstart = sub.add_parser("quickstart", help="write the quickstart (sql/, examples/quickstart) into a directory")
    quickstart.add_argument("dir", type=Path, nargs="?", default=Path("pyspark-incr-quickstart"),
                            help="where to write it (default: ./pyspark-incr-quickstart); must not hold its files yet")
    quickstart.set_defaults(handler=_quickstart)
    jar = sub.add_parser("jar-path", help="print the plugin's jar, for --jars / spark.jars / a cluster library")
    jar.set_defaults(handler=_jar_path)
    init = sub.add_parser("init", help="write a project skeleton (models, a seed, an audit, config.yaml) "
                                       "that runs as it is")
    init.add_argument("dir", type=Path, nargs="?", default=Path("."),
                      help="where to write it (default: the current directory); must not hold its files yet")
    init.set_defaults(handler=_init)
    validate = sub.add_parser("validate", help="check a project offline (no Spark): every problem with its "
                                               "file and line")
    validate.add_argument("dir", type=Path, nargs="?", default=Path("."),
                          help="the project directory (default: the current directory)")
    validate.set_defaults(handler=_validate)
    lint = sub.add_parser("lint", help="check the models against lint rules offline (no Spark): SQLMesh's, the "
                                       "safety check's, linter/*.py; config.yaml's linter: section picks them")
    lint.add_argument("dir", type=Path, nargs="?", default=Path("."),
                      help="the project directory (default: the current directory)")
    lint.set_defaults(handler=_lint)
    fmt = sub.add_parser("format", help="rewrite models/**/*.sql and audits/**/*.sql in one stable style")
    fmt.add_argument("--check", action="store_true",
                     help="change nothing; list the files that would change and exit 1 if there are any")
    fmt.add_argument("dir", type=Path, nargs="?", default=Path("."),
                     help="the project directory (default: the current directory)")
    fmt.set_defaults(handler=_format)
    from pyspark_incr.cli_docs import add_parser as add_docs

    add_docs(sub)
    sub.choices["docs"].set_defaults(handler=_docs)
    _procedure_verbs(sub)
    sql = sub.add_parser("spark-sql", help="pyspark's spark-sql with the plugin configured; other arguments pass through")
    sql.set_defaults(handler=_spark_sql)
    from pyspark_incr.bridge.servers import DEFAULT_HOST, SERVERS

    for name, kind in SERVERS.items():
        server = sub.add_parser(name, help=f"pyspark's {kind.title} with the plugin, in the foreground; "
                                           "other arguments pass through")
        server.add_argument("--port", type=int, default=None, help=f"default {kind.default_port}")
        server.add_argument("--host", default=DEFAULT_HOST,
                            help=f"address to bind (default {DEFAULT_HOST}; 0.0.0.0 for every interface)")
        server.set_defaults(handler=_server)
    return parser


def _procedure_verbs(sub: Any) -> None:
    """One subcommand per verb of ``cli_args.VERBS``, its options the procedure's parameters."""
    from pyspark_incr.cli_args import STATUS_PARAMS, VERBS, add_params, procedure_specs

    specs = procedure_specs()
    for verb, name in VERBS.items():
        spec = specs[name]
        summary = spec.description.split(". ")[0].rstrip(".").replace("%", "%%")
        p = sub.add_parser(verb, help=f"CALL incr.{name}(...): {summary}",
                           description=spec.description.replace("%", "%%"))
        add_params(p, spec, STATUS_PARAMS if verb == "status" else None)
        p.set_defaults(handler=_status if verb == "status" else _procedure, procedure=name)
    # ``pyspark-incr test [DIR]`` as ``sqlmesh test`` is typed; --project still works (suppressed: absent, it sets nothing)
    sub.choices["test"].add_argument("project", nargs="?", default=argparse.SUPPRESS, metavar="DIR",
                                     help="the project directory (default: the current directory)")
    status = sub.choices["status"]
    status.add_argument("--png", type=Path, default=None, help="also draw the coverage into this PNG file "
                                                               "(needs pip install 'pyspark-incr[plot]')")
    status.add_argument("--json", type=Path, default=None, help="also save the status rows to this JSON file")
    status.add_argument("--table", action="store_true", help="also print the rows of CALL incr.status")
    sub.choices["plan"].add_argument("--color", action=argparse.BooleanOptionalAction, default=None,
                                     help="colour the diffs (default: when stdout is a terminal)")


#: Subcommands whose unknown arguments go on to Spark rather than being refused.
_PASSTHROUGH = {"spark-sql", "thrift-server", "connect-server"}


def _session(args: argparse.Namespace) -> Any:
    from pyspark_incr.bridge.session import embedded_session

    home = args.home or default_home()
    home.mkdir(parents=True, exist_ok=True)
    spark = embedded_session(home)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _procedure(args: argparse.Namespace, _: list[str]) -> int:
    from pyspark_incr.cli_args import BUILDING

    spark = _session(args)
    if args.command not in BUILDING:
        return _call(spark, args)
    with _progress_bar():
        return _call(spark, args)


def _call(spark: Any, args: argparse.Namespace) -> int:
    from pyspark_incr.cli_args import call_args, procedure_specs

    spec = procedure_specs()[args.procedure]
    df = spark.sql(call_sql(spec.name, **call_args(spec, args)))
    return _show(f"incr.{spec.name}", df, getattr(args, "color", None))


def _init(args: argparse.Namespace, _: list[str]) -> int:
    from pyspark_incr.cli_init import command

    return command(args.dir)


def _validate(args: argparse.Namespace, _: list[str]) -> int:
    from pyspark_incr.cli_validate import command

    return command(args.dir)


def _lint(args: argparse.Namespace, _: list[str]) -> int:
    from pyspark_incr.plan import lint_safety  # noqa: F401 - registers the safety check's rules
    from pyspark_incr.project.lint import command

    return command(args.dir)


def _format(args: argparse.Namespace, _: list[str]) -> int:
    from pyspark_incr.project.format import command

    return command(args.dir, check=args.check)


def _docs(args: argparse.Namespace, _: list[str]) -> int:
    from pyspark_incr.cli_docs import command

    return command(args, lambda: _session(args))


def _demo(args: argparse.Namespace, _: list[str]) -> int:
    script = args.script.resolve() if args.script else None
    if script is not None and not script.is_file():
        print(f"pyspark-incr demo: {args.script} not found", file=sys.stderr)
        return 2
    spark = _session(args)
    if script is None:
        # The script names the example project by its path from the checkout's root; an installed
        # package's copy may be read-only, so it runs from a copy under the home directory.
        root = examples_root()
        if root != _PACKAGE.parent:
            root = _copy_quickstart(root, (args.home or default_home()) / "quickstart", replace=True)
        os.chdir(root)
        script = root / "sql" / "quickstart.sql"
    failed = 0
    for statement in split_statements(script.read_text(encoding="utf-8")):
        with _progress_bar():
            df = spark.sql(statement)
        title = _title(statement)
        if title.upper().startswith(("CALL", "SELECT")):
            failed |= _show(title, df)
    return failed


def _quickstart(args: argparse.Namespace, _: list[str]) -> int:
    target = args.dir.resolve()
    present = [name for name in QUICKSTART_FILES if (target / name).exists()]
    if present:
        print(f"pyspark-incr quickstart: {target} already holds {', '.join(present)}; "
              "remove them or name another directory", file=sys.stderr)
        return 2
    _copy_quickstart(examples_root(), target, replace=False)
    print(f"Wrote the quickstart to {target}. Run it:\n  cd {target}\n  pyspark-incr spark-sql -f sql/quickstart.sql")
    return 0


def _copy_quickstart(root: Path, target: Path, *, replace: bool) -> Path:
    """Copy the quickstart's files from ``root`` into ``target`` (same layout); ``target``."""
    for name in QUICKSTART_FILES:
        source, destination = root / name, target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, destination, dirs_exist_ok=replace)
        else:
            shutil.copyfile(source, destination)
    return target


def _jar_path(_: argparse.Namespace, __: list[str]) -> int:
    from pyspark_incr.bridge.jar import jar_path

    print(jar_path())
    return 0


@contextmanager
def _progress_bar() -> Iterator[None]:
    """A progress bar fed by the executor's events while a CALL runs in this process."""
    from pyspark_incr.cli_progress import progress_bar

    with progress_bar():
        yield


def _status(args: argparse.Namespace, _: list[str]) -> int:
    """The coverage timeline (``pyspark_incr.cli_status``); bad flags fail before Spark starts."""
    from pyspark_incr.cli_status import precheck, status_command
    from pyspark_incr.errors import IncrError

    try:
        precheck(args)
    except IncrError as e:
        print(f"pyspark-incr status: {e}", file=sys.stderr)
        return 2
    return status_command(_session(args), args)


def _title(statement: str) -> str:
    lines = [line for line in statement.splitlines() if line.strip() and not line.strip().startswith("--")]
    return " ".join(" ".join(lines).split())[:120]


def _show(title: str, df: Any, color: bool | None = None) -> int:
    """Print ``df`` as a table (a plan's diffs below it, coloured: ``cli_plan``); 1 when a row reports a failed step."""
    from rich.table import Table

    from pyspark_incr.cli_plan import console, print_changes

    rows = df.collect()
    columns = [c for c in df.columns if c != "diff"]
    table = Table(title=title, title_justify="left", show_lines=False)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*["" if row[c] is None else str(row[c]) for c in columns])
    if not rows:
        table.caption = "(no rows: nothing to do)"
    out = console(color)
    out.print(table)
    if "diff" in df.columns:
        print_changes(out, rows)
    statuses = {getattr(r, "status", None) for r in rows} if "status" in df.columns else set()
    return 1 if statuses & {"failed", "error"} else 0  # error: a unit test that could not run


def _spark_sql(args: argparse.Namespace, extra: list[str]) -> int:
    from pyspark_incr.bridge.session import spark_sql_command

    home = args.home or default_home()
    home.mkdir(parents=True, exist_ok=True)
    argv = spark_sql_command(home, extra)
    os.execvp(argv[0], argv)
    return 0  # not reached


def _server(args: argparse.Namespace, extra: list[str]) -> int:
    from pyspark_incr.bridge.servers import server_command

    home = args.home or default_home()
    home.mkdir(parents=True, exist_ok=True)
    argv = server_command(args.command, home, port=args.port, host=args.host, args=extra)
    os.execvp(argv[0], argv)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
