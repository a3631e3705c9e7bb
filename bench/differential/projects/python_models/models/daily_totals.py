"""An incremental Python model on the PySpark DataFrame API, reading a SQL model."""

import typing as t
from datetime import datetime

from pyspark.sql import DataFrame, functions as F

from sqlmesh import ExecutionContext, model
from sqlmesh.core.model.kind import ModelKindName


@model(
    "pym.daily_totals",
    kind=dict(name=ModelKindName.INCREMENTAL_BY_TIME_RANGE, time_column="ds"),
    columns={"ds": "date", "customer_id": "int", "total": "double", "events": "bigint"},
    start="2024-01-01",
    cron="@daily",
)
def execute(context: ExecutionContext, start: datetime, end: datetime, execution_time: datetime,
            **kwargs: t.Any) -> DataFrame:
    df = context.spark.table(context.resolve_table("pym.base"))
    df = df.where(F.col("ds").between(F.lit(start.date()), F.lit(end.date())))
    return df.groupBy("ds", "customer_id").agg(F.sum("amount").alias("total"), F.count("*").alias("events"))
