"""How far a model's batches may overlap, and why fewer than it asks for."""

from __future__ import annotations

import re

from pyspark_incr.model.definition import Model
from pyspark_incr.model.macros import PREFIX, THIS_MODEL

_READS_ITSELF = re.compile(rf"\b{PREFIX}{THIS_MODEL}\b", re.IGNORECASE)


def batch_concurrency(model: Model) -> tuple[int, str]:
    """How many of ``model``'s batches may run at once, and why fewer than it asks for (empty when not).

    Order matters when a batch builds on what earlier ones wrote: merges, history and cursors
    (the kind says so), and queries that read the model's own table.

    >>> from pyspark_incr.model.definition import parse_model
    >>> batch_concurrency(parse_model("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, "
    ...     "batch_concurrency 4)); SELECT ds FROM @this_model"))
    (1, 'batch concurrency forced to 1: the query reads the model itself, so batches must run in order')
    """
    wanted = getattr(model.kind, "batch_concurrency", None) or 1
    if wanted <= 1:
        return 1, ""
    if model.kind.ordered_batches:
        return 1, f"batch concurrency forced to 1: each {model.kind.name} batch builds on the previous one"
    if model.name in model.depends_on or (model.query and _READS_ITSELF.search(model.query)):
        return 1, "batch concurrency forced to 1: the query reads the model itself, so batches must run in order"
    time_column = getattr(model.kind, "time_column", None)
    if model.partitioned_by and [c.lower() for c in model.partitioned_by] != [str(time_column).lower()]:
        return 1, "batch concurrency forced to 1: partitioned_by is not the time column, so batches share partitions"
    return wanted, ""
