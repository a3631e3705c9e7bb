"""The ``--metastore`` and ``--postgres`` options of the hot-path benchmarks: a Hive metastore service for the run.

In real use a scheduled job shares a metastore service with other applications, so each metastore call is a
thrift round trip; the embedded Derby of one application answers inside its own JVM. With ``--metastore`` a
benchmark starts the service the race trials use (``tests/services/metastore.py``: Derby inside it) under its
work directory, or keeps the service's catalog in a PostgreSQL database (``--postgres URL``, as
docs/operations.md sets one up; ``scripts/services.sh`` starts a server; the schema is created on first use).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from services.metastore import MetastoreService  # noqa: E402

#: The Spark setting pointing an application at the service.
URIS = "spark.hadoop.hive.metastore.uris"


def add_options(parser: argparse.ArgumentParser) -> None:
    """``--metastore`` and ``--postgres URL``."""
    parser.add_argument("--metastore", action="store_true",
                        help="use a Hive metastore thrift service started for the run, not the embedded Derby")
    parser.add_argument("--postgres", default=None, metavar="postgresql://USER:PASSWORD@HOST:PORT/DB",
                        help="with --metastore: the service keeps its catalog in this PostgreSQL database "
                             "(its schema created on first use; scripts/services.sh starts a server)")


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse ``--postgres`` without ``--metastore``."""
    if args.postgres and not args.metastore:
        parser.error("--postgres: only with --metastore (it is where the service keeps the catalog)")


def kind(args: argparse.Namespace) -> str:
    """What keeps the catalog, as a name for a home of its own: ``embedded``, ``service`` or ``pg``."""
    return "pg" if args.postgres else "service" if args.metastore else "embedded"


def started(work: Path, args: argparse.Namespace) -> MetastoreService:
    """A metastore service under ``work`` (``metastore_<kind>``): Derby inside it, or ``--postgres``'s database
    (its schema made once)."""
    home = Path(work) / f"metastore_{kind(args)}"
    database = None
    if args.postgres:
        import race

        database = race.postgres(args.postgres)
        made = home / "schema-of"
        if not made.exists() or made.read_text() != args.postgres:
            database.create_schema(home / "schema")
            made.write_text(args.postgres)
    print(f"# a metastore service ({'PostgreSQL' if database else 'Derby inside it'}) under {home}", file=sys.stderr)
    return MetastoreService.start(home, database)
