"""The MERGE of INCREMENTAL_BY_UNIQUE_KEY as sqlglot expressions: Delta runs it, Parquet emulates it.

Both strategies read one set of clauses, so they cannot drift apart: the ON
condition (every key column equal, and ``merge_filter``), the ``when_matched``
clauses (default: the source row replaces the target row) and the insert of the
source rows nothing matched. The aliases are ``target`` and ``source``, the
names SQLMesh's ``when_matched`` and ``merge_filter`` use.

Nothing here needs Spark: the Delta statement and the Parquet projection are
plain SQL text, checked against fixtures without a session.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError

TARGET, SOURCE = "target", "source"
#: Marker columns the Parquet emulation adds to each side of its outer join: NULL means "no row on this side".
IN_TARGET, IN_SOURCE = "__incr_in_target", "__incr_in_source"


def parse_whens(when_matched: str | None) -> list[exp.When]:
    """The ``WHEN MATCHED`` clauses; without ``when_matched``, one that replaces the whole row.

    >>> [w.sql("spark") for w in parse_whens(None)]
    ['WHEN MATCHED THEN UPDATE SET *']
    >>> [w.sql("spark") for w in parse_whens("WHEN MATCHED AND source.x > 0 THEN DELETE")]
    ['WHEN MATCHED AND source.x > 0 THEN DELETE']
    """
    if not when_matched:
        return [exp.When(matched=True, source=False, then=exp.Update(expressions=[exp.Star()]))]
    merge = sqlglot.parse_one(f"MERGE INTO {TARGET} USING {SOURCE} ON TRUE {when_matched}", read="spark")
    return [w.copy() for w in merge.args["whens"].expressions]


def parse_filter(merge_filter: str | None) -> exp.Expression | None:
    """``merge_filter`` as an expression (None without one)."""
    return sqlglot.parse_one(merge_filter, read="spark") if merge_filter else None


def check_whens(whens: list[exp.When], where: str) -> None:
    """Refuse clauses the unique-key kind cannot honour on every table format.

    Only ``WHEN MATCHED [AND cond] THEN UPDATE SET ... | DELETE`` is allowed: the
    insert of new keys is the kind's own, and an assignment must name a target column.

    >>> check_whens(parse_whens("WHEN NOT MATCHED THEN INSERT *"), "model m")
    Traceback (most recent call last):
    ...
    pyspark_incr.errors.ModelDefinitionError: model m: when_matched allows only WHEN MATCHED clauses (new keys are always inserted), got WHEN NOT MATCHED THEN INSERT *
    >>> check_whens(parse_whens("WHEN MATCHED THEN UPDATE SET source.x = 1"), "model m")
    Traceback (most recent call last):
    ...
    pyspark_incr.errors.ModelDefinitionError: model m: when_matched can only set target columns (target.x or x), got source.x
    """
    for when in whens:
        then = when.args.get("then")
        if not when.args.get("matched") or when.args.get("source"):
            raise ModelDefinitionError(
                f"{where}: when_matched allows only WHEN MATCHED clauses (new keys are always inserted), "
                f"got {when.sql('spark')}"
            )
        if not (isinstance(then, exp.Update) or _is_delete(then)):
            raise ModelDefinitionError(
                f"{where}: a when_matched clause must UPDATE SET or DELETE, got {when.sql('spark')}"
            )
        for eq in then.expressions if isinstance(then, exp.Update) else ():
            if isinstance(eq, exp.Star):
                continue
            column = eq.this if isinstance(eq, exp.EQ) else None
            if not isinstance(column, exp.Column) or column.table.lower() not in ("", TARGET):
                shown = column.sql("spark") if column is not None else eq.sql("spark")
                raise ModelDefinitionError(
                    f"{where}: when_matched can only set target columns (target.x or x), got {shown}"
                )


def assignments(when: exp.When) -> dict[str, exp.Expression] | None:
    """The columns a clause sets (lowercased) and their values; None for ``UPDATE SET *`` (every column).

    >>> {c: v.sql("spark") for c, v in assignments(parse_whens(
    ...     "WHEN MATCHED THEN UPDATE SET target.Name = COALESCE(source.name, target.name)")[0]).items()}
    {'name': 'COALESCE(source.name, target.name)'}
    """
    then = when.args.get("then")
    if not isinstance(then, exp.Update):
        return {}
    if any(isinstance(e, exp.Star) for e in then.expressions):
        return None
    return {eq.this.name.lower(): eq.expression for eq in then.expressions if isinstance(eq, exp.EQ)}


def on_condition(keys: tuple[str, ...], merge_filter: exp.Expression | None = None) -> exp.Expression:
    """Every key column equal (``=``: a NULL key never matches, as in MERGE), and the merge filter.

    >>> on_condition(("id", "region"), parse_filter("source.ds > target.ds")).sql("spark")
    '`target`.`id` = `source`.`id` AND `target`.`region` = `source`.`region` AND (source.ds > target.ds)'
    """
    terms = [_col(k, TARGET).eq(_col(k, SOURCE)) for k in keys]
    if merge_filter is not None:
        terms.append(exp.paren(merge_filter.copy()))
    return exp.and_(*terms)


def merge(table: exp.Table, source: exp.Query, keys: tuple[str, ...], whens: list[exp.When],
          merge_filter: exp.Expression | None = None) -> exp.Merge:
    """``MERGE INTO table AS target USING (source) AS source ON ... WHEN MATCHED ... WHEN NOT MATCHED THEN INSERT *``.

    >>> q = sqlglot.parse_one("SELECT id, name FROM raw.people", read="spark")
    >>> merge(exp.to_table("db.people"), q, ("id",), parse_whens(None)).sql("spark")
    'MERGE INTO `db`.`people` AS `target` USING (SELECT id, name FROM raw.people) AS `source` ON `target`.`id` = `source`.`id` WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *'
    """
    target = exp.table_(table.name, db=table.db or None, catalog=table.catalog or None, quoted=True,
                        alias=exp.to_identifier(TARGET, quoted=True))
    insert = exp.When(matched=False, source=False, then=exp.Insert(this=exp.Star()))
    return exp.Merge(
        this=target,
        using=exp.alias_(source.copy().subquery(), SOURCE, table=True, quoted=True),
        on=on_condition(keys, merge_filter),
        whens=exp.Whens(expressions=[w.copy() for w in whens] + [insert]),
    )


def merged_row(columns: list[str], whens: list[exp.When]) -> list[exp.Expression]:
    """The Parquet emulation's projection over ``target FULL OUTER JOIN source ON <on_condition>``.

    A row only in the target is kept, a row only in the source is inserted, and a
    matched pair takes the first clause whose condition holds (none: the target
    row stays as it was).

    >>> [e.sql("spark") for e in merged_row(["id", "n"], parse_whens(
    ...     "WHEN MATCHED AND source.n > 0 THEN UPDATE SET n = source.n"))][1]
    'CASE WHEN `source`.`__incr_in_source` IS NULL THEN `target`.`n` WHEN `target`.`__incr_in_target` IS NULL THEN `source`.`n` WHEN source.n > 0 THEN source.n ELSE `target`.`n` END AS `n`'
    """
    out = []
    for column in columns:
        case = (exp.Case()
                .when(_col(IN_SOURCE, SOURCE).is_(exp.null()), _col(column, TARGET))
                .when(_col(IN_TARGET, TARGET).is_(exp.null()), _col(column, SOURCE)))
        for when in whens:
            case = case.when(_condition(when), _value(when, column))
            if when.args.get("condition") is None:  # an unconditional clause: the clauses after it never apply
                break
        else:
            case = case.else_(_col(column, TARGET))
        out.append(exp.alias_(case, column, quoted=True))
    return out


def kept_rows(whens: list[exp.When]) -> exp.Expression:
    """False for the matched pairs a ``DELETE`` clause removes.

    >>> kept_rows(parse_whens(None)).sql("spark")
    'TRUE'
    >>> kept_rows(parse_whens("WHEN MATCHED AND source.op = 'D' THEN DELETE")).sql("spark")
    "`source`.`__incr_in_source` IS NULL OR `target`.`__incr_in_target` IS NULL OR NOT COALESCE(CASE WHEN source.op = 'D' THEN TRUE ELSE FALSE END, FALSE)"
    """
    if not any(_is_delete(w.args.get("then")) for w in whens):
        return exp.true()
    case = exp.Case()
    for when in whens:
        case = case.when(_condition(when), exp.Boolean(this=_is_delete(when.args.get("then"))))
        if when.args.get("condition") is None:
            break
    else:
        case = case.else_(exp.false())
    deleted = exp.func("COALESCE", case, exp.false())
    return exp.or_(_col(IN_SOURCE, SOURCE).is_(exp.null()), _col(IN_TARGET, TARGET).is_(exp.null()), exp.not_(deleted))


def assigned_columns(whens: list[exp.When]) -> set[str]:
    """Every column (lowercased) some clause sets explicitly."""
    return {c for w in whens for c in (assignments(w) or {})}


def _value(when: exp.When, column: str) -> exp.Expression:
    sets = assignments(when)
    if sets is None:
        return _col(column, SOURCE)
    value = sets.get(column.lower())
    return value.copy() if value is not None else _col(column, TARGET)


def _condition(when: exp.When) -> exp.Expression:
    condition = when.args.get("condition")
    return condition.copy() if condition is not None else exp.true()


def _is_delete(then: exp.Expression | None) -> bool:
    return isinstance(then, exp.Var) and then.name.upper() == "DELETE"


def _col(name: str, table: str) -> exp.Column:
    return exp.column(name, table=table, quoted=True)
