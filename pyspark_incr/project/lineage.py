"""Column-level lineage: which columns of which models and tables a model's column is computed from.

Each SQL model's query is rendered (runtime macros substituted for a sample interval, as
``incr.render`` does) and analysed with sqlglot's lineage, with the columns of the models
and declared external tables it reads as its schema, so ``SELECT *`` expands and
unqualified columns find their table. A column read from another model of the project
is followed into that model's query, and so on down to the tables no model builds.
Models whose query cannot be analysed (Python models, seeds, a query sqlglot cannot
qualify) end the walk: their columns come from their declared columns (a seed's also
from its CSV header). Names are matched case-insensitively, as Spark matches them.
"""

from __future__ import annotations

import csv
import difflib
import time
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.lineage import Node, lineage
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import build_scope

from pyspark_incr.errors import ArgumentError, IncrError, UnknownModelError
from pyspark_incr.intervals.ranges import Interval
from pyspark_incr.model import python_model
from pyspark_incr.model.definition import Model
from pyspark_incr.model.render import render_query
from pyspark_incr.project.loader import Project, seed_path


@dataclass(frozen=True)
class LineageStep:
    """One column on the way from the asked column back to the tables it comes from."""

    #: 0 = the asked column itself; 1 = what it reads directly; ...
    depth: int
    #: The model (or, for a table that is no model of the project, that table) this column belongs to.
    model: str
    column: str
    #: The step this one feeds (None at depth 0).
    parent_model: str | None
    parent_column: str | None
    #: The SQL that computes this column in its model (Spark dialect, one line); '' where the column is read
    #: as it is from a table that is no model (and for seeds and Python models, which have no query).
    expression: str
    #: False for an external/raw table (external_models.yaml or not declared at all).
    is_model: bool


def columns_of(project: Project, model: str) -> tuple[str, ...]:
    """The model's output column names, in order.

    From its query, ``SELECT *`` expanded where the upstream columns are known; a seed's or Python
    model's from its declared columns (a seed without them: its CSV's header).
    """
    analysis = _analysis(project)
    name = analysis.known(model)
    return tuple(analysis.display(name, c) for c in analysis.of(name).columns)


def column_lineage(project: Project, model: str, column: str) -> tuple[LineageStep, ...]:
    """Every step from the column back to the tables it comes from.

    Depth 0 first, then breadth first: within each depth, the steps feeding the first step of the
    depth before come first, each step's own parents in (model, column) order.
    """
    analysis = _analysis(project)
    name = analysis.known(model)
    asked = analysis.column(name, column)
    steps = [analysis.step(0, name, asked, None)]
    queue, expanded, edges = [(name, asked, 0)], {(name, asked)}, set()
    while queue:  # breadth first: every step of one depth before the next depth
        child, col, depth = queue.pop(0)
        for parent, parent_col in analysis.reads(child, col):
            if (parent, parent_col, child, col) in edges:
                continue
            edges.add((parent, parent_col, child, col))
            steps.append(analysis.step(depth + 1, parent, parent_col, (child, col)))
            if (parent, parent_col) not in expanded:  # a diamond's shared column is walked once
                expanded.add((parent, parent_col))
                queue.append((parent, parent_col, depth + 1))
    return tuple(steps)


@dataclass
class _Analysed:
    """One model (or table) as lineage sees it: columns (lowercase, in order) and, for a query, its lineage nodes."""

    columns: tuple[str, ...]
    nodes: dict[str, Node] = field(default_factory=dict)
    #: Columns as the query or declaration spells them, by lowercase name.
    spelled: dict[str, str] = field(default_factory=dict)
    #: Why the query was not analysed (for errors about its columns), '' when it was.
    opaque: str = ""
    #: The query selects ``*`` from a table whose columns are unknown: its columns cannot all be listed.
    unresolved_star: bool = False


