"""The incremental safety gate's judgement: what a time-sliced model may do before it runs.

A model whose batches replace one time slice of its table (INCREMENTAL_BY_TIME_RANGE) is
judged by the classifier (:mod:`pyspark_incr.safety.classify`) and the per-source bound
derivation (:mod:`pyspark_incr.safety.bounds`). The judgement says whether it may run on
slices at all (else it is refused, or with ``allow_downgrade`` rebuilt whole), how a missing
range is cut into jobs (its batch safety class), and which filter each timeseries source gets
pushed into its FROM.

Timeseries sources are the models read whose rows carry a time column: incremental models by
time range, and EXTERNAL models declared with ``time_column``. Every other table is a lookup,
read in full.

A judgement parses the query three ways (its MODEL block, the classifier, the bound derivation):
about a millisecond a model, ten seconds for 10,000 five-minute models each run. So each carries
a key of everything it was judged from, this code included; the state keeps it with the
applied version (:mod:`pyspark_incr.state.snapshot`), and a plan whose key matches takes it as is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.block import parse_block
from pyspark_incr.model.definition import Model
from pyspark_incr.model.macros import PREFIX, calls_macro_functions, hide_macros
from pyspark_incr.model import python_model  # Python models
from pyspark_incr.safety import bounds, classify
from pyspark_incr.safety.pushdown import Pushdown, Source
from pyspark_incr.version import code_digest

FULLY_BATCH_SAFE, BOUNDED, PER_PARTITION_ONLY = "fully batch safe", "bounded", "per-partition only"


@dataclass(frozen=True)
class Judgement:
    """What the gate says of one model version."""

    verdict: classify.Verdict
    bounds: tuple[bounds.Bound, ...]
    batch_class: str
    #: Why the model may not run on slices (the message shown to the user); '' when it may.
    refusal: str
    #: The filters its sources get when it runs sliced (none when refused: a downgrade reads them whole).
    pushdown: tuple[Pushdown, ...]
    #: A digest of what it was judged from ('' for a Python model's, which costs nothing to judge again).
    key: str = ""

    @property
    def refused(self) -> bool:
        return bool(self.refusal)


def timeseries_sources(model: Model, known: Mapping[str, Model]) -> tuple[Source, ...]:
    """The models ``model`` reads whose rows have a time column, sorted by name."""
    found = []
    for name in model.depends_on:
        kind = known[name].kind if name in known else None
        column = getattr(kind, "time_column", None)
        if column:
            found.append(Source(name, column, getattr(kind, "time_column_format", None)))
    return tuple(sorted(found, key=lambda s: s.name))


def judge(model: Model, sources: tuple[Source, ...], stored: Judgement | None = None) -> Judgement:
    """The gate's judgement of a time-sliced ``model`` reading ``sources``: ``stored`` (one kept with the
    applied version) when it was judged from the same, else judged (cached: plans repeat it every call)."""
    if python_model.is_python(model):  # Python models: no SQL to judge; sliced like SQLMesh slices them
        return Judgement(classify.Verdict((), (python_model.UNCHECKED,)), (), FULLY_BATCH_SAFE, "", ())
    args = _arguments(model, sources)
    if stored is not None and stored.key == _key(args):
        return stored
    return _judge(args)


def _arguments(model: Model, sources: tuple[Source, ...]) -> tuple:
    time_column = model.kind.time_column
    partitions = tuple(dict.fromkeys([time_column, *(p for p in model.partitioned_by if p.isidentifier())]))
    return (model.name, model.definition, model.query, model.dialect, model.source, model.safety_overrides,
            time_column, partitions, sources, model.schedule.unit.approx_ms)


@lru_cache(maxsize=65536)  # sized for the state, as the snapshots' cache: a plan asks for every model's key
def _key(args: tuple) -> str:
    """A digest of everything a judgement follows from (:func:`_arguments`), the judging code included."""
    *plain, sources, interval_ms = args
    text = json.dumps([_code(), *plain, [[s.name, s.column, s.fmt] for s in sources], interval_ms],
                      separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@lru_cache(maxsize=1)
def _code() -> str:
    """The judging code's version: a judgement kept by other code is judged again."""
    return code_digest("model", "safety", "intervals")


