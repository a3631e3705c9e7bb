"""Audits (SQLMesh ``audits`` / Vulcan ``assertions``): queries returning the rows that break a rule.

Each built-in turns its arguments into a query over the rows just written; any
row it returns is a failure. Blocking audits (the default, as in SQLMesh) fail
the batch, so its interval is not recorded; ``blocking := false`` only warns.
A project's custom audits (``audits/*.sql``, carried by the models calling them
as ``Model.custom_audits``) are called the same way; their own query returns the bad rows.

>>> from sqlglot import exp
>>> rel = exp.table_("t", db="s", quoted=True)
>>> bad_rows_query(("not_null", (("columns", "(a, b)"),)), rel, "model m").sql("spark")
'SELECT * FROM `s`.`t` WHERE `a` IS NULL OR `b` IS NULL'
>>> bad_rows_query(("accepted_range", (("column", "x"), ("min_v", "0"), ("max_v", "9"))), rel, "m").sql("spark")
'SELECT * FROM `s`.`t` WHERE `x` < 0 OR `x` > 9'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model import custom_audits
from pyspark_incr.model.audit_defs import AuditDef
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS

Args = dict[str, exp.Expression]
Call = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class Audit:
    """One built-in: the arguments it needs and the predicate a bad row satisfies."""

    required: tuple[str, ...]
    bad: Callable[[Args], exp.Expression | None]
    #: Whole-relation audits (number_of_rows) return one row when they fail instead of filtering rows.
    aggregate: bool = False


def _cols(args: Args, key: str = "columns") -> list[exp.Column]:
    value = args[key]
    items = value.expressions if isinstance(value, (exp.Tuple, exp.Array)) else [value.this if isinstance(value, exp.Paren) else value]
    return [exp.column(i.name, quoted=True) if isinstance(i, exp.Column) else i for i in items]


def _col(args: Args) -> exp.Expression:
    return _cols(args, "column")[0]


def _any(predicates: list[exp.Expression]) -> exp.Expression:
    return exp.or_(*predicates) if len(predicates) > 1 else predicates[0]


def _values(args: Args) -> list[exp.Expression]:
    value = args["is_in"]
    return list(value.expressions) if isinstance(value, (exp.Tuple, exp.Array)) else [value.this if isinstance(value, exp.Paren) else value]


def _range(args: Args) -> exp.Expression:
    col, inclusive = _col(args), args.get("inclusive", exp.true()).sql().upper() != "FALSE"
    checks = []
    if "min_v" in args:
        checks.append(exp.LT(this=col.copy(), expression=args["min_v"]) if inclusive else exp.LTE(this=col.copy(), expression=args["min_v"]))
    if "max_v" in args:
        checks.append(exp.GT(this=col.copy(), expression=args["max_v"]) if inclusive else exp.GTE(this=col.copy(), expression=args["max_v"]))
    return _any(checks)


def _duplicates(partitions: list[list[exp.Expression]]) -> exp.Expression:
    return _any([
        exp.GT(this=exp.Window(this=exp.Count(this=exp.Star()), partition_by=cols), expression=exp.Literal.number(1))
        for cols in partitions
    ])


BUILTINS: dict[str, Audit] = {
    "not_null": Audit(("columns",), lambda a: _any([exp.Is(this=c, expression=exp.Null()) for c in _cols(a)])),
    "unique_values": Audit(("columns",), lambda a: _duplicates([[c] for c in _cols(a)])),
    "unique_combination_of_columns": Audit(("columns",), lambda a: _duplicates([_cols(a)])),
    "positive_values": Audit(("column",), lambda a: exp.LTE(this=_col(a), expression=exp.Literal.number(0))),
    "non_negative_values": Audit(("column",), lambda a: exp.LT(this=_col(a), expression=exp.Literal.number(0))),
    "accepted_values": Audit(("column", "is_in"), lambda a: exp.Not(this=exp.In(this=_col(a), expressions=_values(a)))),
    "not_accepted_values": Audit(("column", "is_in"), lambda a: exp.In(this=_col(a), expressions=_values(a))),
    "accepted_range": Audit(("column",), _range),
    "forall": Audit(("criteria",), lambda a: exp.Not(this=exp.paren(exp.and_(*_cols(a, "criteria"))))),
    "number_of_rows": Audit(("threshold",), lambda a: exp.LT(this=exp.Count(this=exp.Star()), expression=a["threshold"]), True),
}


def unknown_audit(name: str, where: str, custom: Sequence[str]) -> ModelDefinitionError:
    """The error for a call of an audit that is neither built in nor one of the ``custom`` names."""
    known = f"custom audits: {', '.join(sorted(custom))}" if custom else "no custom audits (a project's audits/*.sql)"
    builtins = ", ".join(sorted(BUILTINS))
    return ModelDefinitionError(f"{where}: unknown audit {name!r}; built-in audits: {builtins}; {known}")


def find(name: str, where: str, custom: Sequence[AuditDef] = ()) -> Audit | AuditDef:
    """The built-in or custom audit called ``name``."""
    audit = BUILTINS.get(name) or next((a for a in custom if a.name == name), None)
    if audit is None:
        raise unknown_audit(name, where, [a.name for a in custom])
    return audit


def parse_args(call: Call, where: str, custom: Sequence[AuditDef] = ()) -> tuple[Args, bool]:
    """The audit's arguments as expressions, and whether it blocks; unknown names and missing arguments are errors.

    A custom audit's defaults fill the arguments a call does not give; ``blocking`` in the
    call overrides the audit's own.
    """
    name, raw = call
    audit = find(name, where, custom)
    try:
        defaults = audit.defaults if isinstance(audit, AuditDef) else ()
        args = {key: sqlglot.parse_one(value, read="spark") for key, value in (*defaults, *raw)}
    except SQLGLOT_ERRORS as e:
        raise ModelDefinitionError(f"{where}: audit {name}: cannot read its arguments ({e})") from None
    own = exp.true() if not isinstance(audit, AuditDef) or audit.blocking else exp.false()
    blocking = args.pop("blocking", own).sql().upper() != "FALSE"
    if isinstance(audit, AuditDef):
        missing = [a for a in audit.arguments if a not in args]
        if missing:
            raise ModelDefinitionError(
                f"{where}: audit {name} needs {', '.join(m + ' := ...' for m in missing)}: its query "
                f"({audit.located}) uses {', '.join('@' + m for m in missing)}, which has no default"
            )
        return args, blocking
    missing = [r for r in audit.required if r not in args]
    if missing:
        raise ModelDefinitionError(f"{where}: audit {name} needs {', '.join(m + ' := ...' for m in missing)}")
    return args, blocking


def bad_rows_query(call: Call, relation: exp.Expression, where: str, custom: Sequence[AuditDef] = ()) -> exp.Query:
    """The query returning the rows of ``relation`` that break ``call`` (one row for a failed aggregate audit)."""
    args, _ = parse_args(call, where, custom)
    audit = find(call[0], where, custom)
    if isinstance(audit, AuditDef):
        return custom_audits.fill(audit, args, relation, where)
    if audit.aggregate:
        return exp.select("1 AS failed").from_(exp.select(exp.alias_(audit.bad(args), "broken")).from_(relation).subquery("a")).where("broken")
    return exp.select("*").from_(relation).where(audit.bad(args)) if not _windowed(audit.bad(args)) else _via_window(audit.bad(args), relation)


def _windowed(predicate: exp.Expression) -> bool:
    return predicate.find(exp.Window) is not None


def _via_window(predicate: exp.Expression, relation: exp.Expression) -> exp.Select:
    """Window functions cannot stand in WHERE: compute them in a subquery first."""
    inner = exp.select("*", exp.alias_(predicate, "__incr_bad")).from_(relation)
    return exp.select("*").from_(inner.subquery("__incr_audit")).where(exp.column("__incr_bad"))


def columns_used(call: Call, where: str, custom: Sequence[AuditDef] = ()) -> set[str]:
    """Column names an audit refers to, to check them against the model's output before anything runs."""
    args, _ = parse_args(call, where, custom)
    audit = find(call[0], where, custom)
    if isinstance(audit, AuditDef):
        return custom_audits.columns(audit, args)
    names = set()
    for key in ("columns", "column"):
        if key in args:
            names |= {c.name for c in _cols(args, key) if isinstance(c, exp.Column)}
    return names


def describe(call: Call) -> str:
    """``not_null(columns := (a, b))`` as the user wrote it."""
    name, args = call
    return f"{name}({', '.join(f'{k} := {v}' for k, v in args)})"
