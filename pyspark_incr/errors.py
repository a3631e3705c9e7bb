"""One error hierarchy for everything a user can get wrong.

Every message names the thing at fault (model, file, argument) and the fix.
The bridge turns these into a Java ``IllegalArgumentException`` whose message
is exactly ``str(error)``, so spark-sql, JDBC and PySpark users all see it.
"""

from __future__ import annotations


class IncrError(Exception):
    """Base class of all pyspark-incr errors shown to users."""


class ModelDefinitionError(IncrError):
    """A MODEL block (or a project file) is malformed or inconsistent."""


class ArgumentError(IncrError):
    """A procedure argument is missing, unknown or has a bad value."""


class UnknownModelError(IncrError):
    """A model name that is neither registered nor in the project."""


class ModelQueryError(IncrError):
    """Spark refused a model's query (missing table, bad column, ...)."""


class StateError(IncrError):
    """The catalog-resident state is unreadable or inconsistent."""


class BridgeError(IncrError):
    """The JVM shim or the Python worker could not be set up."""


class AuditFailed(IncrError):
    """A blocking audit found rows that break it; the batch's interval is not recorded."""


class DuplicateKeyError(ModelQueryError):
    """A unique-key model's batch produced two rows for one key; nothing of the batch is written."""


class BatchesFailed(IncrError):
    """``raise_on_failure``: a call finished and recorded its state, and some of its steps failed."""


class LockTimeout(IncrError):
    """Another call held a lock on what this call writes for longer than ``spark.incr.lockTimeout``."""


class PromotionError(IncrError):
    """An environment's view of a model cannot be created where something else already stands."""


class ClaimLost(IncrError):
    """Another application took over a claim this call held (its lease ran out): it stopped writing."""
