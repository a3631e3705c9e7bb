"""SQL of SCD type 2 (by time and by column), built with sqlglot and free of Spark.

One query, :func:`changes_query`, says what a run changes: for every key whose
open row must close, the old row with its new ``valid_to`` (action ``close``),
and for every key with a new version, the new row (action ``insert``). Keys
that did not change appear in neither. Delta runs it in :func:`merge_statement`;
a partitioned Parquet table rewrites the partitions it touches as their old rows
minus the closed open rows plus the changes. An unpartitioned Parquet table is
rewritten whole by :func:`next_version_query`: its closed history as it is, and
from one full join of its open rows with the source each open row (kept or
closed) and each new version. Both queries compute that join once, on keys the
source's dedupe already shuffled and sorted by (:mod:`scd2_keys`).

Semantics, from the SQLMesh documentation (``shared/spec/sqlmesh-model-kinds.txt``):

- the source (the model's query) is a snapshot of the current rows, one per key;
- by time: a key changed when its ``updated_at`` grew; its open row closes at
  the new ``updated_at``, which is also the new row's ``valid_from``;
- by column: a key changed when one of ``columns`` differs (NULL-aware); the
  open row closes at the execution time, which is the new row's ``valid_from``;
- a key missing from the source closes at the execution time
  (``invalidate_hard_deletes``, true by default as the spec's example deletes);
- a key first seen on the initial load (the table is empty) starts at
  1970-01-01 (or ``updated_at`` / the execution time with
  ``updated_at_as_valid_from`` / ``execution_time_as_valid_from``); a key first
  seen later starts at its ``updated_at`` (by time; the spec's Milkshake) or at
  the execution time (by column);
- a key that re-appears after a delete starts at the later of its
  ``updated_at`` and the ``valid_to`` of its deleted row (by time), or at the
  execution time (by column).

Keys match NULL-safely (``IS NOT DISTINCT FROM``): a NULL key is one key, not a
new key on every run.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlglot import exp

from pyspark_incr.writers import scd2_keys
from pyspark_incr.writers.scd2_spec import Scd2Spec

#: The column of :func:`changes_query` saying what a row does, and its two values.
ACTION, CLOSE, INSERT = "__incr_action", "close", "insert"

_SOURCE, _LATEST, _CLOSED, _JOINED = "__incr_source", "__incr_latest", "__incr_closed", "__incr_joined"
_IN_SOURCE, _IN_TARGET, _LAST_VALID_TO = "__incr_in_source", "__incr_in_target", "__incr_last_valid_to"
_TARGET, _CHANGES, _PREVIOUS = "__incr_target", "__incr_changes", "__incr_previous"


def time_literal(ms: int, time_type: str) -> exp.Expression:
    """An instant (epoch ms, UTC) as a literal of ``time_type``, whatever the session time zone.

    >>> time_literal(1577930400000, "TIMESTAMP").sql("spark")
    "CAST('2020-01-02 02:00:00+00:00' AS TIMESTAMP)"
    >>> time_literal(0, "TIMESTAMP_NTZ").sql("spark"), time_literal(1577930400000, "DATE").sql("spark")
    ("CAST('1970-01-01 00:00:00' AS TIMESTAMP_NTZ)", "CAST('2020-01-02' AS DATE)")
    """
    instant = datetime.fromtimestamp(ms / 1000, timezone.utc)
    if time_type == "DATE":
        text = instant.strftime("%Y-%m-%d")
    else:
        text = instant.strftime("%Y-%m-%d %H:%M:%S") + (f".{instant.microsecond:06d}" if instant.microsecond else "")
        if time_type != "TIMESTAMP_NTZ":  # a local-time TIMESTAMP reads an offset-less string in the session zone
            text += "+00:00"
    return exp.cast(exp.Literal.string(text), exp.DataType.build(time_type, dialect="spark"))


def source_query(spec: Scd2Spec, query: exp.Query) -> exp.Select:
    """The query's rows, one per key, ``updated_at`` cast to the time type, flagged as present in the source,
    with the key's join columns (:func:`scd2_keys.key_columns`).

    A key with several rows keeps one (as SQLMesh's DISTINCT ON): by time the latest
    ``updated_at``, by column the least by the compared columns, so reruns pick the same row.
    The window partitions by the coalesced keys, the join's own keys, so the join reuses its
    shuffle and sort; within a partition the NULL pattern sorts first, and the first row of
    each pattern is kept (a row whose predecessor has another pattern).
    """
    order = ([exp.Ordered(this=_cast_updated_at(spec), desc=True, nulls_first=False)] if spec.by_time
             else [exp.Ordered(this=_col(c), nulls_first=True) for c in spec.check_columns])
    previous = exp.Window(this=exp.Lag(this=_col(scd2_keys.NULLS)), partition_by=scd2_keys.window_keys(spec.unique_key),
                          order=exp.Order(expressions=[exp.Ordered(this=_col(scd2_keys.NULLS), nulls_first=True),
                                                       *order]))
    keyed = exp.select(exp.Star(), *scd2_keys.key_columns(spec.unique_key, spec.key_types, _col)).from_(
        query.subquery(_name("__incr_query"), copy=True))
    ranked = exp.select(exp.Star(), exp.alias_(previous, _PREVIOUS, quoted=True)).from_(
        keyed.subquery(_name("__incr_keyed")))
    columns = [exp.alias_(_cast_updated_at(spec), c, quoted=True) if c == spec.updated_at else _col(c)
               for c in spec.columns]
    # Not ROW_NUMBER() = 1: Spark would add a sort and limit per key before the shuffle (WindowGroupLimit),
    # which pays only when keys repeat often; a snapshot has one row per key.
    first = exp.not_(exp.NullSafeEQ(this=_col(_PREVIOUS), expression=_col(scd2_keys.NULLS)))
    return (exp.select(*columns, *_key_refs(spec, _col), exp.alias_(exp.true(), _IN_SOURCE, quoted=True))
            .from_(ranked.subquery(_name("__incr_ranked"))).where(first))


def table_shape(spec: Scd2Spec, query: exp.Query) -> exp.Select:
    """Rows shaped like the table (the source's columns, then valid_from and valid_to): its schema to create it."""
    null = _null(spec)
    return exp.select(*[_col(c) for c in spec.columns], exp.alias_(null, spec.valid_from, quoted=True),
                      exp.alias_(null.copy(), spec.valid_to, quoted=True)).from_(
        source_query(spec, query).subquery(_name(_SOURCE)))


def changes_query(spec: Scd2Spec, query: exp.Query, target: exp.Table, execution_ms: int,
                  initial_load: bool) -> exp.Query:
    """The rows a run closes (``close``: the old row with its new valid_to) and adds (``insert``).

    ``initial_load``: the table is empty, so every row is new and starts at 1970-01-01 unless an
    option says otherwise; the target is then not read at all.
    """
    source = source_query(spec, query)
    execution = time_literal(execution_ms, spec.time_type)
    if initial_load:
        if spec.by_time and spec.updated_at_as_valid_from:
            start = _col(spec.updated_at)
        elif not spec.by_time and spec.execution_time_as_valid_from:
            start = execution
        else:
            start = time_literal(0, spec.time_type)
        inserts = _action_select(spec, INSERT, [_col(c) for c in spec.columns], start, _null(spec)).from_(_ref(_SOURCE))
        return inserts.with_(_name(_SOURCE), as_=source)
    return _with_joined(spec, _versions(spec, execution, changes_only=True), source, target)


def next_version_query(spec: Scd2Spec, query: exp.Query, target: exp.Table, execution_ms: int) -> exp.Query:
    """The table's next version after a run over a non-empty table, each row flagged in ``ACTION``.

    The closed history as it is, then one row or two from each row of the open rows fully
    joined to the source (the join computed once): the open row, kept or closed (``close``),
    and the key's new version when it is new or changed (``insert``). Rows kept as they were
    have a NULL action, so counting the actions counts what the run changed. The same rows as
    the table minus the closed open rows plus :func:`changes_query`'s.
    """
    execution = time_literal(execution_ms, spec.time_type)
    null_action = exp.cast(exp.null(), exp.DataType.build("STRING"))
    history = exp.select(exp.alias_(null_action, ACTION, quoted=True), *[_col(c) for c in spec.table_columns]).from_(
        target.copy()).where(_present(_col(spec.valid_to)))
    result = exp.union(history, _versions(spec, execution, changes_only=False), distinct=False)
    return _with_joined(spec, result, source_query(spec, query), target)


def _with_joined(spec: Scd2Spec, query: exp.Query, source: exp.Select, target: exp.Table) -> exp.Query:
    """``query`` with its named subqueries: the source, the table's open rows (and closed keys), and
    their full join on the key."""
    latest, src = _col_in(_LATEST), _col_in(_SOURCE)
    both = exp.select(
        *[exp.alias_(latest(c), _t(c), quoted=True) for c in spec.table_columns], latest(_IN_TARGET),
        *[src(c) for c in spec.columns], src(_IN_SOURCE), *(_key_refs(spec, src) if spec.by_time else []),
    ).from_(_ref(_LATEST)).join(_ref(_SOURCE), on=_keys_match(spec, latest, src), join_type="full outer")
    query = _with_target_views(spec, query.with_(_name(_SOURCE), as_=source), target)
    return query.with_(_name(_JOINED), as_=both)


def _versions(spec: Scd2Spec, execution: exp.Expression, changes_only: bool) -> exp.Select:
    """From each joined row, in one pass: its open row (closed where it must close), then its key's new version.

    ``changes_only``: the open row only when it closes (the changes); else always, with a NULL
    action when kept (the next version).
    """
    joined = _col_in(_JOINED)
    in_source, in_target = _present(joined(_IN_SOURCE)), _present(joined(_IN_TARGET))
    differs = _changed(spec, joined, lambda c: joined(_t(c)))
    closing = _closing(spec, in_source, differs, joined(_IN_SOURCE))
    close_at = _close_at(spec, in_source, joined, execution)
    old = [joined(_t(c)) for c in spec.columns]
    if changes_only:
        old_row = exp.Case().when(exp.and_(in_target, closing), _struct(
            spec, exp.Literal.string(CLOSE), old, joined(_t(spec.valid_from)), close_at))
    else:
        old_row = exp.Case().when(in_target.copy(), _struct(
            spec, exp.Case().when(closing.copy(), exp.Literal.string(CLOSE)), old, joined(_t(spec.valid_from)),
            exp.Case().when(closing.copy(), close_at.copy()).else_(joined(_t(spec.valid_to)))))
    new_row = exp.Case().when(
        exp.and_(in_source.copy(), exp.or_(joined(_IN_TARGET).is_(exp.null()), differs.copy())),
        _struct(spec, exp.Literal.string(INSERT), [joined(c) for c in spec.columns],
                _insert_valid_from(spec, joined(_IN_TARGET), joined(spec.updated_at), execution), _null(spec)))
    row = exp.to_identifier("__incr_row", quoted=True)
    present = exp.Lambda(this=exp.not_(exp.Is(this=row, expression=exp.null())), expressions=[row.copy()])
    rows = exp.Inline(this=exp.ArrayFilter(this=exp.Array(expressions=[old_row, new_row]), expression=present))
    versions = exp.select(rows).from_(_ref(_JOINED))
    if spec.by_time:  # re-appearing keys start no earlier than their deletion
        versions = versions.join(_ref(_CLOSED), on=_keys_match(spec, joined, _col_in(_CLOSED)), join_type="left")
    return versions


def _struct(spec: Scd2Spec, action: exp.Expression, values: list[exp.Expression], valid_from: exp.Expression,
            valid_to: exp.Expression) -> exp.Struct:
    """One output row as a struct whose fields are named as the table's columns (after ``ACTION``)."""
    fields = [(action, ACTION), *zip(values, spec.columns), (valid_from, spec.valid_from), (valid_to, spec.valid_to)]
    return exp.Struct(expressions=[exp.alias_(value, name, quoted=True) for value, name in fields])


def merge_statement(spec: Scd2Spec, target: exp.Table, changes: exp.Query) -> exp.Merge:
    """The Delta MERGE of a run: close the open rows of changed and deleted keys, insert the new versions.

    Only ``close`` rows can match (an open row of their key), so the new versions of the
    same keys are inserted rather than matched.
    """
    t, s = _col_in(_TARGET), _col_in(_CHANGES)
    on = exp.and_(s(ACTION).eq(exp.Literal.string(CLOSE)), t(spec.valid_to).is_(exp.null()),
                  *[exp.NullSafeEQ(this=t(k), expression=s(k)) for k in spec.unique_key])
    update = exp.When(matched=True, source=False, then=exp.Update(expressions=[
        t(spec.valid_to).eq(s(spec.valid_to))]))
    insert = exp.When(matched=False, source=False, condition=s(ACTION).eq(exp.Literal.string(INSERT)),
                      then=exp.Insert(this=exp.Tuple(expressions=[_col(c) for c in spec.table_columns]),
                                      expression=exp.Tuple(expressions=[s(c) for c in spec.table_columns])))
    return exp.Merge(this=exp.alias_(target.copy(), _TARGET, table=True, quoted=True),
                     using=changes.subquery(_name(_CHANGES), copy=True), on=on,
                     whens=exp.Whens(expressions=[update, insert]))


def _with_target_views(spec: Scd2Spec, query: exp.Query, target: exp.Table) -> exp.Query:
    """``query`` with the table's open rows (flagged as present in the table) and, by time, each key's last
    ``valid_to`` among its closed rows, as named subqueries; both with the key's join columns."""
    query = query.with_(_name(_LATEST), as_=exp.select(
        *[_col(c) for c in spec.table_columns], *scd2_keys.key_columns(spec.unique_key, spec.key_types, _col),
        exp.alias_(exp.true(), _IN_TARGET, quoted=True)).from_(target.copy()).where(_col(spec.valid_to).is_(exp.null())))
    if not spec.by_time:
        return query
    return query.with_(_name(_CLOSED), as_=exp.select(
        *scd2_keys.key_columns(spec.unique_key, spec.key_types, _col),
        exp.alias_(exp.Max(this=_col(spec.valid_to)), _LAST_VALID_TO, quoted=True))
        .from_(target.copy()).where(_present(_col(spec.valid_to)))
        .group_by(*[_col(k) for k in spec.unique_key]))


def _present(flag: exp.Expression) -> exp.Expression:
    """A side of an outer join has the row: its flag (or a column never NULL there) is not NULL."""
    return flag.is_(exp.null()).not_()


def _changed(spec: Scd2Spec, new: Any, old: Any) -> exp.Expression:
    """The source's row (columns ``new(c)``) is a new version of the table's open row (``old(c)``): NULL, not
    true, when there is none."""
    if spec.by_time:
        return new(spec.updated_at) > old(spec.updated_at)
    same = [exp.NullSafeEQ(this=new(c), expression=old(c)) for c in spec.check_columns]
    return exp.not_(exp.and_(*same))


def _closing(spec: Scd2Spec, in_source: exp.Expression, differs: exp.Expression,
             source_flag: exp.Expression) -> exp.Expression:
    """An open row closes: its key has a new version, or (``invalidate_hard_deletes``) left the source."""
    changed = exp.and_(in_source, differs)
    if not spec.invalidate_hard_deletes:
        return changed
    return exp.or_(changed, source_flag.is_(exp.null()))


def _close_at(spec: Scd2Spec, in_source: exp.Expression, source: Any, execution: exp.Expression) -> exp.Expression:
    """When a closing open row ends: by column at the execution time; by time when its new version starts,
    or at the execution time when the run saw its key gone."""
    if not spec.by_time:
        return execution
    if not spec.invalidate_hard_deletes:
        return source(spec.updated_at)
    return exp.Case().when(in_source.copy(), source(spec.updated_at)).else_(execution.copy())


def _insert_valid_from(spec: Scd2Spec, in_target: exp.Expression, updated_at: exp.Expression,
                       execution: exp.Expression) -> exp.Expression:
    """A new version's start: by column the execution time; by time its ``updated_at``, or the key's last
    ``valid_to`` when it re-appears after a delete with an older ``updated_at``."""
    if not spec.by_time:
        return execution
    last = _col(_LAST_VALID_TO, _CLOSED)
    return exp.Case().when(exp.and_(in_target.is_(exp.null()), last > updated_at), last).else_(updated_at.copy())


def _action_select(spec: Scd2Spec, action: str, values: list[exp.Expression], valid_from: exp.Expression,
                   valid_to: exp.Expression) -> exp.Select:
    """``action`` and the table's columns: ``values`` for the query's columns, then valid_from and valid_to."""
    named = [_as(v, c) for v, c in zip(values, spec.columns)]
    return exp.select(exp.alias_(exp.Literal.string(action), ACTION, quoted=True), *named,
                      _as(valid_from, spec.valid_from), _as(valid_to, spec.valid_to))


def _as(value: exp.Expression, name: str) -> exp.Expression:
    """``value AS name``, or just the column when it already has that name."""
    if isinstance(value, exp.Column) and value.name == name:
        return value
    return exp.alias_(value, name, quoted=True)


def _keys_match(spec: Scd2Spec, left: Any, right: Any) -> exp.Expression:
    """Two sides carrying :func:`scd2_keys.key_columns` have the same key (NULL-safely)."""
    return scd2_keys.keys_match(spec.unique_key, spec.key_types, left, right)


def _key_refs(spec: Scd2Spec, side: Any) -> list[exp.Expression]:
    """A side's key join columns, to carry them on."""
    return [side(f"{scd2_keys.K}{i}") for i in range(len(spec.unique_key))] + [side(scd2_keys.NULLS)]


def _cast_updated_at(spec: Scd2Spec) -> exp.Expression:
    return exp.cast(_col(spec.updated_at), exp.DataType.build(spec.time_type, dialect="spark"))


def _null(spec: Scd2Spec) -> exp.Expression:
    return exp.cast(exp.null(), exp.DataType.build(spec.time_type, dialect="spark"))


def _t(column: str) -> str:
    """A table column's name in the joined rows, beside the source's column of the same name."""
    return f"__incr_t_{column}"


def _ref(name: str) -> exp.Table:
    """A named subquery (CTE) to select from."""
    return exp.table_(name, quoted=True)


def _name(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def _col(name: str, table: str | None = None) -> exp.Column:
    return exp.column(name, table=table, quoted=True)


def _col_in(table: str) -> Any:
    return lambda name: _col(name, table)
