"""One writer per model kind, found in :data:`WRITERS` by kind name."""

from pyspark_incr.writers import full, time_range, view  # noqa: F401 - importing registers them
from pyspark_incr.writers.base import WRITERS, BuildContext, writer_for

__all__ = ["WRITERS", "BuildContext", "writer_for"]
