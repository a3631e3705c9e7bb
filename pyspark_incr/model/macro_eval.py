"""Evaluating SQLMesh macros on a parsed query, as SQLMesh does: on sqlglot trees.

A query is read with :func:`pyspark_incr.model.macros.hide_macros` and
:func:`pyspark_incr.model.macro_parse.parse`, so ``@name`` is a column named
``macros.PREFIX + name`` and ``@FN(...)`` a function of that name. The evaluator
substitutes variables (``@DEF``, a blueprint entry's and the project's, lambda parameters),
interpolates ``@x``/``@{x}`` inside identifiers, and calls macro functions (the built-ins of
:mod:`pyspark_incr.model.macro_functions` and a project's Python macros, through
:mod:`pyspark_incr.model.macro_call`; values convert as :mod:`pyspark_incr.model.macro_values` says).

Two stages. When the model is parsed, the runtime macros (``@start_ds``, ``@this_model``, ...)
have no value: as plain values they stay ``${start_ds}`` parameters, and a macro call that
needs one's VALUE (``@IF(@start_ds > '2024-06-01', a, b)``) stays in the query as
``__incr_macro__IF(${start_ds} > '2024-06-01', a, b)``, valid Spark SQL that
:func:`pyspark_incr.model.render.render_query` evaluates for each interval.

>>> from pyspark_incr.model.macros import hide_macros
>>> from pyspark_incr.model.macro_parse import parse
>>> stmts = parse(hide_macros("@DEF(n, 3); SELECT @n AS n, @EACH([a, b], c -> c + @n AS @{c}_plus) FROM t"), "duckdb")
>>> MacroEvaluator(where="model m").evaluate_statements(stmts).sql("spark")
'SELECT 3 AS n, a + 3 AS a_plus, b + 3 AS b_plus FROM t'
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

import sqlglot
from sqlglot import exp

from pyspark_incr.errors import IncrError, ModelDefinitionError
from pyspark_incr.model import macros
from pyspark_incr.model.macro_call import NeedsRuntime, bind_lambda, invoke, spark_columns
from pyspark_incr.model.macro_functions import BUILTINS
from pyspark_incr.model.macro_parse import CLAUSE_IF
from pyspark_incr.model.macro_values import SQL, as_text, coerce, python_value, to_expression
from pyspark_incr.model.macros import BRACE, BRACE_END, CURSOR, PREFIX, RUNTIME, THIS_MODEL, macro_name

#: What other modules import from here (the evaluator's pieces live in macro_call and macro_values).
__all__ = ["MacroEvaluator", "NeedsRuntime", "SQL", "SCHEMA_UNAVAILABLE", "coerce", "spark_columns", "to_expression"]


#: What ``columns_to_types`` answers at parse time for a relation whose columns are not known yet (SQLMesh's).
SCHEMA_UNAVAILABLE = {"__schema_unavailable_at_load__": "unknown"}
_INTERPOLATION = re.compile(rf"{BRACE}(\w+?){BRACE_END}|{PREFIX}(\w+)")
_MISSING = object()


class _Locals(dict):
    """Macro variables; at parse time, reading a runtime variable defers the macro reading it."""

    def __init__(self, runtime_known: bool):
        super().__init__()
        self.runtime_known = runtime_known

    def __missing__(self, key: str) -> Any:
        if not self.runtime_known and isinstance(key, str) and key.lower() in RUNTIME:
            raise NeedsRuntime(key)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        """As ``dict.get``, but a runtime variable at parse time defers the macro (see :meth:`__missing__`)."""
        return self[key] if key in self or (not self.runtime_known and str(key).lower() in RUNTIME) else default


class MacroEvaluator:
    """Evaluates the macros of one model's query; Python macros receive it as their first argument.

    ``variables`` are the project's, ``blueprint`` the variables of the model's blueprint entry (``@name``
    reads both, the blueprint's first; ``@VAR`` only the project's, ``@BLUEPRINT_VAR`` only the blueprint's,
    as in SQLMesh). ``runtime`` (the values of the runtime macros) is None at parse time; ``python`` the
    project's Python macros by name; ``schemas`` answers ``columns_to_types`` (None: not known here).
    """

    def __init__(self, *, dialect: str = "spark", variables: Mapping[str, Any] | None = None,
                 python: Mapping[str, Callable[..., Any]] | None = None,
                 runtime: Mapping[str, exp.Expression] | None = None, where: str = "model",
                 locate: Callable[[exp.Expression, int], str] | None = None,
                 kind_macros: frozenset[str] = frozenset(),
                 schemas: Callable[[str], dict[str, str] | None] | None = None,
                 blueprint: Mapping[str, Any] | None = None):
        self.dialect = dialect
        self.where = where
        self._stage = "loading" if runtime is None else "evaluating"
        self.project_variables = {k.lower(): v for k, v in (variables or {}).items()}
        self.blueprint_variables = {k.lower(): v for k, v in (blueprint or {}).items()}
        #: What ``@name`` reads (SQLMesh's ``evaluator.variables``): a blueprint's value wins over the project's.
        self.variables = {**self.project_variables, **self.blueprint_variables}
        self.python = {k.lower(): v for k, v in (python or {}).items()}
        self.macros = {**BUILTINS, **self.python}
        self.locals = _Locals(runtime is not None)
        for name, value in (runtime or {}).items():
            self.locals[name] = python_value(value)
        self.kind_macros = kind_macros
        #: Names of the Python macros the query called (their files travel with the model).
        self.used: set[str] = set()
        #: Relations whose columns a macro asked for (``@STAR(raw.orders)``): the model reads them.
        self.relations: set[str] = set()
        self._locate = locate
        self._schemas = schemas
        self._guessed = False

    # ------------------------------------------------------------------ what SQLMesh's evaluator offers
    def var(self, name: str, default: Any = None) -> Any:
        """A project variable's value (config.yaml ``variables``), ``default`` when it is not defined."""
        return self.project_variables.get(name.lower(), default)

    def blueprint_var(self, name: str, default: Any = None) -> Any:
        """A variable of the model's blueprint entry (a SQL model's as a SQL expression), else ``default``."""
        return self.blueprint_variables.get(name.lower(), default)

    @property
    def runtime_stage(self) -> str:
        """'evaluating' when the query is rendered for a run. Parsing happens once ('loading'), so a macro
        reading this is evaluated again when the query runs, with the value it will run with."""
        if self._stage == "loading":
            raise NeedsRuntime("runtime_stage")
        return self._stage

    @property
    def this_model(self) -> str:
        """The table the model writes (known only when the query is rendered)."""
        return str(self.locals[THIS_MODEL])

    def columns_to_types(self, model_name: str) -> dict[str, exp.DataType]:
        """Column name -> type of another model or table; SQLMesh's placeholder while they are not known."""
        self.relations.add(".".join(p.name.lower() for p in exp.to_table(str(model_name)).parts))
        found = self._schemas(str(model_name)) if self._schemas else None
        if found is None:
            if self._stage != "loading":
                raise ModelDefinitionError(f"{self.where}: the columns of {model_name} cannot be read; "
                                           "check the name, or build that table first")
            self._guessed = True
            found = SCHEMA_UNAVAILABLE
        return {name: exp.DataType.build(kind, dialect="spark", udt=True) for name, kind in found.items()}

    def parse_one(self, sql: str, into: Any = None, **opts: Any) -> exp.Expression:
        """``sql`` parsed in the model's dialect."""
        return sqlglot.parse_one(sql, read=self.dialect, into=into, **opts)

    def eval_expression(self, node: Any) -> Any:
        """The Python value of a constant SQL expression (``1 + 2``, ``'a' IN ('a')``), with sqlglot's executor."""
        if not isinstance(node, exp.Expression):
            return node
        node = self.transform(node)
        if isinstance(node, list):
            return [self.eval_expression(n) for n in node]
        if _needs_runtime(node):
            raise NeedsRuntime(node.sql())
        if isinstance(node, exp.Literal):
            return python_value(node)
        from sqlglot.executor import execute

        try:
            return execute(exp.select(node.copy().as_("v"))).rows[0][0]
        except Exception as e:  # noqa: BLE001 - sqlglot's executor raises many kinds
            raise ModelDefinitionError(f"{self.where}: cannot evaluate {node.sql(self.dialect)!r} "
                                       f"when the query is rendered ({type(e).__name__}: {e}); "
                                       "use constants, macro variables and SQL operators only") from None

    def transform(self, node: exp.Expression) -> exp.Expression | list[exp.Expression] | None:
        """``node`` with its macros evaluated (a copy)."""
        return self._expand(node.copy(), frozenset())

    def evaluate(self, node: exp.Expression) -> exp.Expression | list[exp.Expression] | None:
        """SQLMesh's name for :meth:`transform`."""
        return self.transform(node)

    # ------------------------------------------------------------------ helpers the built-ins use
    def items(self, node: Any) -> list[Any]:
        """The elements of an array/tuple argument (``[a, b]``, ``(a, b)``), else the argument alone."""
        if isinstance(node, (list, tuple)):
            return list(node)
        if isinstance(node, (exp.Array, exp.Tuple)):
            return list(node.expressions)
        if isinstance(node, exp.Paren):
            return [node.this]
        return [node]

    def apply(self, func: Any, *values: Any) -> exp.Expression | list[exp.Expression] | None:
        """Call a lambda (``x -> ...``) or a Python callable with ``values``."""
        if callable(func) and not isinstance(func, exp.Expression):
            return func(*values)
        if not isinstance(func, exp.Lambda):
            raise ModelDefinitionError(f"{self.where}: expected a function such as x -> x + 1, got {func.sql()!r}")
        names = [p.name.lower() for p in func.expressions]
        if len(names) != len(values):
            raise ModelDefinitionError(f"{self.where}: the function {func.sql()!r} takes {len(names)} "
                                       f"argument(s), given {len(values)}")
        saved = {n: dict.get(self.locals, n, _MISSING) for n in names}
        self.locals.update(zip(names, values))
        try:
            body = bind_lambda(func.this.copy(), dict(zip(names, values)))
            return self._expand(body, frozenset())
        finally:
            for n, v in saved.items():
                if v is _MISSING:
                    self.locals.pop(n, None)
                else:
                    self.locals[n] = v

    def literal(self, value: Any) -> exp.Expression:
        """A Python value as SQL."""
        return to_expression(value)

    # ------------------------------------------------------------------ the walk
    def finish(self, ast: exp.Expression) -> exp.Expression:
        """``ast`` (a stored query) with the macro calls parsing left for run time evaluated."""
        return self.evaluate_statements([ast])

    def evaluate_statements(self, statements: list[exp.Expression]) -> exp.Expression:
        """The last statement evaluated after the ``@DEF(name, value)`` statements before it."""
        *defs, query = statements
        for statement in defs:
            name, value = self._definition(statement)
            self.locals[name] = value if isinstance(value, exp.Lambda) else self._single(self._expand(value, frozenset()))
        result = self._single(self._expand(query, frozenset()))
        if result is None:
            raise ModelDefinitionError(f"{self.where}: the query's macros left no query")
        return result

    def _definition(self, statement: exp.Expression) -> tuple[str, exp.Expression]:
        args = statement.expressions if isinstance(statement, exp.Anonymous) else []
        if _call_name(statement) != "def" or len(args) != 2 or not isinstance(args[0], (exp.Column, exp.Identifier)):
            raise ModelDefinitionError(
                f"{self.where}: only @DEF(name, value) statements may come before the query, "
                f"found {statement.sql()[:60]!r}")
        return args[0].name.lower(), args[1]

    def _expand(self, node: exp.Expression, bound: frozenset[str]) -> Any:
        name = _call_name(node)
        if name is not None:
            return self._call(node, name, bound)
        var = _var_name(node)
        if var is not None:
            return self._variable(node, var, bound)
        if isinstance(node, exp.Parameter) and self.locals.runtime_known and node.name.lower() in self.locals:
            return to_expression(self.locals[node.name.lower()])
        if isinstance(node, exp.Lambda):
            params = frozenset(p.name.lower() for p in node.expressions)
            node.set("this", self._single(self._expand(node.this, bound | params)))
            return node
        if isinstance(node, exp.Identifier) and (PREFIX in node.this or BRACE in node.this):
            return self._interpolate(node, bound)
        for key, value in list(node.args.items()):
            if isinstance(value, list):
                node.set(key, [r for child in value for r in self._child(child, bound)])
            elif isinstance(value, exp.Expression):
                kept = self._child(value, bound)
                node.set(key, kept[0] if len(kept) == 1 else (exp.Tuple(expressions=kept) if kept else None))
        return node

    def _child(self, child: Any, bound: frozenset[str]) -> list[Any]:
        if not isinstance(child, exp.Expression):
            return [child]
        cond = child.meta.get(CLAUSE_IF) if child._meta else None
        if cond is not None:
            child.meta.pop(CLAUSE_IF)
            try:
                keep = self.eval_expression(cond)
            except NeedsRuntime:
                raise ModelDefinitionError(f"{self.where}: the condition of a clause macro (@WHERE(...), ...) must "
                                           f"be known when the model is parsed; {cond.sql()!r} needs a runtime "
                                           "macro") from None
            if not keep:
                return []
        result = self._expand(child, bound)
        return [r for r in result if r is not None] if isinstance(result, list) else ([] if result is None else [result])

    def _single(self, result: Any) -> Any:
        if isinstance(result, list):
            return result[0] if len(result) == 1 else (exp.Tuple(expressions=result) if result else None)
        return result

    def _variable(self, node: exp.Expression, name: str, bound: frozenset[str]) -> Any:
        if name in bound:
            return node
        if isinstance(node, exp.Table):
            if name != THIS_MODEL:
                node.set("this", self._interpolate(node.this, bound))
            return node
        value = dict.get(self.locals, name, _MISSING)
        if value is _MISSING:
            value = self.variables.get(name, _MISSING)
        if value is not _MISSING:
            return to_expression(value)
        if name in RUNTIME - CURSOR or name in self.kind_macros:
            return exp.Parameter(this=exp.var(name))
        if name in CURSOR:
            raise ModelDefinitionError(f"{self.where}: {self._at(node)}@{name} is only available in "
                                       "INCREMENTAL_BY_CURSOR models")
        raise self._unknown(name, node)

    def _interpolate(self, ident: exp.Identifier, bound: frozenset[str]) -> exp.Identifier:
        text = ident.this
        if text.lower() == PREFIX + THIS_MODEL:
            return ident
        braced = False

        def value(match: re.Match) -> str:
            nonlocal braced
            name = (match.group(1) or match.group(2)).lower()
            braced = braced or match.group(1) is not None
            if name in bound:
                return match.group(0)
            found = dict.get(self.locals, name, self.variables.get(name, _MISSING))
            if found is _MISSING:
                if name in RUNTIME:
                    raise NeedsRuntime(name)
                shown = "{" + name + "}" if match.group(1) else name
                raise self._unknown(shown, ident, text.find(match.group(0)))
            return as_text(found, self.dialect)

        new = _INTERPOLATION.sub(value, text)
        return exp.to_identifier(new, quoted=ident.quoted or None) if new != text else ident

    def _call(self, node: exp.Anonymous, name: str, bound: frozenset[str]) -> Any:
        if name == "def":
            raise ModelDefinitionError(f"{self.where}: {self._at(node)}@DEF(name, value) must be a statement of its "
                                       "own, before the query, ending with ';'")
        local = dict.get(self.locals, name)
        func = local if isinstance(local, exp.Lambda) else self.macros.get(name)
        if func is None:
            raise self._unknown(name.upper(), node)
        if name in self.python:
            self.used.add(name)
        args = [a if isinstance(a, exp.Lambda) else self._single(self._expand(a, bound)) for a in node.expressions]
        try:
            if isinstance(func, exp.Lambda):
                return self.apply(func, *args)
            return self._invoke(name, func, args)
        except NeedsRuntime:
            if self._stage != "loading":
                raise
            return self._deferred(node, args, bound)

    def _deferred(self, node: exp.Anonymous, args: list[Any], bound: frozenset[str]) -> exp.Expression:
        kept = [self._expand(a, bound) if isinstance(a, exp.Lambda) else a for a in args]
        return exp.Anonymous(this=PREFIX + node.name[len(PREFIX):].upper(), expressions=kept)

    def _invoke(self, name: str, func: Callable[..., Any], args: list[Any]) -> Any:
        self._guessed = False
        result = invoke(self, name, func, args, self.where, self.dialect)
        if self._guessed:
            raise NeedsRuntime(f"columns of a relation in @{name}")
        return self._result(result)

    def _result(self, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return [r for v in value for r in _as_list(self._result(v))]
        if isinstance(value, str) and not isinstance(value, SQL):
            return self._expand(sqlglot.parse_one(value, read=self.dialect), frozenset())
        if isinstance(value, SQL):
            return sqlglot.parse_one(value, read=self.dialect)
        if value is None or isinstance(value, exp.Expression):
            return value
        return to_expression(value)

    def _at(self, node: exp.Expression, offset: int = 0) -> str:
        at = self._locate(node, offset) if self._locate else ""
        return at + ": " if at else ""

    def _unknown(self, name: str, node: exp.Expression, offset: int = 0) -> IncrError:
        names = [*(n.upper() for n in BUILTINS), *self.python, *dict.keys(self.locals)]
        at = self._at(node, offset)
        return macros.unknown(name, self.variables, self.where, at[:-2] if at else "", self.kind_macros,
                              [n for n in names if n != "runtime_stage"])


def _call_name(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Anonymous) and isinstance(node.this, str) and node.this.lower().startswith(PREFIX):
        return node.this[len(PREFIX):].lower()
    return None


def _var_name(node: exp.Expression) -> str | None:
    """The variable a bare ``@name`` (column or table, not a call) stands for."""
    name = None if isinstance(node, exp.Anonymous) else macro_name(node)
    return name if name and name.isidentifier() else None


def _needs_runtime(node: exp.Expression) -> bool:
    return any(isinstance(n, exp.Parameter) or _call_name(n) is not None for n in node.walk())


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else ([] if value is None else [value])
