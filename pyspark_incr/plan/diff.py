"""What a plan shows of a change, as ``sqlmesh plan`` does: per directly changed model, unified diffs of
its rendered SQL and of its MODEL properties, and the models downstream it affects, with why.

Both versions are shown the same way, so only real differences remain: the SQL is the stored query
(macros and variables already evaluated, runtime macros as ``@start_ds``) pretty-printed by sqlglot
without comments, so whitespace and comments never show; the properties are the parsed ones, one
``key value`` line each, defaults left out. A Python model shows its code instead of SQL.

>>> from pyspark_incr.model.definition import parse_model
>>> old = parse_model("MODEL (name s.m, kind FULL); SELECT a, b FROM raw.t WHERE a > 0")
>>> new = parse_model("MODEL (name s.m, kind FULL, owner 'ana'); select a, b from raw.t -- why\\nwhere a > 10")
>>> print(model_diff(old, new, "prod", "plan"))
--- s.m sql (prod)
+++ s.m sql (plan)
@@ -4,3 +4,3 @@
 FROM raw.t
 WHERE
-  a > 0
+  a > 10
--- s.m properties (prod)
+++ s.m properties (plan)
@@ -2,2 +2,3 @@
 cron @daily
 interval_unit day
+owner ana
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
from typing import Any

import sqlglot
from sqlglot import exp

from pyspark_incr.intervals.times import format_ms
from pyspark_incr.model import python_model
from pyspark_incr.model import signals as model_signals
from pyspark_incr.model import statements as model_statements
from pyspark_incr.model.definition import Model
from pyspark_incr.model.fingerprint import data_hash, metadata_hash
from pyspark_incr.plan.records import ADDED, CHANGED, METADATA, REMOVED, ModelPlan, Plan

#: Record fields that are not properties a user writes (or are shown elsewhere: the query, the statements).
_NOT_PROPERTIES = frozenset({
    "name", "kind", "query", "schedule", "definition", "source", "context", "located", "depends_on",
    "pre_statements", "post_statements", "start_ms", "end_ms", "content_hash", "custom_audits",
})
_NO_DEFAULT = object()
_DAY_MS = 86_400_000
#: Context lines around each change: enough to place it, few enough to keep a plan short.
_CONTEXT = 2


def change_diff(plan: Plan, mp: ModelPlan) -> str | None:
    """The text a plan shows for ``mp``: what it affects downstream, then the diffs of its definition;
    None for a model whose own definition did not change (unchanged, or changed only through a parent)."""
    if mp.change == ADDED:
        old, new = None, mp.model
    elif mp.change == REMOVED:
        old, new = mp.model, None
    elif mp.change in (CHANGED, METADATA) and mp.previous is not None and _directly_changed(mp.previous, mp.model):
        old, new = mp.previous, mp.model
    else:
        return None
    downstream = [f"affects {c.name}: {c.category or c.change}. {c.reason}".rstrip() for c in affected(plan, mp.name)]
    shown = model_diff(old, new, plan.env, "plan")
    if not shown:  # the fingerprints differ in something neither view shows; say so rather than nothing
        shown = ("(no difference in the SQL or properties as shown: the change is in something else the "
                 "model's fingerprint covers)")
    return "\n".join([*downstream, shown])


def affected(plan: Plan, name: str) -> list[ModelPlan]:
    """The models of ``plan`` downstream of ``name`` (reading it, directly or not) that the plan changes."""
    reached, found = {name}, []
    for mp in plan.models:  # parents come before children in a plan
        if mp.name not in reached and mp.change != REMOVED and any(p in reached for p in mp.model.depends_on):
            reached.add(mp.name)
            if mp.change == CHANGED:
                found.append(mp)
    return found


def model_diff(old: Model | None, new: Model | None, before: str, after: str) -> str:
    """Unified diffs of the SQL and the properties of ``old`` and ``new`` (either None: added or removed),
    labelled with where each version is (``before``: the environment, ``after``: the plan); '' when alike."""
    model = new or old
    code = "code" if python_model.is_python(model) else "sql"
    parts = [
        _unified(sql_lines(old) if old else [], sql_lines(new) if new else [], f"{model.name} {code}", before, after),
        _unified(property_lines(old) if old else [], property_lines(new) if new else [],
                 f"{model.name} properties", before, after),
    ]
    return "\n".join(p for p in parts if p)


def sql_lines(model: Model) -> list[str]:
    """The model's SQL as the plan shows it: pre-statements, the query, post-statements, pretty-printed;
    a Python model's code; a seed or external model has none."""
    if python_model.is_python(model):
        return model.definition.splitlines()
    around = len(model.pre_statements) + len(model.post_statements)
    lines: list[str] = []
    for statement in (*model.pre_statements, model.query, *model.post_statements):
        if isinstance(statement, model_statements.Statement):
            lines += [f"-- only when {_flat(_pretty(statement.when))}"] if statement.when else []
            statement = statement.sql
        if statement:
            lines.extend((_pretty(statement) + (";" if around else "")).splitlines())
    return lines


