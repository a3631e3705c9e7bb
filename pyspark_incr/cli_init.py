"""``pyspark-incr init [DIR]``: a project skeleton that runs as it is, as ``sqlmesh init`` writes one.

The files live in ``pyspark_incr/_skeleton`` (shipped in the wheel with the package), so what
``init`` writes is what ``tests/test_cli_init.py`` validates and applies.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from pyspark_incr.sqltext import call_sql

SKELETON = Path(__file__).resolve().parent / "_skeleton"


def skeleton_files() -> list[str]:
    """The skeleton's files, relative to the project root, in POSIX form (an editor's hidden files left out)."""
    found = [p.relative_to(SKELETON) for p in SKELETON.rglob("*") if p.is_file()]
    return sorted(p.as_posix() for p in found if not any(part.startswith((".", "__")) for part in p.parts))


def command(target: Path) -> int:
    """Write the skeleton into ``target``; refuse (2, nothing written) when it holds any of its files."""
    target = target.resolve()
    files = skeleton_files()
    present = [name for name in files if (target / name).exists()]
    if present:
        print(f"pyspark-incr init: {target} already holds {', '.join(present)}; "
              "remove them or name another directory", file=sys.stderr)
        return 2
    for name in files:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SKELETON / name, target / name)
    shell = shlex.quote(str(target))
    print(f"Wrote a project to {target}: {', '.join(files)}. Check and run it:\n"
          f"  pyspark-incr validate {shell}\n"
          f"  pyspark-incr apply --project {shell} --execution-time '2024-01-08 00:00:00'\n"
          f"or in Spark SQL: {call_sql('apply', project=str(target), execution_time='2024-01-08 00:00:00')};")
    return 0
