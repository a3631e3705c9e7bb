"""Reading another application's tables from its warehouse's files, when its catalog is not at hand.

A test's own session has its own embedded catalog, so the tables another process
built (a spark-sql run, an installed wheel, a cluster) are read from their files:
the state says which physical table prod shows, the table's directory holds its rows.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import functions as F
from sqlglot import exp


def physical_dir(spark, warehouse: Path, model: str) -> Path:
    """The directory of the physical table prod shows ``model`` from, in ``warehouse``.

    That process's state says which table it is: its environments state table (append-only Parquet,
    folded in ``seq`` order) read from its files, the model's latest prod row.
    """
    latest = (spark.read.parquet(str(warehouse / "incr_state.db" / "environments"))
              .where((F.col("env") == "prod") & (F.col("model") == model)).orderBy(F.desc("seq")).first())
    assert latest is not None and latest.op == "apply", f"prod holds no version of {model}"
    table = exp.to_table(latest.table_name, dialect="spark")
    return warehouse / f"{table.db}.db" / table.name


def read_table_files(spark, root: Path):
    """A table's rows read from its directory.

    Batches publish generations (``_incr_gen_*`` beside the table's own files, see
    writers/generations.py); superseded files are deleted, so the live rows are the union of all.
    """
    def holds_rows(d: Path) -> bool:
        return any(not any(part.startswith("_") for part in f.relative_to(d).parts) for f in d.rglob("*.parquet"))

    dirs = [d for d in [root, *sorted(root.glob("_incr_gen_*"))] if holds_rows(d)]
    frames = [spark.read.parquet(str(d)) for d in dirs]
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def read_model(spark, warehouse: Path, model: str):
    """The rows prod shows for ``model``, from ``warehouse``'s files."""
    return read_table_files(spark, physical_dir(spark, warehouse, model))
