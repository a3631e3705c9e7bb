"""How far a model's batches may overlap, and why fewer than it asks for."""

from __future__ import annotations

import re

from pyspark_incr.model.definition import Model
from pyspark_incr.model.macros import PREFIX, THIS_MODEL

_READS_ITSELF = re.compile(rf"\b{PREFIX}{THIS_MODEL}\b", re.IGNORECASE)


#: A model's batches may run as many at once as the call allows (``concurrency``): SQLMesh's default, where an
#: unset ``batch_concurrency`` is "only constrained by the number of concurrent tasks".
AS_THE_CALL_ALLOWS = 0


def batch_concurrency(model: Model) -> tuple[int, str]:
    """How many of ``model``'s batches may run at once (:data:`AS_THE_CALL_ALLOWS` for a kind with a
    ``batch_concurrency`` property left unset), and why fewer than it asks for (empty when not).

    Order matters when a batch builds on what earlier ones wrote: merges, history and cursors
    (the kind says so), and queries that read the model's own table; and, unless asked for, for a
    model with pre/post-statements. A limit the model never asked for is lowered silently.

    >>> from pyspark_incr.model.definition import parse_model
    >>> batch_concurrency(parse_model("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds, "
    ...     "batch_concurrency 4)); SELECT ds FROM @this_model"))
    (1, 'batch concurrency forced to 1: the query reads the model itself, so batches must run in order')
    >>> batch_concurrency(parse_model("MODEL (name a.b, kind INCREMENTAL_BY_TIME_RANGE (time_column ds)); SELECT ds"))
    (0, '')
    """
    if not hasattr(model.kind, "batch_concurrency"):  # kinds without the property build their batches in order
        return 1, ""
    asked = model.kind.batch_concurrency
    why = _in_order(model)
    if asked is not None and asked <= 1:
        return 1, ""
    if why:
        return 1, f"batch concurrency forced to 1: {why}" if asked is not None else ""
    if asked is None and (model.pre_statements or model.post_statements):
        # statements run in the call's session: a SET or temporary view of one batch is the next one's, as when
        # batches run one at a time (batch_concurrency asks for overlap, with statements sharing the session)
        return 1, ""
    return (asked if asked is not None else AS_THE_CALL_ALLOWS), ""


def _in_order(model: Model) -> str:
    """Why ``model``'s batches must run one after the other; empty when they need not."""
    if model.kind.ordered_batches:
        return f"each {model.kind.name} batch builds on the previous one"
    if model.name in model.depends_on or (model.query and _READS_ITSELF.search(model.query)):
        return "the query reads the model itself, so batches must run in order"
    time_column = getattr(model.kind, "time_column", None)
    if model.partitioned_by and [c.lower() for c in model.partitioned_by] != [str(time_column).lower()]:
        return "partitioned_by is not the time column, so batches share partitions"
    return ""
