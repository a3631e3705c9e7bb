"""One writer per model kind, found in :data:`WRITERS` by kind name."""

from pyspark_incr.model.definition import Model
from pyspark_incr.writers import cursor, full, partition, scd2, seed, time_range, unique_key, unmanaged, view  # noqa: F401 - importing registers them
from pyspark_incr.writers.base import WRITERS, BuildContext, writer_for


def can_build(model: Model) -> bool:
    """True when this version can materialize ``model`` (or there is nothing to materialize)."""
    return not model.kind.builds_object or model.kind.name in WRITERS


__all__ = ["WRITERS", "BuildContext", "can_build", "writer_for"]
