"""Project directories, the model DAG and environment names (no Spark session needed; selectors: test_selectors.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyspark_incr.errors import ArgumentError, ModelDefinitionError
from pyspark_incr.model.definition import parse_model
from pyspark_incr.plan.environment import PROD, check_env
from pyspark_incr.project.dag import parents, topological
from pyspark_incr.project.loader import load_project


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def model(name: str, *reads: str) -> str:
    source = " CROSS JOIN ".join(reads) if reads else "(SELECT 1 AS x) AS t"
    return f"MODEL (name {name}, kind FULL); SELECT * FROM {source}"


def names(models) -> list[str]:
    return [m.name for m in models]


# =========================================================================== load_project


def test_every_sql_file_under_models_is_loaded_including_nested_directories(tmp_path: Path):
    write(tmp_path, "models/a.sql", model("s.a"))
    write(tmp_path, "models/marts/b.sql", model("s.b", "s.a"))
    write(tmp_path, "models/marts/finance/deep/c.sql", model("s.c", "s.b"))
    loaded = load_project(tmp_path)
    assert sorted(names(loaded)) == ["s.a", "s.b", "s.c"]
    by_name = {m.name: m for m in loaded}
    assert by_name["s.c"].source == str(tmp_path / "models/marts/finance/deep/c.sql")
    assert by_name["s.c"].depends_on == ("s.b",)


def test_files_that_are_not_sql_and_files_outside_models_are_ignored(tmp_path: Path):
    write(tmp_path, "models/a.sql", model("s.a"))
    write(tmp_path, "models/README.md", "not a model")
    write(tmp_path, "models/b.sql.bak", "MODEL (broken")
    write(tmp_path, "models/notes.txt", "MODEL (broken")
    write(tmp_path, "scripts/setup.sql", "CREATE SCHEMA s")
    write(tmp_path, "other.sql", "MODEL (broken")
    assert names(load_project(tmp_path)) == ["s.a"]


def test_a_sqlmesh_python_model_loads_next_to_sql_models_while_init_files_macros_and_tests_are_ignored(
        tmp_path: Path):
    write(tmp_path, "models/a.sql", model("s.a"))
    write(tmp_path, "models/__init__.py", "")
    write(tmp_path, "macros/__init__.py", "from sqlmesh import macro")
    write(tmp_path, "tests/test_a.yaml", "test_a:\n  model: s.a\n")
    assert names(load_project(tmp_path)) == ["s.a"]

    write(tmp_path, "models/marts/b.py", "from sqlmesh import model\n@model('s.b', columns={'x': 'int'})\ndef execute(c): ...")
    assert names(load_project(tmp_path)) == ["s.a", "s.b"]


def test_an_empty_models_directory_gives_no_models(tmp_path: Path):
    (tmp_path / "models").mkdir()
    assert load_project(tmp_path) == []


def test_project_path_may_be_a_string(tmp_path: Path):
    write(tmp_path, "models/a.sql", model("s.a"))
    assert names(load_project(str(tmp_path))) == ["s.a"]


def test_missing_models_directory_is_a_clear_error(tmp_path: Path):
    write(tmp_path, "model/a.sql", model("s.a"))  # singular: a typo
    with pytest.raises(ArgumentError) as info:
        load_project(tmp_path)
    message = str(info.value)
    assert repr(str(tmp_path)) in message
    assert "no models/ directory there" in message and "models/*.sql" in message


def test_a_project_path_that_does_not_exist_is_a_clear_error(tmp_path: Path):
    with pytest.raises(ArgumentError, match="no models/ directory"):
        load_project(tmp_path / "nowhere")


def test_models_being_a_file_is_a_clear_error(tmp_path: Path):
    write(tmp_path, "models", "not a directory")
    with pytest.raises(ArgumentError, match="no models/ directory"):
        load_project(tmp_path)


def test_duplicate_model_names_across_files_name_both_files(tmp_path: Path):
    first = write(tmp_path, "models/a/orders.sql", model("shop.orders"))
    second = write(tmp_path, "models/b/orders_copy.sql", model("Shop.Orders"))
    with pytest.raises(ModelDefinitionError) as info:
        load_project(tmp_path)
    message = str(info.value)
    assert "model shop.orders is defined twice" in message
    assert str(first) in message and str(second) in message


def test_a_broken_file_is_reported_with_its_path_and_line(tmp_path: Path):
    write(tmp_path, "models/good.sql", model("s.good"))
    bad = write(tmp_path, "models/sub/bad.sql", "MODEL (\n  name s.bad,\n  kind FULL,\n  crn '@daily'\n);\nSELECT 1")
    with pytest.raises(ModelDefinitionError) as info:
        load_project(tmp_path)
    message = str(info.value)
    assert f"model s.bad ({bad})" in message
    assert "line 4, column 3: unknown MODEL property 'crn'; did you mean 'cron'?" in message


def test_a_broken_file_without_a_name_is_reported_with_its_path(tmp_path: Path):
    bad = write(tmp_path, "models/bad.sql", "SELECT 1")
    with pytest.raises(ModelDefinitionError, match=str(bad)):
        load_project(tmp_path)


def test_notebook_checkpoint_copies_are_not_loaded(tmp_path: Path):
    write(tmp_path, "models/orders.sql", model("shop.orders"))
    write(tmp_path, "models/.ipynb_checkpoints/orders-checkpoint.sql", model("shop.orders"))
    assert names(load_project(tmp_path)) == ["shop.orders"]


# =========================================================================== DAG


def test_parents_are_the_known_models_a_model_reads_excluding_itself():
    m = parse_model(model("s.c", "s.a", "s.c", "raw.events", "s.b"))
    assert parents(m, ["s.a", "s.b", "s.c"]) == ["s.a", "s.b"]
    assert parents(m, []) == []


def test_topological_order_puts_parents_before_children(tmp_path: Path):
    write(tmp_path, "models/1_report.sql", model("s.report", "s.daily", "s.customers"))
    write(tmp_path, "models/2_daily.sql", model("s.daily", "s.events"))
    write(tmp_path, "models/3_events.sql", model("s.events", "raw.events"))
    write(tmp_path, "models/4_customers.sql", model("s.customers", "raw.customers"))
    order = names(topological(load_project(tmp_path)))
    assert sorted(order) == ["s.customers", "s.daily", "s.events", "s.report"]
    assert order.index("s.events") < order.index("s.daily") < order.index("s.report")
    assert order.index("s.customers") < order.index("s.report")


def test_topological_order_does_not_depend_on_input_order():
    a = parse_model(model("s.a"))
    b = parse_model(model("s.b", "s.a"))
    c = parse_model(model("s.c", "s.b", "s.a"))
    assert names(topological([c, b, a])) == names(topological([a, b, c])) == ["s.a", "s.b", "s.c"]


def test_a_model_reading_its_own_table_is_not_a_cycle():
    me = parse_model(model("s.me", "s.me", "raw.x"))
    assert names(topological([me])) == ["s.me"]


def test_a_cycle_is_an_error_naming_its_models():
    a = parse_model(model("s.a", "s.c"))
    b = parse_model(model("s.b", "s.a"))
    c = parse_model(model("s.c", "s.b"))
    unrelated = parse_model(model("s.z"))
    with pytest.raises(ModelDefinitionError) as info:
        topological([a, b, c, unrelated])
    message = str(info.value)
    assert message.startswith("models depend on each other in a cycle: ")
    assert {"s.a", "s.b", "s.c"} <= set(message.split(": ", 1)[1].split(";")[0].split(" -> "))
    assert "s.z" not in message
    assert message.endswith("break the cycle")


def test_a_two_model_cycle_is_an_error():
    a = parse_model(model("s.a", "s.b"))
    b = parse_model(model("s.b", "s.a"))
    with pytest.raises(ModelDefinitionError, match="cycle: s.(a|b) -> s.(a|b) -> s.(a|b)"):
        topological([a, b])


def test_the_order_of_the_same_models_is_kept_and_other_models_get_their_own():
    a, b = parse_model(model("s.a")), parse_model(model("s.b", "s.a"))
    first = topological([b, a])
    first.reverse()  # each caller gets a list of its own to change

    again, other = topological([b, a]), topological([b, parse_model(model("s.a", "s.b0"))])

    assert names(again) == ["s.a", "s.b"] and again[0] is a
    assert names(other) == ["s.a", "s.b"] and other[0] is not a  # an equal name, another model: ordered anew
    cyclic = [parse_model(model("s.x", "s.y")), parse_model(model("s.y", "s.x"))]
    for _ in range(2):  # a cycle is never kept: it fails every call
        with pytest.raises(ModelDefinitionError, match="cycle"):
            topological(cyclic)


# =========================================================================== check_env


@pytest.mark.parametrize(
    ("env", "normalized"),
    [("prod", "prod"), ("PROD", "prod"), ("Dev_1", "dev_1"), ("feature_x", "feature_x"), ("a" * 64, "a" * 64)],
)
def test_valid_environment_names_are_lowercased(env, normalized):
    assert check_env(env) == normalized


def test_prod_is_the_default_environment_name():
    assert check_env(PROD) == "prod"


@pytest.mark.parametrize(
    "env",
    [None, "", "1dev", "_dev", "dev-x", "dev x", "dev;DROP", "dev.x", "dév", "a" * 65, " dev", "dev\nx"],
)
def test_invalid_environment_names_are_refused_with_the_rule(env):
    with pytest.raises(ArgumentError) as info:
        check_env(env)
    message = str(info.value)
    assert f"env {env!r} is not a valid environment name" in message
    assert "letters, digits and underscores, starting with a letter" in message


def test_an_environment_name_with_a_trailing_newline_is_refused():
    with pytest.raises(ArgumentError, match="is not a valid environment name"):
        check_env("dev\n")
