"""Static safety classifier for incremental models (spec: "Safety analysis").

A time-sliced run computes the model over one slice of its sources, then
replaces the slice's output partitions. Some SQL gives different rows on a
slice than on the full data; ``classify`` finds those constructs, with their
position in the model's query text, so the planner can refuse the model.

>>> classify("SELECT ds, COUNT(*) AS n FROM raw.events GROUP BY ds", ["ds"]).safe
True
>>> v = classify("SELECT id,\\n  ROW_NUMBER() OVER (ORDER BY ts) AS rn FROM t", ["ds"])
>>> [(f.rule, f.line, f.column, f.construct) for f in v.findings]
[('window', 2, 3, 'ROW_NUMBER() OVER (ORDER BY ts)')]

Scope decision: the data-shape rules (window, having, limit, distinct) judge
the main query -- its top level, CTEs, derived tables and set-operation
branches, all of which read the sliced sources. An expression subquery
(``IN (SELECT ...)``, ``EXISTS``, scalar) is judged as a whole by the
subquery rule instead: over lookup tables it reads the full tables on every
run, so a LIMIT or DISTINCT inside it is the same on every slice. The
nondeterministic rule applies everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from pyspark_incr.errors import ModelDefinitionError

RULES = ("window", "having", "limit", "nondeterministic", "subquery", "distinct")

# Override name (safety_overrides key) -> the rule it turns off.
OVERRIDE_RULES = {
    "allow_window_functions": "window",
    "allow_having": "having",
    "allow_limit": "limit",
    "allow_subqueries": "subquery",
    "allow_nondeterministic": "nondeterministic",
    "allow_distinct": "distinct",
}
OVERRIDES = tuple(OVERRIDE_RULES)
RULE_OVERRIDE = {rule: name for name, rule in OVERRIDE_RULES.items()}

# One sentence per rule, from the spec's "Safety analysis" table.
WHY = {
    "window": "a window function whose PARTITION BY does not include the partition column computes "
    "different results on one time slice than on the full dataset",
    "having": "HAVING with aggregates may filter out groups that would pass if all data were present",
    "limit": "LIMIT on partial data returns different rows than on the full table",
    "nondeterministic": "non-deterministic functions produce different results on each run",
    "subquery": "a subquery over a time-series source may reference data outside the filtered time range",
    "distinct": "DISTINCT on partial data may miss duplicates that span partition boundaries",
}

# sqlglot parses some nondeterministic functions to their own classes,
# the rest stay Anonymous; both are checked.
_NONDETERMINISTIC_NAMES = frozenset(
    {
        "rand", "randn", "random", "uuid", "shuffle", "now", "current_timestamp", "current_date",
        "localtimestamp", "unix_timestamp", "monotonically_increasing_id", "spark_partition_id",
        "input_file_name",
    }
)
_NONDETERMINISTIC_CLASSES = tuple(
    getattr(exp, name)
    for name in ("Rand", "Randn", "Uuid", "Shuffle", "CurrentTimestamp", "CurrentDate", "Localtimestamp")
    if hasattr(exp, name)
)

# Parents under which a query is part of the main query, not an expression subquery.
_MAIN_QUERY_PARENTS = (exp.From, exp.Join, exp.SetOperation, exp.CTE, exp.Subquery, exp.Lateral)

_MAX_CONSTRUCT = 80


@dataclass(frozen=True)
class Finding:
    """One construct refused for incremental runs, at a 1-based position of the query text."""

    rule: str
    construct: str
    line: int
    column: int
    why: str


@dataclass(frozen=True)
class Verdict:
    """What a model's query may not do on a time slice, and what was let through and why."""

    findings: tuple[Finding, ...]
    admitted: tuple[str, ...]

    @property
    def safe(self) -> bool:
        return not self.findings


