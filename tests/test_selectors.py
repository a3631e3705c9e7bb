"""The ``select`` argument: names, globs, tags, upstream/downstream marks (no Spark session needed)."""

from __future__ import annotations

import pytest

from pyspark_incr.errors import ArgumentError
from pyspark_incr.model.definition import parse_model
from pyspark_incr.plan.sources import select_models


def _model(name: str, *reads: str, tags: str = ""):
    source = " CROSS JOIN ".join(reads) if reads else "(SELECT 1 AS x) AS t"
    props = f", tags ({tags})" if tags else ""
    return parse_model(f"MODEL (name {name}, kind FULL{props}); SELECT * FROM {source}")


#   raw.events -> shop.orders -> shop.order_lines -> sales.daily -> sales.monthly
#                                                  \-> sales.report (also reads sales.monthly)
#   shop.customers (alone; reads a catalog table that is not a model)
MODELS = {
    m.name: m
    for m in (
        _model("raw.events", tags="'Raw'"),
        _model("shop.orders", "raw.events", tags="shop, core"),
        _model("shop.order_lines", "shop.orders", tags="shop"),
        _model("sales.daily", "shop.order_lines", tags="finance, daily"),
        _model("sales.monthly", "sales.daily", tags="finance"),
        _model("sales.report", "sales.daily", "sales.monthly"),
        _model("shop.customers", "crm.customers", tags="core"),
    )
}
ALL = set(MODELS)


def select(pattern):
    return select_models(MODELS, pattern)


def error(pattern, models=MODELS) -> str:
    with pytest.raises(ArgumentError) as info:
        select_models(models, pattern)
    return str(info.value)


# =========================================================================== names and globs


def test_no_selector_selects_every_model():
    assert select(None) == select("") == select(" , ") == ALL


def test_exact_names_and_globs_are_combined():
    assert select("sales.*, shop.orders") == {"sales.daily", "sales.monthly", "sales.report", "shop.orders"}
    assert select("shop.order*") == {"shop.orders", "shop.order_lines"}
    assert select("*.daily,*.monthly") == {"sales.daily", "sales.monthly"}
    assert select("s?op.orders") == {"shop.orders"}


def test_names_are_case_insensitive_and_blanks_and_empty_items_are_ignored():
    assert select("  SALES.Daily ,, ") == {"sales.daily"}


def test_a_glob_does_not_match_a_partial_name():
    assert "No model matches 'sales'" in error("sales")


def test_a_name_matching_nothing_is_an_error_listing_the_known_models():
    message = error("sales.*, shop.nothing*")
    assert "No model matches 'shop.nothing*' (argument select)" in message
    assert "Known models: raw.events, sales.daily, sales.monthly, sales.report, shop.customers, " in message


def test_a_selector_with_no_models_at_all_says_none():
    assert "Known models: none." in error("sales.*", models={})


# =========================================================================== tags


def test_tag_selects_the_models_carrying_it():
    assert select("tag:finance") == {"sales.daily", "sales.monthly"}
    assert select("tag:core") == {"shop.orders", "shop.customers"}


def test_tags_match_case_insensitively_and_allow_globs():
    assert select("TAG:raw") == {"raw.events"}
    assert select("tag:fin*") == {"sales.daily", "sales.monthly"}
    assert select("tag:*") == ALL - {"sales.report"}


def test_tags_and_names_combine():
    assert select("tag:finance, shop.customers") == {"sales.daily", "sales.monthly", "shop.customers"}


def test_a_tag_matching_nothing_is_an_error_listing_the_known_tags():
    message = error("tag:financ")
    assert "No model matches 'tag:financ' (argument select): no model has a tag matching 'financ'" in message
    assert "Known tags: core, daily, finance, Raw, shop" in message


def test_a_tag_selector_with_no_tags_at_all_says_none():
    assert "Known tags: none." in error("tag:x", models={"s.a": _model("s.a")})


def test_an_empty_tag_is_an_error():
    assert "'tag:' names no tag" in error("tag:")


# =========================================================================== upstream and downstream


def test_plus_before_adds_every_upstream_model_transitively():
    assert select("+sales.daily") == {"sales.daily", "shop.order_lines", "shop.orders", "raw.events"}


def test_plus_after_adds_every_downstream_model_transitively():
    assert select("shop.order_lines+") == {"shop.order_lines", "sales.daily", "sales.monthly", "sales.report"}


def test_plus_on_both_sides_adds_both_directions():
    assert select("+sales.monthly+") == {
        "sales.monthly", "sales.report", "sales.daily", "shop.order_lines", "shop.orders", "raw.events",
    }


def test_a_model_without_relatives_selects_only_itself():
    assert select("+shop.customers+") == {"shop.customers"}


def test_catalog_tables_that_are_not_models_are_not_selected():
    assert "crm.customers" not in select("+shop.customers")


def test_plus_applies_to_every_match_of_a_glob_or_tag():
    assert select("sales.dai*+") == {"sales.daily", "sales.monthly", "sales.report"}
    assert select("+tag:finance") == {"sales.daily", "sales.monthly", "shop.order_lines", "shop.orders", "raw.events"}
    assert select("tag:raw+") == ALL - {"shop.customers"}


def test_plus_items_combine_with_other_items():
    assert select("+shop.orders, shop.customers, sales.report") == {
        "shop.orders", "raw.events", "shop.customers", "sales.report",
    }


def test_spaces_around_the_plus_marks_are_ignored():
    assert select(" + shop.orders + ") == select("+shop.orders+")


def test_upstream_of_a_name_matching_nothing_is_an_error_naming_the_item():
    message = error("+shop.nothing")
    assert "No model matches '+shop.nothing' (argument select)" in message and "Known models: raw.events" in message


@pytest.mark.parametrize("item", ["+", "++", "+ +", "++shop.orders", "shop.orders++", "shop+orders"])
def test_a_malformed_plus_item_is_an_error_explaining_the_grammar(item):
    message = error(f"sales.daily, {item}")
    assert f"select: {item.strip()!r} is not a selector" in message
    assert "tag:<tag>" in message and "upstream" in message and "downstream" in message
