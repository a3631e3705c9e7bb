"""A model's query: its macros evaluated into Spark SQL, the tables it reads, its pre/post-statements.

>>> tables_read(exp.maybe_parse("WITH w AS (SELECT * FROM raw.a) SELECT * FROM w JOIN Raw.B USING (k)"))
('raw.a', 'raw.b')
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError, ModelSyntaxError
from pyspark_incr.model import macro_parse, macro_python, macros
from pyspark_incr.model import statements as model_statements
from pyspark_incr.model.kinds import KindBase
from pyspark_incr.model.macro_eval import MacroEvaluator
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS, query_parse_error


#: The CTE holding a query that is one macro call left for the run (``@UNION(...)`` alone).
WHOLE_QUERY = "__incr_whole_query"


def evaluated(block: Any, kind: KindBase, dialect: str, variables: dict[str, Any], blueprint: dict[str, Any],
              where: str, project_macros: macro_python.ProjectMacros,
              ) -> tuple[str | None, tuple[str, ...], set[str], dict[str, Any]]:
    """The query as Spark SQL with its macros evaluated (:mod:`pyspark_incr.model.macro_eval`; ``blueprint``: the
    variables of the model's blueprint entry), the tables it reads, the names of the Python macros it calls, and
    its pre/post-statements as Model fields."""
    text = block.query_text
    if not kind.needs_query:
        if text:
            raise ModelDefinitionError(f"{where}: kind {kind.name} takes no query; remove the text after the MODEL block")
        return None, (), set(), {}
    if not text:
        raise ModelDefinitionError(f"{where}: the MODEL block is not followed by a query (SELECT ...)")
    hidden, guarded = model_statements.guard(macros.hide_macros(text))  # statement-level @IF(cond, statement)
    evaluator = MacroEvaluator(dialect=dialect, variables=variables, blueprint=blueprint,
                               python=project_macros.functions, where=where,
                               locate=macros.locator(hidden, block.query_line), kind_macros=kind.macros)
    try:
        parsed = macro_parse.parse(hidden, dialect)
    except SQLGLOT_ERRORS as e:
        # A call of an unknown macro function is refused by name and place: that says more than the parser.
        known = [*evaluator.macros, *kind.macros]
        refusal = macros.unsupported_call(hidden, block.query_line, evaluator.variables, where, kind.macros, known)
        raise refusal or ModelSyntaxError(query_parse_error(e, where, text, hidden, block.query_line)) from None
    statements = [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]
    split = model_statements.split(statements, guarded, evaluator, where)
    ast = split.query
    if isinstance(ast, exp.Anonymous) and ast.name.lower().startswith(macros.PREFIX):
        # A macro evaluated only when the query runs (@UNION reads its tables' columns) is the whole query, as
        # SQLMesh allows: held in a CTE, so the stored query is still one SELECT that Spark SQL tools read.
        ast = exp.select("*").from_(WHOLE_QUERY).with_(WHOLE_QUERY, as_=ast)
    if not isinstance(ast, exp.Query):
        raise ModelDefinitionError(f"{where}: after the MODEL block there must be exactly one query (SELECT ...); "
                                   f"found {ast.sql(dialect='spark')[:40]!r}")
    # A macro left for the run that reads a relation's columns (@UNION(a, b)) reads that relation.
    # pre/post-statements: a temporary view a pre-statement makes is no table; what it reads is read
    made = {t for q in split.sources for t in tables_read(q)}
    depends_on = tuple(sorted({*tables_read(ast), *evaluator.relations, *made} - split.local_names))
    around = {k: v for k, v in (("pre_statements", split.pre), ("post_statements", split.post)) if v}
    return ast.sql(dialect="spark", comments=False), depends_on, evaluator.used, around


def tables_read(ast: exp.Expression) -> tuple[str, ...]:
    """Tables a query reads, excluding CTE names and ``@this_model``."""
    ctes = {c.alias_or_name.lower() for c in ast.find_all(exp.CTE)}
    names = set()
    for t in ast.find_all(exp.Table):
        if not t.name or macros.macro_table(t) or (not t.db and t.name.lower() in ctes):
            continue
        names.add(".".join(p.name.lower() for p in t.parts))
    return tuple(sorted(names))
