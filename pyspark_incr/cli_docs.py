"""``pyspark-incr docs build``: the static model site of a project (:mod:`pyspark_incr.site`).

The pages come from the project's files; the coverage timelines from ``CALL incr.status``
of ``--env`` (the embedded session starts, as for ``pyspark-incr status``), unless
``--no-coverage`` builds without Spark.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

#: Where the site goes by default: not ``site/``, which mkdocs builds into.
DEFAULT_OUT = Path("incr-site")


def add_parser(sub: Any) -> None:
    """``docs`` and its one sub-verb, ``build``, on the command's subparsers."""
    docs = sub.add_parser("docs", help="a static site of the project's models (HTML, offline): "
                                       "`pyspark-incr docs build`")
    verbs = docs.add_subparsers(dest="docs_command", required=True)
    build = verbs.add_parser("build", help="write a page per model (SQL, kind, columns, coverage, graph, "
                                           "column lineage) and the project's DAG")
    build.add_argument("--project", type=Path, default=Path("."),
                       help="the project directory (default: the current directory)")
    build.add_argument("--out", type=Path, default=DEFAULT_OUT,
                       help=f"where to write the site (default: ./{DEFAULT_OUT}); new, empty, or a site built before")
    build.add_argument("--env", default="prod", help="the environment whose coverage the pages show (default prod)")
    build.add_argument("--execution-time", default=None,
                       help="the moment coverage is read at, ISO, UTC (default: now)")
    build.add_argument("--no-coverage", action="store_true",
                       help="build without Spark; the timelines say coverage was not read")
    # SUPPRESS: absent here, it leaves the --home given before `docs` in place
    build.add_argument("--home", type=Path, default=argparse.SUPPRESS,
                       help="embedded catalog/warehouse directory (as `pyspark-incr --home`)")


def command(args: argparse.Namespace, session: Callable[[], Any]) -> int:
    """Build the site ``args`` describe; ``session()`` starts Spark, called only when coverage is read."""
    from pyspark_incr.cli_status import execution_ms
    from pyspark_incr.project.loader import load
    from pyspark_incr.site.build import build_site, check_out

    # a malformed time, a broken project or a taken --out fails before the seconds a Spark start costs
    until = execution_ms(args.execution_time)
    project = load(args.project)
    check_out(args.out)
    coverage = None if args.no_coverage else read_coverage(session(), args.env, until)
    written = build_site(project, args.out, coverage=coverage, until_ms=until, env=args.env)
    pages = f"{written.pages} page{'s' if written.pages != 1 else ''}"
    print(f"Wrote {pages} ({written.models} models and the project page) to {written.out}; "
          f"open {written.out / 'index.html'}")
    return 0


def read_coverage(spark: Any, env: str, until_ms: int) -> list:
    """Every model's coverage in ``env`` at ``until_ms``, from ``CALL incr.status``."""
    from pyspark_incr.cli_status import status_rows
    from pyspark_incr.coverage import coverages

    return coverages(status_rows(spark, None, env, until_ms))