@lru_cache(maxsize=16384)
def _judge(args: tuple) -> Judgement:
    """The judgement of :func:`_arguments` ``args``, with their key."""
    name, definition, query, dialect, source, overrides, time_column, partitions, sources, interval_ms = args
    verdict = _verdict(definition, query, dialect, partitions, [s.name for s in sources], overrides, interval_ms,
                       time_column)
    derived = bounds.derive(query, time_column, {s.name: s.column for s in sources},
                            windows_vouched="allow_window_functions" in overrides)
    found = tuple(derived[s.name] for s in sources if s.name in derived)
    underivable = [b for b in found if b.kind == bounds.NOT_DERIVABLE]
    refusal = refusal_message(name, source, verdict, underivable) if not verdict.safe or underivable else ""
    by_name = {s.name: s for s in sources}
    pushdown = tuple(Pushdown(by_name[b.source], b.before_ms, b.after_ms) for b in found
                     if b.kind == bounds.BOUNDED and not refusal)  # a refused model never runs sliced
    return Judgement(verdict, found, batch_class(verdict, found), refusal, pushdown, _key(args))


def batch_class(verdict: classify.Verdict, found: tuple[bounds.Bound, ...]) -> str:
    """smelt's batch safety class: how a missing range may be cut into jobs.

    * per-partition only: a refused model, which may not run sliced at all;
    * bounded: a job reads a source beyond its own slice (a lookback, or the whole source): any
      chunking is correct, each job reading its slice widened by the bound;
    * fully batch safe: every source is read exactly over the job's slice: any chunking.

    A construct admitted through ``safety_overrides`` does not change the class: the override vouches
    for the query on a time slice, and the model's batch_size says how long its slices are.
    """
    if not verdict.safe or any(b.kind == bounds.NOT_DERIVABLE for b in found):
        return PER_PARTITION_ONLY
    if any(b.kind != bounds.BOUNDED or b.before_ms or b.after_ms for b in found):
        return BOUNDED
    return FULLY_BATCH_SAFE


def refusal_message(name: str, source: str, verdict: classify.Verdict, underivable: list[bounds.Bound]) -> str:
    """Each unsafe construct with its position in the model's file (``source``; positions in a registered
    definition's text for ``registry``), each source whose reach is unknown, and the ways out."""
    lines = [classify.headline(name, source if source != "registry" else ""), *classify.finding_lines(verdict)]
    if any(f.rule == "window" for f in verdict.findings):  # the window finding already says it (and its override)
        underivable = [b for b in underivable if not all("(window " in r for r in b.reason.split("; "))]
    lines += [f"  source {b.source}: cannot derive how far outside the run window it must be read ({b.reason}); "
              f"bound {b.source}.{b.column} with a window frame RANGE BETWEEN INTERVAL '<n> <unit>' PRECEDING AND "
              f"CURRENT ROW, or a condition like {b.column} >= @start_ts - INTERVAL '<n> <unit>' AND "
              f"{b.column} < @end_ts." for b in underivable]
    ways = ["Fix the SQL"]
    if verdict.findings:
        names = ", ".join(dict.fromkeys(f"{classify.RULE_OVERRIDE[f.rule]} = true" for f in verdict.findings))
        ways.append(f"set safety_overrides ({names}) if you have verified this usage is safe on a time slice")
    ways.append("pass allow_downgrade => true to rebuild the model whole (one job, no slicing) for that call")
    lines.append(", or ".join(ways) + ".")
    return "\n".join(lines)


def _verdict(definition: str, query: str, dialect: str, partitions: tuple[str, ...], sources: list[str],
             overrides: tuple[str, ...], interval_ms: int, time_column: str) -> classify.Verdict:
    """The classifier's verdict, positioned in the model's file: the query as written when it stands alone
    after the MODEL block, else (``@DEF`` statements before it, or macro functions that write SQL the text
    does not show, such as ``@EACH`` building window functions) the query as compiled."""
    def compiled() -> classify.Verdict:
        return _unhidden(classify.classify(query, partitions, sources, overrides, "spark", interval_ms,
                                           time_column=time_column), 0, 0)

    try:
        block = parse_block(definition)
        text = hide_macros(block.query_text)
        if calls_macro_functions(text):
            return compiled()
        verdict = classify.classify(text, partitions, sources, overrides, dialect, interval_ms, time_column=time_column)
    except ModelDefinitionError:
        return compiled()
    return _unhidden(verdict, block.query_line - 1, block.query_col - 1)


def _unhidden(verdict: classify.Verdict, lines: int, first_line_columns: int) -> classify.Verdict:
    """Findings moved from query-relative to file positions, their constructs with ``@macro`` written back."""
    findings = tuple(
        replace(f, line=f.line + lines, column=f.column + (first_line_columns if f.line == 1 else 0),
                construct=f.construct.replace(PREFIX, "@"))
        for f in verdict.findings
    )
    return classify.Verdict(findings, tuple(a.replace(PREFIX, "@") for a in verdict.admitted))
