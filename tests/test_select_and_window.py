"""``select`` (upstream marks, tags) and ``start``/``end`` alignment, end to end, plus the alignment rule itself."""

from __future__ import annotations

import pytest

from conftest import state_rows, tables_in, call as _call
from pyspark_incr.errors import ArgumentError
from pyspark_incr.model.definition import parse_model
from pyspark_incr.plan.window import restriction as _restriction
from pyspark_incr.procedures.common import window_arg
from pyspark_incr.sqltext import call_sql

T = "2024-01-04 00:00:00"


@pytest.fixture(scope="module")
def shop(spark, module_isolated):
    """parent <- child, parent <- other; parent and other are tagged finance. Each test applies its own env."""
    p = module_isolated
    for name, query, tags in (
        ("parent", "SELECT CAST(id AS INT) AS id FROM range(3)", "(finance, core)"),
        ("child", f"SELECT COUNT(*) AS n FROM {p}.parent", None),
        ("other", f"SELECT MAX(id) AS top FROM {p}.parent", "Finance"),
    ):
        props = f", tags {tags}" if tags else ""
        _call(spark, "create_model",
              definition=f"MODEL (name {p}.{name}, kind FULL, start '2024-01-01'{props}); {query}")
    return p


def _schemas(p: str) -> tuple[str, ...]:
    return (p, *(f"{p}__{env}" for env in ("upstream", "tags", "dev")), f"{p}_state")


def test_plus_before_a_model_applies_it_and_its_upstream_models_only(spark, shop):
    rows = _call(spark, "apply", env="upstream", select=f"+{shop}.child", execution_time=T)

    assert [(r.model, r.status) for r in rows] == [(f"{shop}.parent", "ok"), (f"{shop}.child", "ok")]
    assert spark.table(f"{shop}__upstream.child").collect()[0].n == 3
    assert f"{shop}__upstream.other" not in tables_in(spark, f"{shop}__upstream")


def test_tag_selects_the_models_carrying_it(spark, shop):
    rows = _call(spark, "apply", env="tags", select="tag:finance", execution_time=T)

    assert sorted(r.model for r in rows) == [f"{shop}.other", f"{shop}.parent"]
    assert tables_in(spark, f"{shop}__tags") == {f"{shop}__tags.other", f"{shop}__tags.parent"}


def _assert_refused(spark, prefix: str, statement: str, *fragments: str) -> None:
    before = (state_rows(spark, prefix), tables_in(spark, *_schemas(prefix)))
    with pytest.raises(Exception) as info:
        spark.sql(statement).collect()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in error: {message}"
    assert (state_rows(spark, prefix), tables_in(spark, *_schemas(prefix))) == before


def test_a_start_off_the_interval_grid_is_refused_and_changes_nothing(spark, shop):
    _assert_refused(
        spark, shop, call_sql("apply", env="dev", start="2024-01-02 13:00:00", execution_time=T),
        f"start '2024-01-02 13:00:00' is not aligned to the day intervals of model {shop}.parent; "
        "use '2024-01-02' or '2024-01-03'",
    )


def test_an_end_before_the_start_is_refused_and_changes_nothing(spark, shop):
    _assert_refused(
        spark, shop, call_sql("run", env="upstream", start="2024-01-03", end="2024-01-01", execution_time=T),
        "end '2024-01-01' (through that day) is not after start '2024-01-03'",
    )


# =========================================================================== the alignment rule (no Spark)


def _model(cron: str):
    return parse_model(f"MODEL (name s.m, kind FULL, cron '{cron}'); SELECT 1 AS x")


def _refusal(cron: str, start: str | None = None, end: str | None = None) -> str:
    with pytest.raises(ArgumentError) as info:
        _restriction(_model(cron), window_arg(start, end, T))
    return str(info.value)


def test_aligned_bounds_restrict_to_exactly_that_range():
    window = window_arg("2024-01-02", "2024-01-02", T)  # a bare-date end means through that day
    assert str(_restriction(_model("@daily"), window)) == "[2024-01-02, 2024-01-03)"


def test_a_bare_date_end_on_the_last_day_of_a_month_is_aligned_for_a_monthly_model():
    window = window_arg("2024-01-01", "2024-03-31", T)
    assert str(_restriction(_model("@monthly"), window)) == "[2024-01-01, 2024-04-01)"


def test_a_misaligned_end_offers_the_bare_dates_on_both_sides():
    assert _refusal("@monthly", end="2024-01-15") == (
        "end '2024-01-15' is not aligned to the month intervals of model s.m; use '2023-12-31' or '2024-01-31' "
        "(a bare date as end means through that day)"
    )


def test_a_misaligned_bound_of_a_sub_day_model_offers_timestamps():
    assert _refusal("@hourly", start="2024-01-01 00:30:00") == (
        "start '2024-01-01 00:30:00' is not aligned to the hour intervals of model s.m; "
        "use '2024-01-01 00:00:00' or '2024-01-01 01:00:00'"
    )
    assert "end '2024-01-01 12:05:00' is not aligned" in _refusal("@hourly", end="2024-01-01 12:05:00")


def test_an_end_equal_to_the_start_is_refused():
    with pytest.raises(ArgumentError, match="end '2024-01-02 00:00:00' is not after start '2024-01-02'"):
        window_arg("2024-01-02", "2024-01-02 00:00:00", T)
