"""INCREMENTAL_BY_UNIQUE_KEY: rows are upserted by key (its writer arrives with the kind writers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import sqlglot
from sqlglot import exp
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.block import Property
from pyspark_incr.model.kinds.base import AUTO_RESTATEMENT_PROPS, CHANGE_PROPS, KindBase
from pyspark_incr.model.properties import BUILD, DATA, Prop
from pyspark_incr.model.values import _value, as_int, as_names


def read_when_matched(prop: Property, where: str) -> str:
    """MERGE ``WHEN MATCHED ...`` clauses, checked by parsing them inside a MERGE statement."""
    text = prop.text.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    try:
        merge = sqlglot.parse_one(f"MERGE INTO target USING source ON TRUE {text}", read="spark")
    except SQLGLOT_ERRORS as e:
        merge = None
        reason = str(e).splitlines()[0]
    if not isinstance(merge, exp.Merge) or not merge.args.get("whens"):
        raise ModelDefinitionError(
            f"{where}: {prop.at}: when_matched must be MERGE clauses like "
            f"WHEN MATCHED THEN UPDATE SET target.x = source.x, got {prop.text!r}"
            + (f" ({reason})" if merge is None else "")
        )
    return merge.args["whens"].sql("spark")


def read_predicate(prop: Property, where: str) -> str:
    """A boolean SQL expression over ``source`` and ``target``."""
    v = _value(prop, where)
    # A ';' (a second statement riding along, kept as raw text by the parser) is refused, not carried on.
    if isinstance(v, (exp.Literal, exp.Tuple, exp.Command)) or ";" in v.sql("spark"):
        raise ModelDefinitionError(f"{where}: {prop.at}: {prop.key} must be a condition like source.ds > target.ds")
    return v.sql("spark")


@dataclass(frozen=True)
class IncrementalByUniqueKeyKind(KindBase):
    name: ClassVar[str] = "INCREMENTAL_BY_UNIQUE_KEY"
    props: ClassVar[tuple[Prop, ...]] = (
        Prop("unique_key", as_names, DATA, required=True, example="kind INCREMENTAL_BY_UNIQUE_KEY (unique_key id)"),
        Prop("when_matched", read_when_matched, DATA),
        Prop("merge_filter", read_predicate, DATA),
        Prop("batch_size", as_int(1), BUILD),
        Prop("batch_concurrency", as_int(1), BUILD),
        Prop("lookback", as_int(0), BUILD),
        *CHANGE_PROPS,
        *AUTO_RESTATEMENT_PROPS,
    )
    ordered_batches: ClassVar[bool] = True

    unique_key: tuple[str, ...]
    when_matched: str | None = None
    merge_filter: str | None = None
    batch_size: int | None = None
    batch_concurrency: int | None = None
    lookback: int | None = None
    forward_only: bool = False
    on_destructive_change: str = "error"
    on_additive_change: str = "allow"
    disable_restatement: bool = False
    auto_restatement_cron: str | None = None
