"""What a table diff compares: two tables by name, or the tables two environments hold for one model.

An environment shows a model as a view over the physical table of the version it holds; the diff
reads that physical table, so two environments holding the same version compare one table with itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError

from pyspark_incr.errors import ArgumentError, UnknownModelError
from pyspark_incr.model.definition import Model
from pyspark_incr.plan.environment import check_env
from pyspark_incr.plan.sources import select_models
from pyspark_incr.state.store import EnvEntry, StateStore
from pyspark_incr.writers import tables

ROLES = ("source", "target")


@dataclass(frozen=True)
class Side:
    """One side of a diff: its role, how results name it, and the table read."""

    role: str
    #: The table as given, or ``<env>: <physical table>`` for an environment.
    label: str
    table: exp.Table

    @property
    def sql(self) -> str:
        """The table as Spark SQL, every part quoted."""
        return self.table.sql("spark")


def table_side(spark: Any, role: str, name: str | None) -> Side:
    """The ``role`` side naming a table or view (``db.t`` or ``catalog.db.t``) that must exist."""
    table = _parse_table(role, name)
    try:
        found = tables.exists(spark, table)
    except Exception as e:  # noqa: BLE001 - the catalog refuses names it cannot hold (a namespace of two parts)
        raise ArgumentError(f"table_diff: {role} {name!r} cannot name a table in this catalog "
                            f"({str(e).splitlines()[0][:200]}); write db.table, backquoting parts with special "
                            "characters") from None
    if not found:
        raise ArgumentError(
            f"table_diff: {role} table {name!r} does not exist; name an existing table or view as db.table, "
            "or pass model => '<model>' to compare that model in two environments (source and target then name "
            "environments)")
    return Side(role, table.sql("spark"), table)


def env_sides(spark: Any, model: str, source: str, target: str) -> tuple[Side, Side, tuple[str, ...]]:
    """The tables ``source`` and ``target`` environments hold for ``model``, and the model's grain (may be empty).

    The grain is the target's (the version under review), else the source's.
    """
    name = model.strip().lower()
    store = StateStore(spark)
    entries = {role: _entry(store, role, env, name, model) for role, env in zip(ROLES, (source, target))}
    sides = tuple(_env_side(spark, role, env, entry) for (role, (env, entry)) in entries.items())
    grain = model_grain(entries["target"][1].parsed()) or model_grain(entries["source"][1].parsed())
    return sides[0], sides[1], grain


def model_grain(model: Model) -> tuple[str, ...]:
    """The columns identifying a row of ``model``: its grain, else its unique key (with valid_from for SCD2).

    >>> from pyspark_incr.model.definition import parse_model
    >>> model_grain(parse_model("MODEL (name a.b, kind FULL, grain (id, ds)); SELECT 1 AS id, 2 AS ds"))
    ('id', 'ds')
    >>> model_grain(parse_model("MODEL (name a.b, kind SCD_TYPE_2 (unique_key id)); SELECT 1 AS id, "
    ...                         "TIMESTAMP '2024-01-01' AS updated_at"))
    ('id', 'valid_from')
    >>> model_grain(parse_model("MODEL (name a.b, kind FULL); SELECT 1 AS id"))
    ()
    """
    if model.grains:
        return tuple(model.grains)
    key = tuple(getattr(model.kind, "unique_key", ()) or ())
    valid_from = getattr(model.kind, "valid_from_name", None)
    # an SCD2 table holds one row per key and version: the version's start tells them apart
    return (*key, valid_from) if key and valid_from else key


def key_columns(on: str | None, grain: tuple[str, ...], model: str | None) -> tuple[str, ...]:
    """The join key: the ``on`` argument's comma-separated columns, else the model's grain.

    >>> key_columns("id, `event date`", (), None), key_columns(None, ("id",), "a.b")
    (('id', 'event date'), ('id',))
    """
    if on is not None and on.strip():
        return names_arg("on", on)
    if grain:
        return grain
    whose = f"model {model.strip().lower()} declares no grain nor unique_key" if model else "two tables have no grain"
    raise ArgumentError(f"table_diff: {whose}, so the rows cannot be paired; pass on => 'id' (the key columns, "
                        "comma-separated)")


def names_arg(argument: str, text: str | None) -> tuple[str, ...]:
    """Comma-separated column names, each optionally in backquotes.

    >>> names_arg("skip_columns", " a, `b c` ,C")
    ('a', 'b c', 'C')
    """
    names = []
    for part in (text or "").split(","):
        name = part.strip()
        if len(name) > 1 and name[0] == name[-1] == "`":
            name = name[1:-1].replace("``", "`")
        if not name:
            raise ArgumentError(f"table_diff: argument {argument} {text!r} has an empty column name; "
                                "list columns separated by commas, e.g. 'id, ds'")
        names.append(name)
    return tuple(names)


def _parse_table(role: str, name: str | None) -> exp.Table:
    try:
        table = exp.to_table((name or "").strip(), dialect="spark")
    except (SqlglotError, AttributeError, ValueError):  # sqlglot's to_table unpacks what it failed to parse
        table = None
    if not isinstance(table, exp.Table) or not table.name or table.args.get("alias") or len(table.parts) > 3:
        raise ArgumentError(f"table_diff: {role} {name!r} is not a table name; write db.table (or catalog.db.table), "
                            "backquoting parts with special characters")
    return exp.table_(*[exp.to_identifier(p.name, quoted=True) for p in reversed(table.parts)], quoted=True)


@dataclass(frozen=True)
class Selected:
    """A model a selector chose: its two sides and grain, or why it is not compared (``skipped``)."""

    model: str
    sides: tuple[Side, Side] | None
    grain: tuple[str, ...] = ()
    skipped: str = ""


def env_selection(spark: Any, select: str, source: str, target: str) -> list[Selected]:
    """The models ``select`` chooses among those ``source`` and ``target`` hold, by name; a model compared only
    where the two hold different versions of it (as SQLMesh diffs only models a change affects)."""
    store = StateStore(spark)
    (_, held_source), (_, held_target) = (_held(store, role, env) for role, env in zip(ROLES, (source, target)))
    known = {name: entry.parsed() for name, entry in {**held_source, **held_target}.items()}
    found = []
    for name in sorted(select_models(known, select)):
        s, t = held_source.get(name), held_target.get(name)
        if s is None or t is None:
            found.append(Selected(name, None, skipped=f"only in {'target' if s is None else 'source'}"))
        elif s.table_name is None or t.table_name is None:
            found.append(Selected(name, None, skipped="no table (EXTERNAL or EMBEDDED)"))
        elif s.table_name == t.table_name:
            found.append(Selected(name, None, skipped="the same version in both: nothing to compare"))
        else:
            sides = (_env_side(spark, "source", source, s), _env_side(spark, "target", target, t))
            found.append(Selected(name, sides, model_grain(t.parsed()) or model_grain(s.parsed())))
    return found


def _held(store: StateStore, role: str, env: str) -> tuple[str, dict[str, EnvEntry]]:
    try:
        env_name = check_env(env)
    except ArgumentError:
        raise ArgumentError(f"table_diff: {role} {env!r} is not an environment name; with model or select given, "
                            "source and target name environments (e.g. 'prod', 'dev'); leave them out to compare "
                            "two tables") from None
    held = store.environment(env_name)
    if not held:
        known = ", ".join(store.environments()) or "none"
        raise ArgumentError(f"table_diff: {role} environment {env_name!r} holds no models (environments: {known}); "
                            "apply the project to it first")
    return env_name, held


def _entry(store: StateStore, role: str, env: str, name: str, model: str) -> tuple[str, EnvEntry]:
    env_name, held = _held(store, role, env)
    if name not in held:
        raise UnknownModelError(f"table_diff: model {model!r} is not in {role} environment {env_name} (it holds: "
                                f"{', '.join(sorted(held))}); apply it there first")
    return env_name, held[name]


def _env_side(spark: Any, role: str, env: str, entry: EnvEntry) -> Side:
    if entry.table_name is None:
        raise ArgumentError(f"table_diff: model {entry.model} has no table in environment {env} (its kind builds "
                            "none: EXTERNAL or EMBEDDED); compare the tables it reads instead")
    table = _parse_table(role, entry.table_name)
    if not tables.exists(spark, table):
        raise ArgumentError(f"table_diff: the table of model {entry.model} in environment {env}, {entry.table_name}, "
                            f"is missing; apply the model to {env} again")
    return Side(role, f"{env}: {table.sql('spark')}", table)
