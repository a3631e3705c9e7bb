"""The classifier's vocabulary: rules, overrides, why each rule exists, and its results."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark_incr.model.overrides import OVERRIDE_RULES

RULES = ("window", "having", "limit", "nondeterministic", "subquery", "distinct", "coarse_time")

RULE_OVERRIDE = {rule: name for name, rule in OVERRIDE_RULES.items()}

# One sentence per rule, from the spec's "Safety analysis" table.
WHY = {
    "window": "a window function whose PARTITION BY does not include the partition column computes "
    "different results on one time slice than on the full dataset",
    "having": "HAVING with aggregates may filter out groups that would pass if all data were present",
    "limit": "LIMIT on partial data returns different rows than on the full table",
    "nondeterministic": "non-deterministic functions produce different results on each run",
    "subquery": "a subquery over a time-series source may reference data outside the filtered time range",
    "distinct": "DISTINCT on partial data may miss duplicates that span partition boundaries",
    # Not in the spec's table: a gap smelt's rules leave (the output filter keeps one slice's partial bucket).
    "coarse_time": "a time column written coarser than the model's interval holds one slice's partial result "
    "for its whole bucket, and the output filter keeps it on one slice only",
}


@dataclass(frozen=True)
class Finding:
    """One construct refused for incremental runs, at a 1-based position of the query text."""

    rule: str
    construct: str
    line: int
    column: int
    why: str


@dataclass(frozen=True)
class Verdict:
    """What a model's query may not do on a time slice, and what was let through and why."""

    findings: tuple[Finding, ...]
    admitted: tuple[str, ...]

    @property
    def safe(self) -> bool:
        return not self.findings
