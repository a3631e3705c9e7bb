"""Bound kinds and the evidence gathered per source reference, combined into one bound per source."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from pyspark_incr.safety.durations import iso_duration

BOUNDED, UNBOUNDED, NOT_DERIVABLE = "bounded", "unbounded", "not derivable"


@dataclass(frozen=True)
class Bound:
    """The derived read bound of one timeseries source."""

    source: str
    kind: str
    column: str | None = None
    before_ms: int = 0
    after_ms: int = 0
    reason: str = ""

    def iso(self) -> dict:
        """smelt's ``explain --json`` shape; a bound that is not ``bounded`` says why instead of durations.

        >>> Bound("raw.e", BOUNDED, "ts", 1_800_000).iso()
        {'type': 'bounded', 'partition_col': 'ts', 'before': 'PT30M', 'after': 'PT0S'}
        >>> Bound("raw.e", UNBOUNDED, "ts", reason="no filter").iso()
        {'type': 'unbounded', 'partition_col': 'ts', 'reason': 'no filter'}
        """
        out: dict = {"type": self.kind, "partition_col": self.column}
        if self.kind == BOUNDED:
            out.update(before=iso_duration(self.before_ms), after=iso_duration(self.after_ms))
        else:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class _Tie:
    """A value tied to the run window: ``anchor + offset_ms`` (anchor None = the run window itself,
    else the index of another source reference whose time column the value follows)."""

    anchor: int | None
    offset_ms: int
    #: The query scope whose WHERE/JOIN holds the condition (a window in it or above sees only what it keeps).
    scope: Any = field(default=None, compare=False)


@dataclass
class _Ref:
    """One reference to a timeseries source in the query (a self-join has two)."""

    table: exp.Table
    source: str
    column: str
    lows: list[_Tie] = field(default_factory=list)    # lower read bounds: anchor - before
    highs: list[_Tie] = field(default_factory=list)   # upper read bounds: anchor + after
    frames: list[tuple[int, int, Any]] = field(default_factory=list)  # Form A (before, after, scope)
    hard: list[str] = field(default_factory=list)     # not derivable whatever else is known
    soft: list[str] = field(default_factory=list)     # not derivable unless another filter bounds it


def _settle(refs: list[_Ref]) -> list[Bound]:
    """Per reference bound. Ties to another reference follow that reference's bound, so iterate to a fixpoint."""
    known: dict[int, tuple[int, int]] = {}
    for _ in range(len(refs) + 1):
        now = {i: b for i, r in enumerate(refs) if not r.hard and (b := _sides(r, known)) is not None}
        if now == known:
            break
        known = now
    else:  # positive cycle (a >= b - 1d, b >= a - 1d): the offsets grow without end
        cyclic = {i for i in known if _sides(refs[i], known) != known[i]}
        for i in cyclic:
            refs[i].hard.append(f"the interval filters on {refs[i].source}.{refs[i].column} form a cycle")
            known.pop(i)
    for i in list(known):
        cut = _cut_frame(refs[i], known)
        if cut:
            refs[i].hard.append(cut)
            known.pop(i)
    return [_bound(i, r, known) for i, r in enumerate(refs)]


def _cut_frame(ref: _Ref, known: dict[int, tuple[int, int]]) -> str | None:
    """Why a window frame over ``ref`` would see fewer rows on a slice than on all data, if it would.

    A frame reaching ``before`` outside the run window needs those rows in its input; a filter in the
    window's own query (or below it) keeping less removes them again, whatever is pushed down, so the
    window's values depend on where the run starts. A filter in an outer query runs after the window
    and is harmless.
    """
    for before, after, scope in ref.frames:
        for side, reach, ties, where in ((0, before, ref.lows, "before"), (1, after, ref.highs, "after")):
            kept = [t.offset_ms + (known[t.anchor][side] if t.anchor is not None else 0) for t in ties
                    if _inside(t.scope, scope) and (t.anchor is None or t.anchor in known)]
            if reach and kept and min(kept) < reach:
                return (f"a window frame over {ref.source}.{ref.column} reaches {iso_duration(reach)} {where} the run "
                        f"window, but a filter applied before the window keeps only {iso_duration(max(min(kept), 0))}: "
                        "on a slice the window would see a cut frame; filter in an outer query, or widen that filter "
                        "by the frame")
    return None


def _inside(inner: Any, outer: Any) -> bool:
    """True when scope ``inner`` is ``outer`` or nested in it (its conditions apply before ``outer``'s windows)."""
    while inner is not None:
        if inner is outer:
            return True
        inner = inner.parent
    return False


def _sides(ref: _Ref, known: dict[int, tuple[int, int]]) -> tuple[int, int] | None:
    before = _reach(ref.lows, known, 0, [f[0] for f in ref.frames])
    after = _reach(ref.highs, known, 1, [f[1] for f in ref.frames])
    return None if before is None or after is None else (max(before, 0), max(after, 0))


def _reach(ties: list[_Tie], known, side: int, frames: list[int]) -> int | None:
    """How far one side of a reference's read reaches past the run window.

    The filters on one reference are AND-ed, so the tightest resolvable one bounds the read (a tie to a
    reference with no known bound says nothing). A window frame needs rows the filters may keep or drop:
    the widest of frames and filters is read (reading too much is safe, too little is not).
    """
    filters = [t.offset_ms + (known[t.anchor][side] if t.anchor is not None else 0)
               for t in ties if t.anchor is None or t.anchor in known]
    values = frames + ([min(filters)] if filters else [])
    return max(values) if values else None


def _bound(i: int, ref: _Ref, known: dict[int, tuple[int, int]]) -> Bound:
    if ref.hard:
        return Bound(ref.source, NOT_DERIVABLE, ref.column, reason="; ".join(ref.hard))
    if i in known:
        return Bound(ref.source, BOUNDED, ref.column, *known[i])
    if ref.soft:
        return Bound(ref.source, NOT_DERIVABLE, ref.column, reason="; ".join(ref.soft))
    missing = [s for n, s in enumerate(("lower", "upper")) if _reach((ref.lows, ref.highs)[n], known, n, []) is None]
    what = " or ".join(missing)
    return Bound(ref.source, UNBOUNDED, ref.column,
                 reason=f"no {what} filter on {ref.source}.{ref.column} tied to the run window: "
                        "the whole source is read")


def _widest(bounds: list[Bound]) -> dict[str, Bound]:
    """One bound per source table: a self-join reads the widest of its references' bounds."""
    rank = {BOUNDED: 0, UNBOUNDED: 1, NOT_DERIVABLE: 2}
    out: dict[str, Bound] = {}
    for b in bounds:
        seen = out.get(b.source)
        if seen is None or rank[b.kind] > rank[seen.kind]:
            out[b.source] = b
        elif b.kind == seen.kind == BOUNDED:
            out[b.source] = Bound(b.source, BOUNDED, b.column, max(b.before_ms, seen.before_ms),
                                  max(b.after_ms, seen.after_ms))
    return out


def _note(reasons: list[str], reason: str) -> None:
    if reason not in reasons:  # BETWEEN yields two comparisons with the same complaint
        reasons.append(reason)
