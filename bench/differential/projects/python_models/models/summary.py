"""A FULL Python model yielding its rows in two DataFrames."""

import typing as t
from datetime import datetime

from pyspark.sql import functions as F

from sqlmesh import ExecutionContext, model


@model(
    "pym.summary",
    kind="FULL",
    columns={"part": "string", "customers": "bigint", "total": "double"},
    depends_on=["pym.daily_totals"],
)
def execute(context: ExecutionContext, start: datetime, end: datetime, execution_time: datetime, **kwargs: t.Any):
    df = context.spark.table(context.resolve_table("pym.daily_totals"))
    for part, condition in (("even", F.col("customer_id") % 2 == 0), ("odd", F.col("customer_id") % 2 == 1)):
        yield df.where(condition).agg(F.lit(part).alias("part"), F.countDistinct("customer_id").alias("customers"),
                                      F.sum("total").alias("total"))