def classify(
    query: str,
    partition_columns: Iterable[str],
    timeseries_sources: Iterable[str] = (),
    overrides: Iterable[str] = (),
    dialect: str = "spark",
) -> Verdict:
    """Judge ``query`` for time-sliced runs of a model partitioned by ``partition_columns``.

    ``timeseries_sources`` are the sliced (``db.table``) sources; the others are lookup tables
    read in full. ``overrides`` are ``safety_overrides`` names (a mapping keeps its true keys).

    >>> v = classify("SELECT * FROM t LIMIT 10", ["ds"], overrides=["allow_limit"])
    >>> v.safe, v.admitted
    (True, ('allowed by allow_limit: LIMIT 10',))
    """
    allowed = _overridden_rules(overrides)
    source = _Source(query, dialect)
    ctx = _Context(
        source,
        frozenset(c.lower() for c in partition_columns),
        frozenset(_table_key(s) for s in timeseries_sources),
    )
    candidates = [*_windows(ctx), *_havings(ctx), *_limits(ctx), *_nondeterministic(ctx),
                  *_subqueries(ctx), *_distincts(ctx)]
    findings = [f for f in candidates if f.rule not in allowed]
    admitted = ctx.admitted + [((f.line, f.column), f"allowed by {RULE_OVERRIDE[f.rule]}: {f.construct}")
                               for f in candidates if f.rule in allowed]
    findings.sort(key=lambda f: (f.line, f.column, RULES.index(f.rule)))
    # Both in text order, so a report reads top to bottom.
    return Verdict(findings=tuple(findings), admitted=tuple(note for _, note in sorted(admitted)))


def message(model_name: str, verdict: Verdict) -> str:
    """The refusal shown to the user: each finding with its position, then the ways out.

    >>> print(message("m", classify("SELECT * FROM t LIMIT 10", ["ds"])))
    Incremental safety check refused model 'm': on a time slice it may compute different rows than on the full data.
      line 1, column 17: LIMIT 10: LIMIT on partial data returns different rows than on the full table.
    Fix the SQL, or set safety_overrides (allow_limit: true) if you have verified this usage is safe on partial data, or pass allow_downgrade => true to fall back to a full-table refresh for this run.
    """
    if verdict.safe:
        return f"Model '{model_name}' passes the incremental safety check."
    lines = [f"Incremental safety check refused model '{model_name}': on a time slice it may compute "
             "different rows than on the full data."]
    lines += [f"  line {f.line}, column {f.column}: {f.construct}: {f.why}." for f in verdict.findings]
    names = ", ".join(f"{RULE_OVERRIDE[r]}: true" for r in RULES if any(f.rule == r for f in verdict.findings))
    lines.append(f"Fix the SQL, or set safety_overrides ({names}) if you have verified this usage is safe on "
                 "partial data, or pass allow_downgrade => true to fall back to a full-table refresh for this run.")
    return "\n".join(lines)


def _overridden_rules(overrides: Iterable[str]) -> frozenset[str]:
    # A safety_overrides mapping may say `allow_limit: false`; only true keys count.
    names = [k for k, v in overrides.items() if v] if isinstance(overrides, Mapping) else list(overrides)
    unknown = [n for n in names if n not in OVERRIDE_RULES]
    if unknown:
        raise ModelDefinitionError(
            f"unknown safety override {unknown[0]!r}; known overrides: {', '.join(OVERRIDES)}"
        )
    return frozenset(OVERRIDE_RULES[n] for n in names)


# --- parsing with positions ------------------------------------------------------------------


class _Source:
    """The parsed query with its tokens, to turn nodes into (line, column) of the text."""

    def __init__(self, text: str, dialect: str) -> None:
        self.text = text
        d = Dialect.get_or_raise(dialect)
        try:
            self.tokens: list[Token] = d.tokenize(text)
            trees = _located_parser(d).parse(self.tokens, text)
        except SqlglotError as e:
            raise ModelDefinitionError(f"cannot check incremental safety: query does not parse: {e}") from e
        trees = [t for t in trees if t is not None]
        if len(trees) != 1:
            raise ModelDefinitionError("cannot check incremental safety: expected exactly one query statement")
        self.tree: exp.Expr = trees[0]
        self.dialect = d

    def start(self, node: exp.Expr) -> int | None:
        """Offset of the first positioned token inside ``node`` (keywords carry no position)."""
        starts = [n.meta["start"] for n in node.walk() if "start" in n.meta]
        return min(starts) if starts else None

    def keyword(self, types: set[TokenType], before: int | None) -> int | None:
        """Offset of the last ``types`` token before offset ``before``: a clause's keyword."""
        if before is None:
            return None
        hits = [t.start for t in self.tokens if t.token_type in types and t.start < before]
        return hits[-1] if hits else None

    def token_before(self, offset: int) -> Token | None:
        earlier = [t for t in self.tokens if t.start < offset]
        return earlier[-1] if earlier else None

    def position(self, offset: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, offset) + 1
        return line, offset - (self.text.rfind("\n", 0, offset) + 1) + 1

    def sql(self, node: exp.Expr) -> str:
        return _shorten(node.sql(dialect=self.dialect))


