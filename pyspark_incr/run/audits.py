"""Audits run: each audit of a model counted on the rows a batch wrote (the queries come from :mod:`pyspark_incr.model.audits`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from sqlglot import exp

from pyspark_incr.model.audit_defs import AuditDef
from pyspark_incr.model.audits import Call, bad_rows_query, describe, parse_args

if TYPE_CHECKING:
    from pyspark_incr.model.definition import Model


@dataclass(frozen=True)
class Outcome:
    """One audit run on some rows: how many broke it, and whether that blocks the batch."""

    audit: str
    blocking: bool
    bad_rows: int

    @property
    def status(self) -> str:
        return "ok" if not self.bad_rows else ("failed" if self.blocking else "warning")


def evaluate(spark: object, model: "Model", relation: exp.Expression) -> list[Outcome]:
    """Run every audit of ``model`` on ``relation`` (the rows a batch wrote, or a window of the table)."""
    where = f"model {model.name}"
    outcomes = []
    for call in model.audits:
        _, blocking = parse_args(call, where, model.custom_audits)
        bad = count_bad_rows(spark, call, relation, where, model.custom_audits)
        outcomes.append(Outcome(describe(call), blocking, bad))
    return outcomes


def count_bad_rows(spark: object, call: Call, relation: exp.Expression, where: str,
                   custom: Sequence[AuditDef] = ()) -> int:
    """How many rows of ``relation`` break the audit (Spark runs the query)."""
    query = bad_rows_query(call, relation, where, custom)
    return int(spark.sql(exp.select("COUNT(*)").from_(query.subquery("__incr_bad_rows")).sql("spark")).collect()[0][0])
