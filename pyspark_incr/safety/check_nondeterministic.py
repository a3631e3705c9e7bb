"""The nondeterministic rule: functions whose value differs from run to run."""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp

from pyspark_incr.safety.context import _Context
from pyspark_incr.safety.rules import Finding

# sqlglot parses some nondeterministic functions to their own classes,
# the rest stay Anonymous; both are checked.
_NONDETERMINISTIC_NAMES = frozenset(
    {
        "rand", "randn", "random", "uuid", "shuffle", "now", "current_timestamp", "current_date",
        "localtimestamp", "unix_timestamp", "monotonically_increasing_id", "spark_partition_id",
        "input_file_name",
    }
)
_NONDETERMINISTIC_CLASSES = tuple(
    getattr(exp, name)
    for name in ("Rand", "Randn", "Uuid", "Shuffle", "CurrentTimestamp", "CurrentDate", "Localtimestamp")
    if hasattr(exp, name)
)


def _nondeterministic(ctx: _Context) -> Iterable[Finding]:
    for node in ctx.source.tree.walk():
        if isinstance(node, exp.StrToUnix) and isinstance(node.this, exp.CurrentTimestamp):
            # unix_timestamp() is parsed as UNIX_TIMESTAMP(CURRENT_TIMESTAMP()): one finding.
            construct = "UNIX_TIMESTAMP()" if "start" not in node.this.meta else None
            yield ctx.finding("nondeterministic", node, ctx.source.start(node), construct)
        elif _is_nondeterministic(node):
            yield ctx.finding("nondeterministic", node, ctx.source.start(node))


def _is_nondeterministic(node: exp.Expr) -> bool:
    if isinstance(node, exp.CurrentTimestamp) and isinstance(node.parent, exp.StrToUnix):
        return False
    if isinstance(node, _NONDETERMINISTIC_CLASSES):
        return True
    if isinstance(node, exp.Anonymous):
        return node.name.lower() in _NONDETERMINISTIC_NAMES
    # Spark reads a bare `localtimestamp` as the function; sqlglot as a column.
    return isinstance(node, exp.Column) and not node.table and node.name.lower() == "localtimestamp"