def _located_parser(dialect: Dialect):
    """The dialect's parser, stamping each function call with its name's position.

    sqlglot positions identifiers, literals and most calls, but not keyword functions such as
    CURRENT_DATE or CURRENT_TIMESTAMP(); a finding must still say where they are.
    """
    base = dialect.parser_class

    def _parse_function_call(self, *args, **kwargs):
        token = self._curr
        node = base._parse_function_call(self, *args, **kwargs)
        if node is not None and token is not None and "start" not in node.meta:
            node.update_positions(token)
        return node

    located = type("Located" + base.__name__, (base,), {"_parse_function_call": _parse_function_call})
    return located(dialect=dialect)


def _shorten(sql: str) -> str:
    sql = " ".join(sql.split())
    return sql if len(sql) <= _MAX_CONSTRUCT else sql[: _MAX_CONSTRUCT - 3] + "..."


def _table_key(name: str) -> tuple[str, ...]:
    # Compare `db.table`; a leading catalog does not change which table it is.
    return tuple(p.strip("`").lower() for p in name.split("."))[-2:]


class _Context:
    def __init__(self, source: _Source, partition_columns: frozenset[str],
                 timeseries: frozenset[tuple[str, ...]]) -> None:
        self.source = source
        self.partition_columns = partition_columns
        self.timeseries = timeseries
        self.admitted: list[tuple[tuple[int, int], str]] = []
        self.expression_subqueries = [q for q in source.tree.find_all(exp.Query) if _is_expression_subquery(q)]
        inner = {id(n) for q in self.expression_subqueries for n in q.walk()}
        # Nodes of the main query: what the data-shape rules judge.
        self.main = [n for n in source.tree.walk() if id(n) not in inner]

    def finding(self, rule: str, node: exp.Expr, offset: int | None, construct: str | None = None) -> Finding:
        line, column = self.source.position(offset if offset is not None else 0)
        return Finding(rule, construct or self.source.sql(node), line, column, WHY[rule])

    def admit(self, note: str, node: exp.Expr, offset: int | None, construct: str | None = None) -> None:
        where = self.source.position(offset if offset is not None else 0)
        self.admitted.append((where, f"{note}: {construct or self.source.sql(node)}"))

    def partitioned(self, exprs: Iterable[exp.Expr]) -> str | None:
        """The partition column among ``exprs`` (bare or qualified columns), if any."""
        for e in exprs:
            if isinstance(e, exp.Column) and e.name.lower() in self.partition_columns:
                return e.name
        return None


def _is_expression_subquery(query: exp.Expr) -> bool:
    # `(SELECT ...)` in an expression, or EXISTS (SELECT ...); derived tables, CTE bodies and
    # set-operation branches belong to the main query.
    parent = query.parent
    if isinstance(query, exp.Subquery):
        return parent is not None and not isinstance(parent, _MAIN_QUERY_PARENTS)
    return isinstance(parent, exp.Exists)


# --- rules -----------------------------------------------------------------------------------


def _windows(ctx: _Context) -> Iterable[Finding]:
    for window in (n for n in ctx.main if isinstance(n, exp.Window) and n.args.get("over")):
        spec = _named_window(window) or window
        column = ctx.partitioned(spec.args.get("partition_by") or [])
        if column:
            ctx.admit(f"window partitioned by {column}", window, ctx.source.start(window))
        elif _bounded_range(spec.args.get("spec")):
            # Its lookback is derived by the bounds module and read from the source.
            ctx.admit("window with a bounded RANGE BETWEEN INTERVAL frame", window, ctx.source.start(window))
        else:
            yield ctx.finding("window", window, ctx.source.start(window))


