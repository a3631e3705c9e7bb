"""The window rule: a window not partitioned by the partition column nor bounded in time."""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp

from pyspark_incr.safety.context import _Context
from pyspark_incr.safety.rules import Finding

def _windows(ctx: _Context) -> Iterable[Finding]:
    for window in (n for n in ctx.main if isinstance(n, exp.Window) and n.args.get("over")):
        spec = _named_window(window) or window
        column = ctx.partitioned(spec.args.get("partition_by") or [])
        if column:
            ctx.admit(f"window partitioned by {column}", window, ctx.source.start(window))
        elif _bounded_range(spec.args.get("spec")):
            # Its lookback is derived by the bounds module and read from the source.
            ctx.admit("window with a bounded RANGE BETWEEN INTERVAL frame", window, ctx.source.start(window))
        else:
            yield ctx.finding("window", window, ctx.source.start(window))


def _named_window(window: exp.Window) -> exp.Window | None:
    # `OVER w ... WINDOW w AS (PARTITION BY ...)`: judge the named definition.
    name, select = window.args.get("alias"), window.parent_select
    if name is None or select is None or window.args.get("partition_by") or window.args.get("spec"):
        return None
    for named in select.args.get("windows") or []:
        if named.this.name.lower() == name.name.lower():
            return named
    return None


def _bounded_range(spec: exp.WindowSpec | None) -> bool:
    # RANGE BETWEEN INTERVAL '..' PRECEDING AND (CURRENT ROW | INTERVAL '..' ...): a time bound.
    # ROWS frames count rows, which differ on a slice, so they are not bounded in time.
    if spec is None or str(spec.args.get("kind", "")).upper() != "RANGE":
        return False
    start, end = spec.args.get("start"), spec.args.get("end")
    if not isinstance(start, exp.Interval) or str(spec.args.get("start_side", "")).upper() != "PRECEDING":
        return False
    return end is None or isinstance(end, exp.Interval) or str(end).upper() == "CURRENT ROW"
