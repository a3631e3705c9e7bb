"""What every kind record shares: its name, its property table, and how it is read from ``kind NAME (...)``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from croniter import croniter
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.time import format_time

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.block import KindSpec, Property
from pyspark_incr.model.properties import BUILD, Prop, fields_affecting, read_properties
from pyspark_incr.model.values import _value, as_bool, as_choice, as_string

CHANGE_POLICY = ("error", "warn", "allow", "ignore")

#: How a kind reacts to schema changes and restatements (SQLMesh's shared incremental properties).
CHANGE_PROPS = (
    Prop("forward_only", as_bool, BUILD),
    Prop("on_destructive_change", as_choice(*CHANGE_POLICY), BUILD),
    Prop("on_additive_change", as_choice(*CHANGE_POLICY), BUILD),
    Prop("disable_restatement", as_bool, BUILD),
)


def read_cron(prop: Property, where: str) -> str:
    """A cron expression (``'@weekly'``, ``'0 0 * * 7'``), checked."""
    cron = as_string(prop, where).strip()
    if not croniter.is_valid(cron):
        raise ModelDefinitionError(f"{where}: {prop.at}: {prop.key} {cron!r} is not a valid cron expression; use e.g. "
                                   "'@weekly' or five fields like '0 0 * * 7'")
    return cron


#: SQLMesh's incremental kinds may be restated on a cron of their own (:mod:`pyspark_incr.plan.auto_restatement`).
AUTO_RESTATEMENT_PROPS = (Prop("auto_restatement_cron", read_cron, BUILD),)


@dataclass(frozen=True)
class KindBase:
    """Base of the kind records; subclasses set the class attributes and their fields."""

    name: ClassVar[str] = ""
    #: True when the kind tracks time intervals (VIEW, EMBEDDED, EXTERNAL, SEED do not).
    has_intervals: ClassVar[bool] = True
    #: False for kinds defined without a query (SEED reads a CSV, EXTERNAL declares a table).
    needs_query: ClassVar[bool] = True
    #: False when nothing is materialized in the catalog (EMBEDDED, EXTERNAL).
    builds_object: ClassVar[bool] = True
    #: True when every build recomputes the whole table (FULL): restating any range restates all of it.
    whole_table: ClassVar[bool] = False
    #: False when the physical object is a view naming its parents' tables instead of holding rows.
    stores_rows: ClassVar[bool] = True
    #: True when the query is inlined into every reader instead of being read from a table (EMBEDDED).
    inlined: ClassVar[bool] = False
    #: True when each batch builds on what the previous ones left (merges, history): batches run one at a time.
    ordered_batches: ClassVar[bool] = False
    #: Runtime macros only this kind's queries may use (INCREMENTAL_BY_CURSOR: ``@last_value``, ``@is_backfill``).
    macros: ClassVar[frozenset[str]] = frozenset()
    props: ClassVar[tuple[Prop, ...]] = ()
    #: True when a batch replaces one time slice of the table, computed from that slice of the sources: the
    #: kinds the incremental safety analysis judges (``pyspark_incr.safety``) and whose sources are pushed down.
    time_sliced: ClassVar[bool] = False
    #: Build fields added after hashes were first stored: hashed only when set, so existing versions keep theirs.
    hashed_when_set: ClassVar[frozenset[str]] = frozenset({"auto_restatement_cron", "auto_restatement_intervals"})

    @classmethod
    def from_spec(cls, spec: KindSpec, where: str, dialect: str = "spark") -> "KindBase":
        values = read_properties(spec.properties, cls.props, where, f"kind {cls.name}", spec.at)
        return cls(**cls.finish(values, where, dialect, spec))

    @classmethod
    def finish(cls, values: dict[str, Any], where: str, dialect: str, spec: KindSpec) -> dict[str, Any]:
        """Cross-property checks and conversions, after every property was read."""
        return values

    @classmethod
    def build_fields(cls) -> tuple[str, ...]:
        """Fields that change how the model is built, never what it holds (kept out of the data hash)."""
        return fields_affecting(cls.props, BUILD)



_DIRECTIVE = re.compile(r"%(.)")
_STRFTIME = set("aAwdbBmyYHIpMSfzZjUWcxXGuV%")
_STRICT = re.compile(r"(%.)strict")


def read_time_column(prop: Property, where: str) -> tuple[str, str | None]:
    """``col`` or ``(col, 'format')``."""
    v = _value(prop, where)
    if isinstance(v, exp.Column) and not v.table:
        return v.name, None
    if isinstance(v, exp.Tuple) and len(v.expressions) == 2 and isinstance(v.expressions[0], exp.Column):
        fmt = v.expressions[1]
        if isinstance(fmt, exp.Literal) and fmt.is_string:
            return v.expressions[0].name, fmt.this
    raise ModelDefinitionError(
        f"{where}: {prop.at}: time_column must be a column or (column, 'format'), got {prop.text!r}"
    )


def finish_time_column(cls: type, values: dict[str, Any], where: str, dialect: str, spec: KindSpec) -> dict[str, Any]:
    """``values`` with ``time_column_format`` as Python strftime: ``finish = classmethod(finish_time_column)``
    in a kind with a ``time_column`` property."""
    if values.get("time_column_format"):
        at = spec.properties["time_column"].at
        values["time_column_format"] = python_time_format(values["time_column_format"], dialect, f"{where}: {at}")
    return values


def python_time_format(fmt: str, dialect: str, where: str) -> str:
    """A time format as Python strftime: '%Y-%m-%d' stays, a dialect format ('yyyy-MM-dd') is converted.

    >>> python_time_format("yyyyMMdd", "spark", "m"), python_time_format("%Y-%m-%d", "duckdb", "m")
    ('%Y%m%d', '%Y-%m-%d')
    >>> python_time_format("%Y-%q", "spark", "model m")
    Traceback (most recent call last):
    ...
    pyspark_incr.errors.ModelDefinitionError: model m: time format '%Y-%q' has an unknown directive %q; use strftime directives like '%Y-%m-%d' or the dialect's own format
    """
    if "%" not in fmt:
        d = Dialect.get_or_raise(dialect)
        # sqlglot marks zero-padded Java patterns with a 'strict' suffix; strftime pads anyway.
        converted = _STRICT.sub(r"\1", format_time(fmt, d.TIME_MAPPING, d.TIME_TRIE) or "")
        if not converted or "%" not in converted:
            raise ModelDefinitionError(
                f"{where}: time format {fmt!r} has no date parts; use strftime directives like '%Y-%m-%d'"
            )
        fmt = converted
    for directive in _DIRECTIVE.findall(fmt):
        if directive not in _STRFTIME:
            raise ModelDefinitionError(
                f"{where}: time format {fmt!r} has an unknown directive %{directive}; use strftime directives "
                "like '%Y-%m-%d' or the dialect's own format"
            )
    if fmt.endswith("%") and not fmt.endswith("%%"):
        raise ModelDefinitionError(f"{where}: time format {fmt!r} ends with a lone '%'")
    return fmt