class _Analysis:
    """The analysed models of one project, each analysed once (a site asks for every column of every model)."""

    def __init__(self, project: Project):
        self.models = {m.name.lower(): m for m in project.models}
        self._done: dict[str, _Analysed] = {}
        self._busy: set[str] = set()
        self._sql: dict[tuple[str, str], str] = {}

    def known(self, model: str) -> str:
        """``model`` as the project names it; an error naming close names when it has no such model."""
        name = str(model).strip().strip("`").replace("`.`", ".").lower()
        if name in self.models:
            return name
        close = difflib.get_close_matches(name, list(self.models), n=5, cutoff=0.6)
        hint = (f"did you mean {', '.join(close)}?" if close
                else f"the models are: {', '.join(sorted(self.models)) or 'none'}")
        raise UnknownModelError(f"lineage: no model {model!r} is defined; {hint}")

    def column(self, name: str, column: str) -> str:
        """``column`` of model ``name``, lowercase; an error naming the model's columns when it has no such column."""
        wanted, analysed = str(column).strip().strip("`").lower(), self.of(name)
        if wanted in analysed.columns:
            return wanted
        listed = ", ".join(self.display(name, c) for c in analysed.columns) or "none known"
        why = f" ({analysed.opaque})" if analysed.opaque else ""
        star = (" Its query selects * from a table whose columns are unknown: declare them in "
                "external_models.yaml to trace them.") if analysed.unresolved_star else ""
        raise ArgumentError(f"lineage: model {name} has no column {column!r}{why}; its columns: {listed}.{star}")

    def display(self, name: str, column: str) -> str:
        return self.of(name).spelled.get(column, column)

    def is_model(self, name: str) -> bool:
        model = self.models.get(name)
        return model is not None and model.kind.name != "EXTERNAL"

    def step(self, depth: int, name: str, column: str, child: tuple[str, str] | None) -> LineageStep:
        return LineageStep(depth, name, self.display(name, column), child[0] if child else None,
                           self.display(*child) if child else None, self.expression(name, column),
                           self.is_model(name))

    def expression(self, name: str, column: str) -> str:
        """The SQL computing ``column`` of ``name``, generated once: a site walks each column from every child."""
        key = (name, column)
        if key not in self._sql:
            node = self.of(name).nodes.get(column)
            self._sql[key] = _expression(node) if node else ""
        return self._sql[key]

    def reads(self, name: str, column: str) -> list[tuple[str, str]]:
        """The (model or table, column) pairs ``column`` of ``name`` is computed from, sorted."""
        node = self.of(name).nodes.get(column)
        found: set[tuple[str, str]] = set()
        if node is not None:
            _leaves(node, column, found)
        return sorted(pair for pair in found if pair[0] != name)  # a model reading itself is no parent of itself

    def of(self, name: str) -> _Analysed:
        """Model or table ``name`` analysed (once)."""
        if name not in self._done:
            self._busy.add(name)
            try:
                self._done[name] = self._analyse(name)
            finally:
                self._busy.discard(name)
        return self._done[name]

    def _analyse(self, name: str) -> _Analysed:
        model = self.models.get(name)
        if model is None:  # a table no model declares: its columns are only what the queries read of it
            return _Analysed((), opaque="a table the project does not declare")
        declared = _declared(model)
        if python_model.is_python(model) or model.query is None:
            kind = "a Python model" if python_model.is_python(model) else f"a model of kind {model.kind.name}"
            return _Analysed(tuple(c.lower() for c in declared), spelled={c.lower(): c for c in declared},
                             opaque=f"{kind}: no query to analyse")
        try:
            return self._query(model)
        except (IncrError, SqlglotError) as e:
            return _Analysed(tuple(c.lower() for c in declared), spelled={c.lower(): c for c in declared},
                             opaque=f"its query could not be analysed: {str(e).splitlines()[0] if str(e) else e}")

    def _query(self, model: Model) -> _Analysed:
        """Lineage nodes of every output column of a SQL model's query, rendered for a sample interval."""
        sample = _sample(model)  # executed as it ends: @execution_ds and the like stay the same from call to call
        ast = render_query(model.query, sample, sample.end, where=f"model {model.name}",
                           this_table=exp.to_table(model.name), context=model.context)
        spelled = {s.alias_or_name.lower(): s.alias_or_name for s in ast.selects if s.alias_or_name}
        schema: dict[str, dict[str, dict[str, str]]] = {}
        for table in {_table_name(t) for t in ast.find_all(exp.Table)}:
            if "." not in table or table == model.name.lower() or table in self._busy:
                continue
            parent = self.of(table)
            types = {c.lower(): t for c, t in self.models[table].columns} if table in self.models else {}
            if parent.columns:
                db, _, tbl = table.partition(".")
                schema.setdefault(db, {})[tbl] = {c: types.get(c, "string") for c in parent.columns}
                spelled = {**{c: parent.spelled.get(c, c) for c in parent.columns}, **spelled}
        qualified = qualify(ast, dialect="spark", schema=schema, validate_qualify_columns=False, identify=False)
        nodes = lineage(None, qualified, schema=schema, dialect="spark", scope=build_scope(qualified))
        columns = tuple(n for n in nodes if n != "*")
        return _Analysed(columns, {c: nodes[c] for c in columns}, spelled, unresolved_star="*" in nodes)