def _named_window(window: exp.Window) -> exp.Window | None:
    # `OVER w ... WINDOW w AS (PARTITION BY ...)`: judge the named definition.
    name, select = window.args.get("alias"), window.parent_select
    if name is None or select is None or window.args.get("partition_by") or window.args.get("spec"):
        return None
    for named in select.args.get("windows") or []:
        if named.this.name.lower() == name.name.lower():
            return named
    return None


def _bounded_range(spec: exp.WindowSpec | None) -> bool:
    # RANGE BETWEEN INTERVAL '..' PRECEDING AND (CURRENT ROW | INTERVAL '..' ...): a time bound.
    # ROWS frames count rows, which differ on a slice, so they are not bounded in time.
    if spec is None or str(spec.args.get("kind", "")).upper() != "RANGE":
        return False
    start, end = spec.args.get("start"), spec.args.get("end")
    if not isinstance(start, exp.Interval) or str(spec.args.get("start_side", "")).upper() != "PRECEDING":
        return False
    return end is None or isinstance(end, exp.Interval) or str(end).upper() == "CURRENT ROW"


def _havings(ctx: _Context) -> Iterable[Finding]:
    for having in (n for n in ctx.main if isinstance(n, exp.Having)):
        if _has_aggregate(having):
            anchor = ctx.source.keyword({TokenType.HAVING}, ctx.source.start(having))
            yield ctx.finding("having", having, anchor)


def _has_aggregate(having: exp.Having) -> bool:
    select = having.parent_select
    if any(agg.parent_select is select for agg in having.find_all(exp.AggFunc)):
        return True
    # Spark lets HAVING name an aggregate by its select alias: `COUNT(*) AS n ... HAVING n > 10`.
    aggregated = {e.alias.lower() for e in select.expressions if e.alias and e.find(exp.AggFunc)}
    return any(not c.table and c.name.lower() in aggregated for c in having.find_all(exp.Column))


def _limits(ctx: _Context) -> Iterable[Finding]:
    for limit in (n for n in ctx.main if isinstance(n, (exp.Limit, exp.Fetch))):
        keywords = {TokenType.LIMIT, TokenType.FETCH, getattr(TokenType, "TOP", TokenType.LIMIT)}
        yield ctx.finding("limit", limit, ctx.source.keyword(keywords, ctx.source.start(limit)))


def _nondeterministic(ctx: _Context) -> Iterable[Finding]:
    for node in ctx.source.tree.walk():
        if isinstance(node, exp.StrToUnix) and isinstance(node.this, exp.CurrentTimestamp):
            # unix_timestamp() is parsed as UNIX_TIMESTAMP(CURRENT_TIMESTAMP()): one finding.
            construct = "UNIX_TIMESTAMP()" if "start" not in node.this.meta else None
            yield ctx.finding("nondeterministic", node, ctx.source.start(node), construct)
        elif _is_nondeterministic(node):
            yield ctx.finding("nondeterministic", node, ctx.source.start(node))


def _is_nondeterministic(node: exp.Expr) -> bool:
    if isinstance(node, exp.CurrentTimestamp) and isinstance(node.parent, exp.StrToUnix):
        return False
    if isinstance(node, _NONDETERMINISTIC_CLASSES):
        return True
    if isinstance(node, exp.Anonymous):
        return node.name.lower() in _NONDETERMINISTIC_NAMES
    # Spark reads a bare `localtimestamp` as the function; sqlglot as a column.
    return isinstance(node, exp.Column) and not node.table and node.name.lower() == "localtimestamp"


def _subqueries(ctx: _Context) -> Iterable[Finding]:
    ctes = _cte_reads(ctx.source.tree)
    for query in ctx.expression_subqueries:
        if any(_same_table(t, s) for t in _own_tables(query, ctes) for s in ctx.timeseries):
            select = query.this if isinstance(query, exp.Subquery) else query
            keyword = ctx.source.keyword({TokenType.SELECT, TokenType.WITH}, ctx.source.start(select))
            paren = ctx.source.token_before(keyword) if keyword is not None else None
            anchor = paren.start if paren is not None and paren.token_type == TokenType.L_PAREN else keyword
            construct = ctx.source.sql(query) if isinstance(query, exp.Subquery) else f"({ctx.source.sql(query)})"
            yield ctx.finding("subquery", query, anchor, _shorten(construct))


