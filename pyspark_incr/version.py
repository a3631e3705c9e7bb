"""The package's version, in a ground module so every room can read it without importing the package's facade."""

import hashlib
from pathlib import Path

__version__ = "0.1.0"


def code_digest(*folders: str) -> str:
    """The package version, sqlglot's and a digest of the source of ``folders`` (subpackages of pyspark_incr):
    what a record computed by that code and kept in state is valid for (a change there makes it stale)."""
    import sqlglot  # here: ``import pyspark_incr`` (this module's importer) stays cheap, sqlglot took 0.14-0.2 s

    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            try:
                digest.update(path.read_bytes())
            except OSError:  # an install without sources: the versions alone must do
                digest.update(b"?")
    return f"{__version__}/sqlglot {sqlglot.__version__}/{digest.hexdigest()[:16]}"