#: The attribute of a loaded Project that holds its analysis.
_ATTRIBUTE = "_incr_lineage"


def _analysis(project: Project) -> _Analysis:
    """The project's analysis, made on first use and kept on the project itself: a site asking for every column
    of every model analyses each model once, and the analysis goes when the project does (no global cache)."""
    held = project.__dict__.get(_ATTRIBUTE)
    if held is None:
        held = _Analysis(project)
        object.__setattr__(project, _ATTRIBUTE, held)  # a frozen dataclass; not a field, so equality is untouched
    return held


def _declared(model: Model) -> tuple[str, ...]:
    """A model's declared columns; a seed without them, its CSV's header."""
    if model.columns or model.kind.name != "SEED":
        return tuple(c for c, _ in model.columns)
    try:
        with seed_path(model).open(encoding="utf-8", newline="") as f:
            return tuple(next(csv.reader(f), ()))
    except OSError:
        return ()


def _sample(model: Model) -> Interval:
    """The interval the query is rendered for: the model's first (without a start, the latest whole one); time
    macros do not change which columns a query reads."""
    schedule = model.schedule
    if model.start_ms is None:
        return schedule.latest_due(int(time.time() * 1000), ignore_cron=True)
    first = schedule.floor(model.start_ms)
    return Interval(first, schedule.unit.add(first, 1))


def _table_name(table: exp.Table) -> str:
    return f"{table.db}.{table.name}".lower() if table.db else table.name.lower()


def _leaves(node: Node, column: str, found: set[tuple[str, str]], seen: set[int] | None = None) -> None:
    """The tables and columns at the ends of ``node``'s lineage (``column``: what a ``*`` leaf stands for)."""
    seen = set() if seen is None else seen
    for child in node.downstream:
        if isinstance(child.expression, exp.Table):
            read = child.name.rsplit(".", 1)[-1]
            found.add((_table_name(child.expression), column if read == "*" else read.lower()))
        # sqlglot shares nodes between branches: each is walked once. A placeholder is a column it cannot place.
        elif not isinstance(child.expression, exp.Placeholder) and id(child) not in seen:
            seen.add(id(child))
            _leaves(child, child.name.rsplit(".", 1)[-1].lower(), found, seen)


def _expression(node: Node) -> str:
    """The SQL computing ``node``'s column, one line; through a CTE or subquery that only passes it on."""
    if isinstance(node.source, exp.SetOperation) and node.downstream:
        op = f" {node.source.key.upper()}{'' if node.source.args.get('distinct') else ' ALL'} "
        return op.join(_expression(branch) for branch in node.downstream)
    while _passes_on(node) and len(node.downstream) == 1 and not isinstance(
            node.downstream[0].expression, (exp.Table, exp.Placeholder, exp.Star)):
        node = node.downstream[0]
    return node.expression.sql("spark", comments=False)


def _passes_on(node: Node) -> bool:
    """``node`` selects a column of a CTE or subquery under the same name, computing nothing."""
    e = node.expression
    inner = e.this if isinstance(e, exp.Alias) else e
    return isinstance(inner, exp.Column) and inner.name.lower() == e.alias_or_name.lower()