def property_lines(model: Model) -> list[str]:
    """The model's properties, one ``key value`` line each (the kind's fields indented under it); defaults
    are left out, so adding a property shows as one added line."""
    kind = model.kind
    kind_defaults = {f.name: _default(f) for f in dataclasses.fields(kind)}
    lines = [f"kind {kind.name}"]
    lines += [f"  {f} {_show(v)}" for f, v in _fields(kind) if v != kind_defaults[f]]
    lines.append(f"cron {model.schedule.cron}")
    lines.append(f"interval_unit {model.schedule.unit.value}")
    if model.schedule.week_start:
        lines.append(f"week_start {model.schedule.week_start}")
    if model.start_ms is not None:
        lines.append(f"start {format_ms(model.start_ms)}")
    if model.end_ms is not None:
        lines.append(f"end {_end(model.end_ms)}")
    for f, v in _fields(model):
        if f not in _NOT_PROPERTIES and v != _DEFAULTS[f]:
            lines.append(f"{f} {_shown(f, v)}")
    lines += [f"custom audit {a.name}: {_flat(a.query)}" for a in model.custom_audits]
    if model.content_hash and not python_model.is_python(model):  # a Python model's code is shown as such
        lines.append(f"content {model.content_hash[:12]}")
    return lines


def _end(end_ms: int) -> str:
    """An exclusive end as a user writes it: a bare date means through that day."""
    shown = format_ms(end_ms)
    return format_ms(end_ms - _DAY_MS) if len(shown) == len("2024-01-01") else shown


def _directly_changed(old: Model, new: Model) -> bool:
    """True when ``new``'s own definition differs from ``old``'s, not only the versions of the models it reads."""
    return data_hash(old) != data_hash(new) or metadata_hash(old) != metadata_hash(new)


def _unified(a: list[str], b: list[str], what: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(a, b, f"{what} ({before})", f"{what} ({after})", n=_CONTEXT, lineterm="")
    return "\n".join(lines)


def _pretty(sql: str) -> str:
    """``sql`` as sqlglot prints it (Spark, pretty, no comments), runtime macros written ``@name``;
    text sqlglot cannot parse (``ADD JAR ...``) as written."""
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.SqlglotError:
        return sql.strip()
    tree = tree.transform(lambda n: exp.var("@" + n.name) if isinstance(n, exp.Parameter) else n)
    return tree.sql("spark", pretty=True, comments=False)


def _shown(name: str, value: Any) -> str:
    """A MODEL property's value as written: audits as calls, on_virtual_update as its statements."""
    if name == "audits":
        return "(" + ", ".join(f"{a}({', '.join(f'{k} := {v}' for k, v in args)})" for a, args in value) + ")"
    if name == "on_virtual_update":
        return "; ".join(_flat(statement) for statement, _ in value)
    return _show(value)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return _NO_DEFAULT  # a required field: always shown


_DEFAULTS = {f.name: _default(f) for f in dataclasses.fields(Model)}


def _fields(record: Any) -> list[tuple[str, Any]]:
    return [(f.name, getattr(record, f.name)) for f in dataclasses.fields(record)]


def _show(value: Any) -> str:
    """A property value as one line: tuples in parentheses, a mapping's pairs as ``key = value``."""
    if isinstance(value, model_signals.Signal):
        if value.query:
            return f"{value.name} := {_flat(value.query)}"
        code = f" [code {hashlib.sha256(value.code.encode()).hexdigest()[:12]}]" if value.code else ""
        return f"{value.name}({', '.join(f'{k} := {v}' for k, v in value.args)}){code}"
    if isinstance(value, tuple) and value and all(_is_pair(v) for v in value):
        return "(" + ", ".join(f"{k} = {_show(v)}" for k, v in value) + ")"
    if isinstance(value, tuple):
        return "(" + ", ".join(map(_show, value)) + ")"
    if isinstance(value, bool):
        return str(value).lower()
    return _flat(str(value))


def _is_pair(value: Any) -> bool:
    return type(value) is tuple and len(value) == 2 and isinstance(value[0], str)


def _flat(text: str) -> str:
    return " ".join(text.split())
