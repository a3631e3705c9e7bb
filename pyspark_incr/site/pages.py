"""The site's pages as HTML strings: the project page (``index.html``) and one page per model.

Pure functions of :class:`SiteData`: the project, the coverage read from the state
(or none), the column lineage traced beforehand. :mod:`pyspark_incr.site.build` writes them.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import sqlglot
from sqlglot.errors import SqlglotError

from pyspark_incr.coverage import Coverage
from pyspark_incr.intervals.times import format_ms, to_datetime
from pyspark_incr.model.definition import Model
from pyspark_incr.project.loader import Project
from pyspark_incr.site import graph, timeline
from pyspark_incr.site.markup import esc, graph_svg, link, page, section, table

_RUNTIME = re.compile(r"\$\{(\w+)\}")


@dataclass(frozen=True)
class ColumnInfo:
    """One output column of a model: its type where declared, its description, its lineage steps (or why none)."""

    name: str
    type: str | None = None
    description: str | None = None
    lineage: Sequence[Any] = ()
    lineage_note: str | None = None


@dataclass(frozen=True)
class SiteData:
    """Everything the pages are made of. ``coverage`` is None when it was not read (``--no-coverage``)."""

    project: Project
    #: Model name -> its page's file name under ``models/``.
    files: Mapping[str, str]
    #: Model name -> the project's models it reads.
    parents: Mapping[str, Sequence[str]]
    coverage: Mapping[str, Coverage] | None = None
    until_ms: int | None = None
    env: str = "prod"
    columns: Mapping[str, Sequence[ColumnInfo]] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return self.project.root.resolve().name or "project"

    def children(self, name: str) -> list[str]:
        return sorted(c for c, ps in self.parents.items() if name in ps)

    def coverage_block(self, name: str, small: bool = False) -> str:
        cov = None if self.coverage is None else self.coverage.get(name)
        return timeline.block(cov, self.until_ms, read=self.coverage is not None, env=self.env, small=small)


def index_page(data: SiteData) -> str:
    """The project: the DAG of every model, then a table of the models."""
    models = sorted(data.project.models, key=lambda m: m.name)
    dag = graph.layout([m.name for m in models], graph.edges_of(data.parents), kind=_kind_of(data),
                       href=lambda n: f"models/{data.files[n]}")
    rows = [[link(f"models/{data.files[m.name]}", m.name), esc(m.kind.name), esc(_cron(m)), esc(m.owner or ""),
             data.coverage_block(m.name, small=True), esc(m.description or "")] for m in models]
    picture = graph_svg("dag-data", dag, "every model, parents left of the models that read them")
    if not models:  # the empty graph is still drawn: site.js runs the same on every page
        picture = '<p class="empty">This project has no models yet.</p>' + picture
    body = "\n".join([
        f"<h1>{esc(data.title)}</h1>",
        f"<p class=\"lead\">{len(models)} models. {esc(_coverage_sentence(data))}</p>",
        section("dag", "Models and their dependencies", picture),
        section("models", "Models", table(("model", "kind", "cron", "owner", "coverage", "description"), rows,
                                          "models") + (timeline.legend() if data.coverage else "")),
    ])
    return page(data.title, body, root="", project=data.title)


def model_page(data: SiteData, model: Model) -> str:
    """One model: what it is, its SQL, columns, coverage, neighbours and column lineage."""
    near = graph.neighbourhood(data.parents, model.name)
    picture = graph.layout(near, graph.edges_of(data.parents), kind=_kind_of(data), focus=model.name,
                           href=lambda n: None if n == model.name else data.files[n])
    body = "\n".join([
        f"<h1>{esc(model.name)}</h1>",
        f'<p class="lead">{esc(model.description)}</p>' if model.description else "",
        section("properties", "Properties", _properties(model)),
        section("sql", "SQL", _sql(model)),
        section("columns", "Columns", _columns(data.columns.get(model.name, ()))),
        section("coverage", f"Coverage in {data.env}" if data.coverage is not None else "Coverage",
                data.coverage_block(model.name) + (timeline.legend() if data.coverage else "")),
        section("graph", "Upstream and downstream",
                _neighbours(data, model) + graph_svg(
                    "graph-data", picture, f"{model.name} with the models two steps up and down from it")),
        section("lineage", "Column lineage", _lineage(data, model)),
    ])
    return page(f"{model.name} ({data.title})", body, root="../", project=data.title)


def _kind_of(data: SiteData) -> Callable[[str], str]:
    kinds = {m.name: m.kind.name for m in data.project.models}
    return lambda name: kinds.get(name, "")


def _cron(model: Model) -> str:
    return model.schedule.cron + (f" ({model.cron_tz})" if model.cron_tz else "")


def _coverage_sentence(data: SiteData) -> str:
    if data.coverage is None:
        return "Coverage not read (built with --no-coverage)."
    at = to_datetime(data.until_ms).strftime("%Y-%m-%d %H:%M") if data.until_ms is not None else "?"
    return f"Coverage of environment {data.env} at {at} UTC."


def _value(value: Any) -> str | None:
    """A property value as the page shows it; None for one not set."""
    if value is None or value == () or value == "":
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):  # names, or (key, value) pairs
        return ", ".join("=".join(map(str, v)) if isinstance(v, tuple) else (_value(v) or "") for v in value)
    return str(value)


def _properties(model: Model) -> str:
    audits = [name + "(" + ", ".join(f"{k} := {v}" for k, v in args) + ")" for name, args in model.audits]
    general = [
        ("kind", model.kind.name), ("cron", _cron(model)), ("owner", model.owner),
        ("start", format_ms(model.start_ms) if model.start_ms is not None else None),
        ("end", format_ms(model.end_ms) if model.end_ms is not None else None),
        ("grain", model.grains), ("tags", model.tags), ("partitioned by", model.partitioned_by),
        ("clustered by", model.clustered_by), ("table format", model.table_format), ("dialect", model.dialect),
        ("audits", tuple(audits)), ("signals", tuple(s.name for s in model.signals)),
        ("file", model.source if model.source != "registry" else None),
    ]
    kind = [(f"kind: {f.name}", getattr(model.kind, f.name)) for f in dataclasses.fields(model.kind)]
    rows = [[esc(k), f"<code>{esc(v)}</code>"] for k, raw in [*general, *kind] if (v := _value(raw)) is not None]
    return table(("property", "value"), rows, "properties")


def _sql(model: Model) -> str:
    if model.query is None:
        what = "a seed: its rows come from a CSV file" if model.kind.name == "SEED" else \
            "declared, not built: no query" if not model.kind.builds_object or model.kind.name == "EXTERNAL" else \
            "no SQL query"
        return f'<p class="empty">{esc(model.name)} is {esc(what)}.</p>'
    return f'<pre class="sql"><code>{esc(pretty_sql(model.query))}</code></pre>'


def pretty_sql(query: str) -> str:
    """``query`` (Spark SQL) pretty-printed by sqlglot (as written when sqlglot cannot read it), runtime macros
    as ``@start_ds``.

    >>> print(pretty_sql("select a from t where d between ${start_ds} and ${end_ds}"))
    SELECT
      a
    FROM t
    WHERE
      d BETWEEN @start_ds AND @end_ds
    """
    try:
        text = ";\n\n".join(sqlglot.transpile(query, read="spark", write="spark", pretty=True))
    except SqlglotError:
        text = query
    return _RUNTIME.sub(r"@\1", text)  # runtime macros are kept as ${name}; the model's author wrote @name


def _columns(columns: Sequence[ColumnInfo]) -> str:
    if not columns:
        return '<p class="empty">No columns known: the query selects <code>*</code> or could not be read.</p>'
    rows = [[f'<a href="#lineage-{esc(c.name)}">{esc(c.name)}</a>' if c.lineage else esc(c.name),
             f"<code>{esc(c.type)}</code>" if c.type else "", esc(c.description or "")] for c in columns]
    return table(("column", "type", "description"), rows, "columns")


def _neighbours(data: SiteData, model: Model) -> str:
    def names(found: Sequence[str]) -> str:
        return ", ".join(link(data.files[n], n) for n in found) if found else "none"

    ups, downs = sorted(data.parents.get(model.name, ())), data.children(model.name)
    return f'<p class="neighbours">Reads: {names(ups)}. Read by: {names(downs)}.</p>'


def _lineage(data: SiteData, model: Model) -> str:
    columns = data.columns.get(model.name, ())
    if not columns:
        return '<p class="empty">No columns to trace.</p>'
    return "\n".join(_column_lineage(data, c) for c in columns)


def _column_lineage(data: SiteData, column: ColumnInfo) -> str:
    """One column's steps, each indented by its depth: where the value comes from, model by model."""
    if column.lineage_note:
        inner = f'<p class="empty">{esc(column.lineage_note)}</p>'
    else:
        items = []
        for step in column.lineage:
            name = data.files.get(step.model)  # an external model has a page too, though lineage ends there
            where = link(name, step.model) if name else esc(step.model)
            depth = int(step.depth)
            items.append(f'<li class="step" data-depth="{depth}" style="margin-left:{depth * 1.5}em">'
                         f'{where}.<b>{esc(step.column)}</b> <code>{esc(step.expression)}</code></li>')
        inner = f'<ol class="steps">{"".join(items)}</ol>' if items else '<p class="empty">no sources</p>'
    return (f'<details class="column" id="lineage-{esc(column.name)}"><summary>{esc(column.name)}</summary>'
            f"{inner}</details>")
