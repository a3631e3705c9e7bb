"""Static safety classifier for incremental models (spec: "Safety analysis").

A time-sliced run computes the model over one slice of its sources, then
replaces the slice's output partitions. Some SQL gives different rows on a
slice than on the full data; ``classify`` finds those constructs, with their
position in the model's query text, so the planner can refuse the model.

>>> classify("SELECT ds, COUNT(*) AS n FROM raw.events GROUP BY ds", ["ds"]).safe
True
>>> v = classify("SELECT id,\\n  ROW_NUMBER() OVER (ORDER BY ts) AS rn FROM t", ["ds"])
>>> [(f.rule, f.line, f.column, f.construct) for f in v.findings]
[('window', 2, 3, 'ROW_NUMBER() OVER (ORDER BY ts)')]

Scope decision: the data-shape rules (window, having, limit, distinct) judge
the main query -- its top level, CTEs, derived tables and set-operation
branches, all of which read the sliced sources. An expression subquery
(``IN (SELECT ...)``, ``EXISTS``, scalar) is judged as a whole by the
subquery rule instead: over lookup tables it reads the full tables on every
run, so a LIMIT or DISTINCT inside it is the same on every slice. The
nondeterministic rule applies everywhere.
"""

from collections.abc import Iterable, Mapping

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.overrides import OVERRIDE_RULES, OVERRIDES
from pyspark_incr.safety.check_nondeterministic import _nondeterministic
from pyspark_incr.safety.check_shape import _distincts, _havings, _limits
from pyspark_incr.safety.check_subqueries import _subqueries
from pyspark_incr.safety.check_time_grain import _coarse_times
from pyspark_incr.safety.check_windows import _windows
from pyspark_incr.safety.context import _Context
from pyspark_incr.safety.durations import _MS
from pyspark_incr.safety.located import _Source
from pyspark_incr.safety.rules import RULE_OVERRIDE, RULES, WHY, Finding, Verdict
from pyspark_incr.safety.tables import table_key

__all__ = ["OVERRIDES", "OVERRIDE_RULES", "RULES", "RULE_OVERRIDE", "WHY", "Finding", "Verdict", "classify",
           "finding_lines", "headline", "message"]

#: The interval length assumed when none is given: a daily model (cron @daily).
DAY_MS = _MS["day"]


def classify(
    query: str,
    partition_columns: Iterable[str],
    timeseries_sources: Iterable[str] = (),
    overrides: Iterable[str] = (),
    dialect: str = "spark",
    interval_ms: int = DAY_MS,
    *,
    time_column: str | None = None,
) -> Verdict:
    """Judge ``query`` for time-sliced runs of a model partitioned by ``partition_columns``.

    ``timeseries_sources`` are the sliced (``db.table``) sources; the others are lookup tables
    read in full. ``overrides`` are ``safety_overrides`` names (a mapping keeps its true keys).
    ``interval_ms`` is the length of the model's interval (a day unless said): grouping by a day or
    hour floor of a time column keeps each group within one interval only when its buckets fit in one.
    ``time_column`` is the partition column the output filter slices on (the first of ``partition_columns``
    unless said): it may not be written coarser than the interval, and only it, or a partition column written
    as a rounding of it that fits in the interval, makes a grouping, window or DISTINCT local to a slice.

    >>> v = classify("SELECT * FROM t LIMIT 10", ["ds"], overrides=["allow_limit"])
    >>> v.safe, v.admitted
    (True, ('allowed by allow_limit: LIMIT 10',))
    """
    allowed = _overridden_rules(overrides)
    source = _Source(query, dialect)
    partitions = [c.lower() for c in partition_columns]
    time_column = (time_column or next(iter(partitions), "")).lower() or None
    ctx = _Context(
        source,
        frozenset(partitions),
        frozenset(table_key(s) for s in timeseries_sources),
        interval_ms,
        time_column,
    )
    candidates = [*_windows(ctx), *_havings(ctx), *_limits(ctx), *_nondeterministic(ctx),
                  *_subqueries(ctx), *_distincts(ctx), *_coarse_times(ctx)]
    findings = [f for f in candidates if f.rule not in allowed]
    admitted = ctx.admitted + [((f.line, f.column), f"allowed by {RULE_OVERRIDE[f.rule]}: {f.construct}")
                               for f in candidates if f.rule in allowed]
    findings.sort(key=lambda f: (f.line, f.column, RULES.index(f.rule)))
    # Both in text order, so a report reads top to bottom.
    return Verdict(findings=tuple(findings), admitted=tuple(note for _, note in sorted(admitted)))


def message(model_name: str, verdict: Verdict) -> str:
    """The refusal shown to the user: each finding with its position, then the ways out.

    >>> print(message("m", classify("SELECT * FROM t LIMIT 10", ["ds"])))
    Incremental safety check refused model 'm': on a time slice it may compute different rows than on the full data.
      line 1, column 17: LIMIT 10: LIMIT on partial data returns different rows than on the full table.
    Fix the SQL, or set safety_overrides (allow_limit: true) if you have verified this usage is safe on partial data, or pass allow_downgrade => true to fall back to a full-table refresh for this run.
    """
    if verdict.safe:
        return f"Model '{model_name}' passes the incremental safety check."
    lines = [headline(model_name), *finding_lines(verdict)]
    names = ", ".join(f"{RULE_OVERRIDE[r]}: true" for r in RULES if any(f.rule == r for f in verdict.findings))
    lines.append(f"Fix the SQL, or set safety_overrides ({names}) if you have verified this usage is safe on "
                 "partial data, or pass allow_downgrade => true to fall back to a full-table refresh for this run.")
    return "\n".join(lines)


def headline(model_name: str, where: str = "") -> str:
    """The first line of a refusal; ``where`` (a file) is named after the model."""
    return (f"Incremental safety check refused model '{model_name}'{f' ({where})' if where else ''}: on a time slice "
            "it may compute different rows than on the full data.")


def finding_lines(verdict: Verdict) -> list[str]:
    """One indented line per finding: its position, the construct, why it is unsafe."""
    return [f"  line {f.line}, column {f.column}: {f.construct}: {f.why}." for f in verdict.findings]


def _overridden_rules(overrides: Iterable[str]) -> frozenset[str]:
    # A safety_overrides mapping may say `allow_limit: false`; only true keys count.
    names = [k for k, v in overrides.items() if v] if isinstance(overrides, Mapping) else list(overrides)
    unknown = [n for n in names if n not in OVERRIDE_RULES]
    if unknown:
        raise ModelDefinitionError(
            f"unknown safety override {unknown[0]!r}; known overrides: {', '.join(OVERRIDES)}"
        )
    return frozenset(OVERRIDE_RULES[n] for n in names)