def _cte_reads(tree: exp.Expr) -> dict[str, set[tuple[str, ...]]]:
    """Tables each CTE reads, through the CTEs it names (a CTE only sees earlier ones)."""
    reads: dict[str, set[tuple[str, ...]]] = {}
    for cte in tree.find_all(exp.CTE):
        tables: set[tuple[str, ...]] = set()
        for table in cte.this.find_all(exp.Table):
            tables |= _expand(table, reads)
        reads[cte.alias_or_name.lower()] = tables
    return reads


def _expand(table: exp.Table, ctes: dict[str, set[tuple[str, ...]]]) -> set[tuple[str, ...]]:
    if not table.db and table.name.lower() in ctes:
        return ctes[table.name.lower()]
    return {_table_key(".".join(p.name for p in table.parts))}


def _own_tables(query: exp.Expr, ctes: dict[str, set[tuple[str, ...]]]) -> set[tuple[str, ...]]:
    """Tables a subquery reads itself, not through subqueries nested in it (they are judged
    alone, so the innermost reading one is the finding)."""
    nested = {id(n) for q in query.find_all(exp.Query) if q is not query and _is_expression_subquery(q)
              for n in q.walk()}
    keys: set[tuple[str, ...]] = set()
    for table in query.find_all(exp.Table):
        if id(table) not in nested:
            keys |= _expand(table, ctes)
    return keys


def _same_table(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    # An unqualified name may resolve to the source in the current database: when either side
    # has no database, compare table names (refusing too much is the safe side).
    return a == b or ((len(a) == 1 or len(b) == 1) and a[-1] == b[-1])


def _distincts(ctx: _Context) -> Iterable[Finding]:
    for node in ctx.main:
        if isinstance(node, exp.Select) and node.args.get("distinct"):
            yield from _select_distinct(ctx, node)
        elif _is_distinct_aggregate(node):
            yield from _distinct_aggregate(ctx, node)


def _select_distinct(ctx: _Context, select: exp.Select) -> Iterable[Finding]:
    # Rows with different partition values are never duplicates: DISTINCT over a list that
    # includes the partition column only removes duplicates within one partition.
    names = [e.alias_or_name for e in select.expressions]
    column = next((n for n in names if n.lower() in ctx.partition_columns), None)
    head = _shorten("SELECT DISTINCT " + ", ".join(e.sql(dialect=ctx.source.dialect) for e in select.expressions))
    anchor = ctx.source.keyword({TokenType.SELECT}, ctx.source.start(select.expressions[0]))
    if column:
        ctx.admit(f"DISTINCT over partition column {column}", select, anchor, head)
        return
    yield ctx.finding("distinct", select, anchor, head)


def _is_distinct_aggregate(node: exp.Expr) -> bool:
    if isinstance(node.parent, exp.Window):
        return False  # a windowed aggregate is judged by the window rule
    if isinstance(node, exp.ApproxDistinct):
        return True
    if isinstance(node, exp.Anonymous):
        return node.name.lower() == "approx_count_distinct"
    return isinstance(node, exp.AggFunc) and isinstance(node.this, exp.Distinct)


def _distinct_aggregate(ctx: _Context, agg: exp.Expr) -> Iterable[Finding]:
    # Grouped by the partition column, each group lies within one partition: exact on a slice.
    select = agg.parent_select
    column = _grouped_partition_column(ctx, select) if select is not None else None
    if column:
        ctx.admit(f"distinct aggregate grouped by {column}", agg, ctx.source.start(agg))
    else:
        yield ctx.finding("distinct", agg, ctx.source.start(agg))


def _grouped_partition_column(ctx: _Context, select: exp.Select) -> str | None:
    group = select.args.get("group")
    if group is None:
        return None
    names = []
    for key in group.expressions:
        # GROUP BY 1 and GROUP BY <alias> name a select expression.
        if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.name) <= len(select.expressions):
            key = select.expressions[int(key.name) - 1]
        names.append(key.alias_or_name.lower() if not isinstance(key, exp.Column) else key.name.lower())
    return next((n for n in names if n in ctx.partition_columns), None)
