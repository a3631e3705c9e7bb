"""How loading a project hands on a problem: the CALLs stop at the first, ``pyspark-incr validate`` notes each.

Collecting lets a user fix every broken file in one pass instead of one per attempt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from pyspark_incr.errors import IncrError

#: Called with the file at fault and its error; when it returns, loading goes on without that file's part.
Report = Callable[[Path, IncrError], None]


def raise_first(path: Path, error: IncrError) -> None:
    """The CALLs' way: the first problem stops loading, with the error the file caused."""
    raise error
