"""One error hierarchy for everything a user can get wrong, and its catalogue of error classes.

Every message names the thing at fault (model, file, argument) and the fix. Each class
carries an error class (``condition``) and a SQLSTATE, as Spark's own errors do: the
bridge raises them in the JVM as a ``SparkThrowable``, so spark-sql and beeline print
``[INCR_UNKNOWN_MODEL] No model matches 'x'. ... SQLSTATE: 42P01`` and PySpark and
Spark Connect clients read ``getCondition()``. docs/errors.md lists the catalogue
(:data:`CATALOGUE`); tests/test_errors.py keeps the two equal.
"""

from __future__ import annotations

from typing import Any, ClassVar

#: The class of an unexpected exception (a bug in pyspark-incr): its trace is always shown.
INTERNAL_CONDITION, INTERNAL_SQLSTATE = "INCR_INTERNAL_ERROR", "XX000"


class IncrError(Exception):
    """Base class of all pyspark-incr errors shown to users."""

    #: The error class Spark shows in brackets; unique per class (tests/test_errors.py).
    condition: ClassVar[str] = "INCR_ERROR"
    #: The SQLSTATE Spark shows after the message (five characters).
    sqlstate: ClassVar[str] = "XX000"

    def getCondition(self) -> str:  # noqa: N802 - PySpark's exceptions spell it so
        """The error class, as PySpark's ``PySparkException.getCondition()``."""
        return self.condition

    def getSqlState(self) -> str:  # noqa: N802
        """The SQLSTATE, as PySpark's ``PySparkException.getSqlState()``."""
        return self.sqlstate


class ModelDefinitionError(IncrError):
    """A MODEL block (or a project file) is malformed or inconsistent."""

    condition, sqlstate = "INCR_INVALID_MODEL", "42000"


class ModelSyntaxError(ModelDefinitionError):
    """A model's or audit's query does not parse; the message shows the line with a caret."""

    condition, sqlstate = "INCR_MODEL_SYNTAX_ERROR", "42601"


class UnknownMacroError(ModelDefinitionError):
    """A query calls a macro (``@EACH(...)``, ``@{x}``) that pyspark-incr does not evaluate."""

    condition, sqlstate = "INCR_UNKNOWN_MACRO", "42883"


class UnsafeModelError(ModelDefinitionError):
    """A time-sliced model the safety gate refuses: on a slice it may compute other rows than on all data."""

    condition, sqlstate = "INCR_UNSAFE_QUERY", "42000"


class ArgumentError(IncrError):
    """A procedure argument is missing, unknown or has a bad value."""

    condition, sqlstate = "INCR_INVALID_ARGUMENT", "22023"


class UnknownModelError(ArgumentError):
    """A model name (or a selector) that matches no registered or project model."""

    condition, sqlstate = "INCR_UNKNOWN_MODEL", "42P01"


class ModelQueryError(IncrError):
    """Spark refused a model's query (missing table, bad column, ...)."""

    condition, sqlstate = "INCR_MODEL_QUERY_FAILED", "42000"


class DuplicateKeyError(ModelQueryError):
    """A unique-key model's batch produced two rows for one key; nothing of the batch is written."""

    condition, sqlstate = "INCR_DUPLICATE_KEY", "23505"


class StateError(IncrError):
    """The catalog-resident state is unreadable or inconsistent."""

    condition, sqlstate = "INCR_STATE_UNREADABLE", "55000"


class BridgeError(IncrError):
    """The JVM shim or the Python worker could not be set up."""

    condition, sqlstate = "INCR_BRIDGE_FAILED", "58000"


class AuditFailed(IncrError):
    """A blocking audit found rows that break it; the batch's interval is not recorded."""

    condition, sqlstate = "INCR_AUDIT_FAILED", "23000"


class BatchesFailed(IncrError):
    """``raise_on_failure``: a call finished and recorded its state, and some of its steps failed."""

    condition, sqlstate = "INCR_BATCHES_FAILED", "38000"


class LockTimeout(IncrError):
    """Another call held a lock on what this call writes for longer than ``spark.incr.lockTimeout``."""

    condition, sqlstate = "INCR_LOCK_TIMEOUT", "55P03"


class Claimed(LockTimeout):
    """What this call writes is claimed by another call, which was still at work when the wait ran out."""

    condition, sqlstate = "INCR_CLAIMED", "55P03"

    def __init__(self, message: str, holder: Any) -> None:
        super().__init__(message)
        #: The ``state.claims.Holder`` of the claim: run, application, host and since when.
        self.holder = holder


class PromotionError(IncrError):
    """An environment's view of a model cannot be created where something else already stands."""

    condition, sqlstate = "INCR_VIEW_CONFLICT", "42P07"


class LocationTaken(IncrError):
    """A table cannot be created: its directory already holds files of a table the catalog does not know."""

    condition, sqlstate = "INCR_LOCATION_TAKEN", "42710"


class MetastoreUnavailable(IncrError):
    """The Hive metastore could not be reached (a service down, or not reachable from this application)."""

    condition, sqlstate = "INCR_METASTORE_UNAVAILABLE", "08006"


class ClaimLost(IncrError):
    """Another application took over a claim this call held (its lease ran out): it stopped writing."""

    condition, sqlstate = "INCR_CLAIM_LOST", "40001"


class PlotUnavailable(IncrError):
    """``--png`` was asked for without matplotlib installed."""

    condition, sqlstate = "INCR_PLOT_UNAVAILABLE", "0A000"


class AdoptRefused(ArgumentError):
    """``incr.adopt``: the table cannot become the model's table (missing, mismatched, owned, already built)."""

    condition, sqlstate = "INCR_ADOPT_REFUSED", "42000"


class LintFailed(ModelDefinitionError):
    """``incr.plan``/``incr.apply`` with the linter enabled: a model breaks a rule of ``linter.rules``."""

    condition, sqlstate = "INCR_LINT_FAILED", "42000"


#: Every error class a user can meet, in the order docs/errors.md lists them.
CATALOGUE: tuple[type[IncrError], ...] = tuple(
    v for v in list(globals().values()) if isinstance(v, type) and issubclass(v, IncrError))
