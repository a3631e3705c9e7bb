"""The model record and :func:`parse_model`, from SQLMesh-syntax definition text.

>>> m = parse_model('''MODEL (name Sales.Daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds),
...   start '2024-01-01', cron '@daily', grain (ds, shop));
... SELECT ds, shop, SUM(x) AS total FROM raw.sales WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds, shop''')
>>> m.name, m.kind.name, m.schedule.unit.value, m.grains, m.depends_on
('sales.daily', 'INCREMENTAL_BY_TIME_RANGE', 'day', ('ds', 'shop'), ('raw.sales',))
>>> parse_model("MODEL (name a.v); SELECT 1 AS x").kind.name
'VIEW'
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Iterable

from sqlglot import exp

from pyspark_incr.errors import ArgumentError, ModelDefinitionError
from pyspark_incr.intervals.schedule import Schedule
from pyspark_incr.intervals.times import to_end_ms, to_ms
from pyspark_incr.model.audit_defs import AuditDef, audits_from_json, audits_to_json
from pyspark_incr.model.block import KindSpec, Property, parse_block
from pyspark_incr.model.kinds import KindBase, ViewKind, kind_from_spec
from pyspark_incr.model.overrides import OVERRIDES
from pyspark_incr.model.properties import DATA, METADATA, Prop, read_properties
from pyspark_incr.model import blueprints, extras, macro_properties, macro_python, python_model
from pyspark_incr.model import signals as model_signals
from pyspark_incr.model import query as model_query
from pyspark_incr.model import statements as model_statements
from pyspark_incr.model.values import (
    as_bool, as_calls, as_choice, as_column_types, as_dialect, as_expressions, as_literal_mapping, as_model_names,
    _items, _pairs, _value, _word, as_names, as_string, as_text_mapping, as_timezone, as_words, as_words_mapping,
)

TABLE_FORMATS = ("parquet", "delta", "iceberg")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
#: What a part of a model name may hold.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_ -]+")


def as_safety_overrides(prop: Property, where: str) -> tuple[str, ...]:
    """``(allow_limit = true, ...)`` or ``(allow_limit, allow_having)``: the overrides turned on, sorted.

    >>> from pyspark_incr.model.block import parse_block
    >>> as_safety_overrides(parse_block("MODEL (name a.b, safety_overrides (allow_limit = true, allow_having = false))"
    ...                                 ).properties["safety_overrides"], "m")
    ('allow_limit',)
    """
    items = _items(_value(prop, where))
    if all(isinstance(i, (exp.EQ, exp.PropertyEQ)) for i in items):
        chosen = [name for name, value in _pairs(prop, where) if _truth(value, prop, where)]
    else:
        chosen = [w for w in as_words(prop, where)]
    for name in chosen:
        if name.lower() not in OVERRIDES:
            close = difflib.get_close_matches(name.lower(), OVERRIDES, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ModelDefinitionError(f"{where}: {prop.at}: unknown safety override {name!r}{hint} "
                                       f"(known: {', '.join(OVERRIDES)})")
    return tuple(sorted({n.lower() for n in chosen}))


def _truth(value: exp.Expression, prop: Property, where: str) -> bool:
    word = value.this if isinstance(value, exp.Boolean) else _word(value)
    if word in (True, False):
        return bool(word)
    if isinstance(word, str) and word.lower() in ("true", "false"):
        return word.lower() == "true"
    raise ModelDefinitionError(f"{where}: {prop.at}: safety_overrides values must be true or false, got {prop.text!r}")


def as_weekday(prop: Property, where: str) -> int:
    """``monday`` .. ``sunday`` as 0 .. 6."""
    return WEEKDAYS.index(as_choice(*WEEKDAYS)(prop, where))


@dataclass(frozen=True)
class Model:
    """One parsed model. ``query`` is Spark SQL with only runtime macros left (None for SEED/EXTERNAL)."""

    name: str
    kind: KindBase
    query: str | None
    schedule: Schedule
    start_ms: int | None = None
    end_ms: int | None = None
    cron_tz: str | None = None
    description: str | None = None
    owner: str | None = None
    grains: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()
    column_descriptions: tuple[tuple[str, str], ...] = ()
    column_tags: tuple[tuple[str, tuple[str, ...]], ...] = ()
    columns: tuple[tuple[str, str], ...] = ()
    partitioned_by: tuple[str, ...] = ()
    clustered_by: tuple[str, ...] = ()
    table_format: str | None = None
    storage_format: str | None = None
    physical_properties: tuple[tuple[str, str], ...] = ()
    allow_partials: bool = False
    enabled: bool = True
    dialect: str = "spark"
    references: tuple[str, ...] = ()
    audits: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    #: The project's custom audits (``audits/*.sql``) the model calls: it carries them, so a run needs no project.
    custom_audits: tuple[AuditDef, ...] = ()
    #: Incremental safety rules the owner vouches for (``allow_window_functions``, ...): see ``pyspark_incr.safety``.
    safety_overrides: tuple[str, ...] = ()
    #: Lint rules not run on this model (``"ALL"``: none), and False to keep ``pyspark-incr format`` off its file.
    ignored_rules: tuple[str, ...] = ()
    formatting: bool = True
    #: signals: what must say an interval is ready before it is built (:mod:`pyspark_incr.model.signals`).
    signals: tuple[model_signals.Signal, ...] = ()
    # What SQLMesh models carry around their query (pyspark_incr.model.extras):
    #: Spark SQL settings in force while the model's batches run (``spark.conf`` keys and values).
    session_properties: tuple[tuple[str, str], ...] = ()
    #: TBLPROPERTIES (and ``comment``) of the environment's view of the model.
    virtual_properties: tuple[tuple[str, str], ...] = ()
    #: ``(statement, where it stands)`` run after the environment's view is created or updated.
    on_virtual_update: tuple[tuple[str, str], ...] = ()
    #: Statements run before each batch's query and after its write (:mod:`pyspark_incr.model.statements`).
    pre_statements: tuple[model_statements.Statement, ...] = ()
    post_statements: tuple[model_statements.Statement, ...] = ()
    #: Tables the query reads (after CTE resolution), lowercased ``schema.table``.
    depends_on: tuple[str, ...] = ()
    #: Hash of data the model loads from outside its definition (a SEED's CSV); part of the data fingerprint.
    content_hash: str | None = None
    definition: str = field(default="", compare=False)
    source: str = field(default="registry", compare=False)
    #: JSON of the project defaults, variables and custom audits the definition was parsed with (see :func:`reparse`).
    context: str = field(default="", compare=False)
    #: Where the model's name stands: ``<file>: line L, column C`` (for errors about the model as a whole).
    located: str = field(default="", compare=False)

    @property
    def schema(self) -> str:
        return self.name.split(".")[0]

    @property
    def table(self) -> str:
        return self.name.split(".")[1]


def _time(end: bool) -> Callable[[Property, str], int]:
    def read(prop: Property, where: str) -> int:
        value = as_string(prop, where)
        try:
            return to_end_ms(value, prop.key) if end else to_ms(value, prop.key)
        except ArgumentError as e:
            raise ModelDefinitionError(f"{where}: {prop.at}: {e}") from None

    return read


#: Every MODEL property besides ``name`` and ``kind``.
MODEL_PROPS: tuple[Prop, ...] = (
    Prop("start", _time(end=False), METADATA, "start_ms"),
    Prop("end", _time(end=True), METADATA, "end_ms"),
    Prop("cron", as_string, METADATA),
    Prop("cron_tz", as_timezone, METADATA),
    Prop("interval_unit", as_string, METADATA),
    Prop("week_start", as_weekday, METADATA),
    Prop("owner", as_string, METADATA),
    Prop("description", as_string, METADATA),
    Prop("column_descriptions", as_text_mapping, METADATA),
    Prop("columns", as_column_types, DATA),
    Prop("grain", as_names, METADATA),
    Prop("grains", as_names, METADATA),
    Prop("tags", as_words, METADATA),
    Prop("terms", as_words, METADATA),
    Prop("column_tags", as_words_mapping, METADATA),
    Prop("partitioned_by", as_expressions, DATA),
    Prop("clustered_by", as_expressions, DATA),
    Prop("table_format", as_choice(*TABLE_FORMATS), DATA),
    Prop("storage_format", as_string, DATA),
    Prop("physical_properties", as_literal_mapping, DATA),
    Prop("allow_partials", as_bool, METADATA),
    Prop("enabled", as_bool, METADATA),
    Prop("dialect", as_dialect, METADATA),
    Prop("references", as_model_names, METADATA),
    Prop("audits", as_calls, METADATA, aliases=("assertions",)),
    Prop("safety_overrides", as_safety_overrides, METADATA),
    Prop("ignored_rules", as_words, METADATA),  # pyspark-incr lint, pyspark-incr format: no table changes
    Prop("formatting", as_bool, METADATA),
    Prop("signals", model_signals.as_signals, METADATA),
    Prop("session_properties", extras.as_settings, METADATA),
    Prop("virtual_properties", extras.as_view_properties, METADATA),
)


def parse_model(
    text: str,
    source: str = "registry",
    defaults: dict[str, Any] | None = None,
    variables: dict[str, Any] | None = None,
    audits: Iterable[AuditDef] = (),
    signals: dict[str, model_signals.SignalSource] | None = None,
    python_macros: macro_python.ProjectMacros | None = None,
    blueprint: dict[str, str] | None = None,
) -> Model:
    """Parse and validate one definition; errors name the source, the line and the fix.

    ``defaults`` (record field -> value) fill properties the block does not give;
    ``variables`` are the project's ``@name`` variables; ``audits`` the project's
    custom audits, of which the model keeps those it calls; ``signals`` the project's Python signals;
    ``python_macros`` the project's Python macros (``macros/*.py``); ``blueprint`` the variables of one
    entry of its ``blueprints`` (see :func:`parse_models`).
    """
    where = source if source != "registry" else "model definition"
    block = parse_block(text, where)
    props = dict(block.properties)
    scope = blueprints.scope(props, blueprint, where)  # the entry's variables
    project_macros = python_macros or macro_python.ProjectMacros()
    props, prop_macros = macro_properties.render(props, text, variables or {}, scope, project_macros.functions, where)
    name_at = props["name"].at if isinstance(props.get("name"), Property) else ""
    name = _name(props, where)
    where = f"model {name}" + (f" ({source})" if source != "registry" else "")
    kind_spec = props.pop("kind", None)
    values = {**(defaults or {}), **read_properties(props, MODEL_PROPS, where, "MODEL")}
    dialect = values.pop("dialect", "spark")
    kind = kind_from_spec(kind_spec, where, dialect) if isinstance(kind_spec, KindSpec) else ViewKind()
    # INCREMENTAL_BY_PARTITION: the partitions are what a run overwrites, so they must be named
    if getattr(kind, "needs_partitioned_by", False) and not values.get("partitioned_by"):
        raise ModelDefinitionError(f"{where}: {kind_spec.at}: kind {kind.name} needs partitioned_by, the columns "
                                   "whose partitions a run overwrites, e.g. partitioned_by (region)")
    # ON_VIRTUAL_UPDATE_BEGIN; ...; ON_VIRTUAL_UPDATE_END; follows the query
    query_text, section, section_line = extras.split_virtual_update(block.query_text, block.query_line, where)
    if section_line:
        block = dataclasses.replace(block, query_text=query_text)
        values["on_virtual_update"] = extras.virtual_update_statements(section, section_line, variables or {}, where,
                                                                       scope)
    query, depends_on, query_macros, around = model_query.evaluated(block, kind, dialect, variables or {}, scope,
                                                                    where, project_macros)
    used_macros = project_macros.files_of(prop_macros | query_macros)
    values.update(around)  # pre/post-statements: only when the model has some
    start, end = values.get("start_ms"), values.get("end_ms")
    if start is not None and end is not None and end <= start:
        raise ModelDefinitionError(f"{where}: end is before start; a model must end after it starts")
    schedule = Schedule.parse(values.pop("cron", "@daily"), values.pop("interval_unit", None), where=where,
                              tz=values.get("cron_tz"), week_start=values.pop("week_start", 0),
                              allow_partials=bool(values.get("allow_partials")))
    grains = values.pop("grain", ()) + values.pop("grains", ())
    custom = _called(values.get("audits", ()), audits)
    values["signals"] = model_signals.resolve(values.get("signals", ()), signals or {}, props.get("signals"), where)
    context = _context(defaults, variables, model_signals.context_of(values["signals"]), used_macros, custom,
                       blueprint)
    return Model(
        name=name, kind=kind, query=query, schedule=schedule, grains=grains, dialect=dialect,
        depends_on=depends_on, definition=text, source=source, custom_audits=custom, context=context,
        located=f"{source}: {name_at}", **values,
    )


def _context(defaults: dict[str, Any] | None, variables: dict[str, Any] | None, signals: dict[str, Any],
             used_macros: tuple, custom: tuple[AuditDef, ...], blueprint: dict[str, str] | None) -> str:
    """The JSON :func:`reparse` needs to parse the definition again elsewhere; '' when it needs nothing.

    Each entry is written only when the model uses it (a Python signal's or macro's code, custom audits, its
    blueprint), so the context, and with it the fingerprint, of every model not using one stays as it was.
    """
    context: dict[str, Any] = {"defaults": defaults or {}, "variables": variables or {}}
    if signals:
        context["signals"] = signals
    if used_macros:
        context["macros"] = [list(f) for f in used_macros]
    if custom:
        context["audits"] = audits_to_json(custom)
    if blueprint is not None:  # it picks this model out of the definition's blueprints
        context[blueprints.KEY] = dict(blueprint)
    needed = defaults or variables or signals or used_macros or custom or blueprint is not None
    return json.dumps(context, sort_keys=True, default=str) if needed else ""


def _called(calls: tuple, audits: Iterable[AuditDef]) -> tuple[AuditDef, ...]:
    """The custom audits ``calls`` name, each once, in the order of their first call."""
    by_name = {a.name: a for a in audits}
    names = dict.fromkeys(name for name, _ in calls if name in by_name)
    return tuple(by_name[n] for n in names)


@lru_cache(maxsize=8192)
def reparse(definition: str, source: str, context: str) -> Model:
    """A model stored in state, parsed again exactly as when it was applied (same defaults, variables and
    custom audits).

    Cached: the same stored text always gives the same frozen record, and every call of
    ``incr.run`` re-reads every model of the environment.
    """
    extra = json.loads(context) if context else {}
    stored_macros = macro_python.from_sources(tuple(tuple(f) for f in extra["macros"])) if "macros" in extra else None
    if python_model.MARK in extra:  # Python models: the stored file source runs again
        return python_model.reparse(definition, source, extra, parse_model, audits_from_json(extra.get("audits", [])),
                                    model_signals.from_context(extra.get("signals")), python_macros=stored_macros)
    return parse_model(definition, source, extra.get("defaults"), extra.get("variables"),
                       audits_from_json(extra.get("audits", [])), model_signals.from_context(extra.get("signals")),
                       python_macros=stored_macros, blueprint=extra.get(blueprints.KEY))


def parse_models(text: str, source: str = "registry", defaults: dict[str, Any] | None = None,
                 variables: dict[str, Any] | None = None, audits: Iterable[AuditDef] = (),
                 signals: dict[str, model_signals.SignalSource] | None = None,
                 python_macros: macro_python.ProjectMacros | None = None) -> list[Model]:
    """The models one SQL definition makes: one per entry of its ``blueprints`` (:mod:`.blueprints`), else
    the one :func:`parse_model` reads."""
    python = python_macros.functions if python_macros else None
    dialect = str((defaults or {}).get("dialect") or "spark")
    entries = blueprints.entries(text, source, variables, python, dialect)
    if entries is None:
        return [parse_model(text, source, defaults, variables, audits, signals, python_macros)]
    audits = tuple(audits)
    return blueprints.distinct([parse_model(text, source, defaults, variables, audits, signals, python_macros, entry)
                                for entry in entries])


def parse_python_models(text: str, source: str = "registry", defaults: dict[str, Any] | None = None,
                        variables: dict[str, Any] | None = None, *more: Any,
                        python_macros: macro_python.ProjectMacros | None = None) -> list[Model]:
    """The models a project's Python file declares with ``@model`` (:mod:`pyspark_incr.model.python_model`), each
    read through :func:`parse_model` (``more``: its further arguments, custom audits and signals;
    ``python_macros``: the project's, which ``blueprints="@gen_blueprints()"`` may call)."""
    return python_model.models_in(text, source, parse_model, defaults, variables, *more, python_macros=python_macros)


def _name(props: dict, where: str) -> str:
    prop = props.pop("name", None)
    if not isinstance(prop, Property):
        raise ModelDefinitionError(f"{where}: MODEL needs a name, e.g. name my_schema.my_table")
    v = prop.value
    parts = [p.name for p in v.parts] if isinstance(v, exp.Column) else []
    if len(parts) != 2 or not all(parts) or any("." in p for p in parts):
        raise ModelDefinitionError(
            f"{where}: {prop.at}: model name {prop.text!r} must be schema.table, e.g. analytics.daily_sales"
        )
    # The name is re-read as SQL where tables are derived from it: quotes, ';' or '--' in it would change it.
    odd = [p for p in parts if not _PLAIN_NAME.fullmatch(p) or "--" in p]
    if odd:
        raise ModelDefinitionError(
            f"{where}: {prop.at}: model name {prop.text!r}: {odd[0]!r} may only hold ASCII letters, digits, "
            "underscores, spaces and single hyphens; rename it, e.g. analytics.daily_sales"
        )
    return ".".join(p.lower() for p in parts)
