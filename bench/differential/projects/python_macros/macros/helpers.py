"""Python macros as a SQLMesh project writes them."""

from sqlglot import exp

from sqlmesh import macro


@macro()
def add_one(evaluator, column):
    """A string result is parsed as SQL."""
    return f"{column} + 1"


@macro()
def to_cents(evaluator, column):
    """A sqlglot expression result."""
    return exp.Cast(this=exp.Mul(this=column, expression=exp.Literal.number(100)), to=exp.DataType.build("bigint"))


@macro()
def times_multiplier(evaluator, column):
    """Reads a global variable from config.yaml."""
    return exp.Mul(this=column, expression=exp.Literal.number(evaluator.var("multiplier")))


@macro()
def flags(evaluator, column, *values):
    """Several results: one indicator column per value."""
    return [
        exp.alias_(exp.If(this=exp.EQ(this=column.copy(), expression=v), true=exp.Literal.number(1),
                          false=exp.Literal.number(0)), f"is_{v.name}")
        for v in values
    ]
