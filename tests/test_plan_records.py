"""A model's plan record: immutable, replaced field by field as planning goes, its names written once."""

from __future__ import annotations

from unittest import mock

from sqlglot import exp

from pyspark_incr.intervals.ranges import Interval, IntervalSet
from pyspark_incr.model.definition import parse_model
from pyspark_incr.plan import records
from pyspark_incr.plan.records import ModelPlan


def _plan() -> ModelPlan:
    model = parse_model("MODEL (name s.m, kind FULL); SELECT 1 AS x")
    return ModelPlan("s.m", model, "unchanged", "", "f", "h", "models/m.sql", exp.table_("m__f", db="p", quoted=True),
                     view=exp.table_("m", db="s", quoted=True))


def test_a_replaced_plan_keeps_its_names_written_and_its_new_fields():
    plan = _plan()
    assert (plan.table_name, plan.view_name) == ("`p`.`m__f`", "`s`.`m`")

    with mock.patch.object(records, "table_sql", side_effect=AssertionError("written again")):
        later = plan.but(missing=IntervalSet([Interval(0, 10)]), reason="due")
        names = (later.table_name, later.view_name)

    assert names == ("`p`.`m__f`", "`s`.`m`")
    assert (later.reason, later.missing, plan.missing) == ("due", IntervalSet([Interval(0, 10)]), IntervalSet())


def test_a_plan_given_another_table_writes_that_tables_name():
    plan = _plan()
    assert plan.table_name == "`p`.`m__f`"

    moved = plan.but(table=exp.table_("m__g", db="p", quoted=True))

    assert (moved.table_name, moved.view_name) == ("`p`.`m__g`", "`s`.`m`")
