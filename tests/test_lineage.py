"""Column-level lineage (pyspark_incr.project.lineage, CALL incr.lineage): from a model's column back, model by
model, to the columns of the tables no model builds, read from the queries with sqlglot."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from chispa import assert_df_equality

from conftest import state_rows
from pyspark_incr.errors import ArgumentError, UnknownModelError
from pyspark_incr.project.lineage import LineageStep, column_lineage, columns_of
from pyspark_incr.project.loader import load
from pyspark_incr.sqltext import call_sql

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

FILES = {
    "external_models.yaml": """
        - name: raw.orders
          columns: {order_id: int, customer_id: int, amount: double, ds: date, status: string}
        - name: raw.customers
          columns: {id: int, Name: string, region: string}
    """,
    # time macros render for a sample interval before the query is analysed
    "models/orders_clean.sql": """
        MODEL (name s.orders_clean, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), start '2024-01-01');
        SELECT order_id, customer_id, amount, ds FROM raw.orders
        WHERE status = 'ok' AND ds BETWEEN @start_ds AND @end_ds
    """,
    # a CTE with aggregates, joined with an external table
    "models/totals.sql": """
        MODEL (name s.totals, kind FULL);
        WITH per AS (
          SELECT customer_id, SUM(amount) AS revenue, COUNT(*) AS orders FROM s.orders_clean GROUP BY customer_id
        )
        SELECT c.Name AS Customer, per.revenue, per.revenue / per.orders AS avg_amount
        FROM per JOIN raw.customers AS c ON c.id = per.customer_id
    """,
    # a subquery, CASE and a window function
    "models/ranked.sql": """
        MODEL (name s.ranked, kind FULL);
        SELECT customer, CASE WHEN revenue > 100 THEN 'big' ELSE 'small' END AS size,
               ROW_NUMBER() OVER (ORDER BY revenue DESC) AS rnk
        FROM (SELECT customer, revenue FROM s.totals) AS t
    """,
    # UNION of a star over a model and a table nobody declared
    "models/movements.sql": """
        MODEL (name s.movements, kind FULL);
        SELECT * FROM s.orders_clean
        UNION ALL
        SELECT order_id, customer_id, -refund AS amount, ds FROM raw.refunds
    """,
    # two paths to s.totals.customer: directly and through s.ranked
    "models/both.sql": """
        MODEL (name s.both, kind FULL);
        SELECT t.customer, r.size, g.manager FROM s.totals AS t JOIN s.ranked AS r ON r.customer = t.customer
        CROSS JOIN s.regions AS g
    """,
    "models/people.sql": "MODEL (name s.people, kind FULL);\nSELECT * FROM raw.customers",
    # a star over a table whose columns nobody declared
    "models/copied.sql": "MODEL (name s.copied, kind FULL);\nSELECT * FROM raw.undeclared",
    "models/regions.sql": "MODEL (name s.regions, kind SEED (path '../seeds/regions.csv'));",
    "seeds/regions.csv": "region,manager\neu,ann\n",
    "models/scores.py": """
        from pyspark_incr.decorators import model


        @model("s.scores", kind="FULL", columns={"customer": "string", "score": "int"})
        def execute(context, **kwargs):
            return context.spark.sql("SELECT 'a' AS customer, 1 AS score")
    """,
    "models/scored.sql": "MODEL (name s.scored, kind FULL);\nSELECT customer, score * 2 AS double_score FROM s.scores",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("lineage")
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return load(root)


def _steps(steps):
    return [(s.depth, s.model, s.column, s.parent_model, s.parent_column) for s in steps]


def test_an_aggregate_in_a_cte_is_traced_through_its_parent_model_to_the_raw_column(project):
    steps = column_lineage(project, "s.totals", "revenue")

    assert steps == (
        LineageStep(0, "s.totals", "revenue", None, None, "SUM(orders_clean.amount) AS revenue", True),
        LineageStep(1, "s.orders_clean", "amount", "s.totals", "revenue", "orders.amount AS amount", True),
        LineageStep(2, "raw.orders", "amount", "s.orders_clean", "amount", "", False),
    )


def test_a_column_computed_from_two_columns_lists_both_in_name_order(project):
    steps = column_lineage(project, "s.totals", "avg_amount")

    assert steps[0].expression == "per.revenue / per.orders AS avg_amount"
    # COUNT(*) reads no column: only revenue's amount is found
    assert _steps(steps[1:]) == [(1, "s.orders_clean", "amount", "s.totals", "avg_amount"),
                                 (2, "raw.orders", "amount", "s.orders_clean", "amount")]


def test_a_joined_table_column_keeps_its_declared_spelling_and_names_match_case_insensitively(project):
    steps = column_lineage(project, "S.Totals", "CUSTOMER")

    assert _steps(steps) == [(0, "s.totals", "Customer", None, None),
                             (1, "raw.customers", "Name", "s.totals", "Customer")]
    assert steps[0].expression == "c.name AS customer"


def test_case_window_and_subquery_are_traced_to_the_columns_they_read(project):
    size = column_lineage(project, "s.ranked", "size")
    rank = column_lineage(project, "s.ranked", "rnk")

    assert size[0].expression == "CASE WHEN t.revenue > 100 THEN 'big' ELSE 'small' END AS size"
    assert rank[0].expression == "ROW_NUMBER() OVER (ORDER BY t.revenue DESC) AS rnk"
    for steps in (size, rank):
        assert _steps(steps[1:]) == [(1, "s.totals", "revenue", "s.ranked", steps[0].column),
                                     (2, "s.orders_clean", "amount", "s.totals", "revenue"),
                                     (3, "raw.orders", "amount", "s.orders_clean", "amount")]


def test_a_union_reads_each_branch_and_a_star_expands_from_the_parent_models_columns(project):
    steps = column_lineage(project, "s.movements", "amount")

    assert columns_of(project, "s.movements") == ("order_id", "customer_id", "amount", "ds")
    assert columns_of(project, "s.people") == ("id", "Name", "region")  # from external_models.yaml
    assert steps[0].expression == "orders_clean.amount AS amount UNION ALL -refunds.refund AS amount"
    assert [(s.depth, s.model, s.column, s.is_model) for s in steps] == [
        (0, "s.movements", "amount", True),
        (1, "raw.refunds", "refund", False),  # undeclared: no model, read as it is
        (1, "s.orders_clean", "amount", True),
        (2, "raw.orders", "amount", False),
    ]
    assert steps[1].expression == ""


def test_a_column_reached_along_two_paths_is_walked_once(project):
    steps = column_lineage(project, "s.both", "customer")

    assert _steps(steps) == [(0, "s.both", "customer", None, None),
                             (1, "s.totals", "Customer", "s.both", "customer"),
                             (2, "raw.customers", "Name", "s.totals", "Customer")]
    size = _steps(column_lineage(project, "s.both", "size"))
    assert size.count((4, "raw.orders", "amount", "s.orders_clean", "amount")) == 1


def test_seed_and_python_models_are_single_steps_with_declared_or_csv_columns(project):
    assert columns_of(project, "s.regions") == ("region", "manager")
    assert columns_of(project, "s.scores") == ("customer", "score")
    assert column_lineage(project, "s.scores", "score") == (
        LineageStep(0, "s.scores", "score", None, None, "", True),)
    assert _steps(column_lineage(project, "s.both", "manager")) == [(0, "s.both", "manager", None, None),
                                                                    (1, "s.regions", "manager", "s.both", "manager")]
    assert _steps(column_lineage(project, "s.scored", "double_score"))[1:] == [
        (1, "s.scores", "score", "s.scored", "double_score")]


def test_an_unknown_model_is_refused_naming_close_names(project):
    with pytest.raises(UnknownModelError, match=r"no model 's\.total' is defined; did you mean s\.totals\b"):
        column_lineage(project, "s.total", "revenue")


def test_an_unknown_column_is_refused_naming_the_models_columns(project):
    with pytest.raises(ArgumentError, match=r"model s\.totals has no column 'profit'; its columns: Customer, "
                                            r"revenue, avg_amount"):
        column_lineage(project, "s.totals", "profit")


def test_a_star_over_an_undeclared_table_lists_no_columns_and_says_to_declare_them(project):
    assert columns_of(project, "s.copied") == ()
    with pytest.raises(ArgumentError, match=r"no column 'id'; its columns: none known\. Its query selects \* from a "
                                            r"table whose columns are unknown: declare them in external_models\.yaml"):
        column_lineage(project, "s.copied", "id")


def test_the_cli_verb_calls_lineage_with_the_model_the_column_and_the_project_as_an_absolute_path(monkeypatch,
                                                                                                  tmp_path):
    from pyspark_incr import cli

    made = []

    class Session:
        columns: list[str] = []

        def sql(self, statement):
            made.append(statement)
            return self

        def collect(self):
            return []

    monkeypatch.setattr(cli, "_session", lambda args: Session())
    monkeypatch.chdir(tmp_path)

    assert cli.main(["lineage", "s.totals", "--column", "revenue", "--project", "proj"]) == 0
    assert made == [f"CALL incr.lineage(model => 's.totals', column => 'revenue', project => '{tmp_path / 'proj'}')"]


def test_the_shop_example_traces_a_view_through_an_embedded_model_to_the_external_table_and_the_seed():
    shop = load(EXAMPLES / "shop")

    revenue = column_lineage(shop, "shop.top_items", "revenue")
    item = column_lineage(shop, "shop.top_items", "item_name")

    assert columns_of(shop, "shop.top_items") == ("item_name", "revenue")
    assert [(s.depth, s.model, s.column, s.expression, s.is_model) for s in revenue] == [
        (0, "shop.top_items", "revenue", "SUM(daily_orders.revenue) AS revenue", True),
        (1, "shop.daily_orders", "revenue", "CAST(SUM(orders_enriched.amount) AS DOUBLE) AS revenue", True),
        (2, "shop.orders_enriched", "amount", "o.amount AS amount", True),
        (3, "shop_raw.orders", "amount", "", False)]
    assert [(s.model, s.column) for s in item][-1] == ("shop.menu_items", "name")


def test_call_lineage_returns_every_step_of_each_column_of_the_model(spark, module_isolated, project):
    got = spark.sql(call_sql("lineage", model="s.ranked", project=str(project.root)))

    def revenue(asked):
        return [(asked, 1, "s.totals", "revenue", "s.ranked", asked, "SUM(orders_clean.amount) AS revenue", True),
                (asked, 2, "s.orders_clean", "amount", "s.totals", "revenue", "orders.amount AS amount", True),
                (asked, 3, "raw.orders", "amount", "s.orders_clean", "amount", "", False)]

    rows = [
        ("customer", 0, "s.ranked", "customer", None, None, "totals.customer AS customer", True),
        ("customer", 1, "s.totals", "Customer", "s.ranked", "customer", "c.name AS customer", True),
        ("customer", 2, "raw.customers", "Name", "s.totals", "Customer", "", False),
        ("size", 0, "s.ranked", "size", None, None, "CASE WHEN t.revenue > 100 THEN 'big' ELSE 'small' END AS size",
         True), *revenue("size"),
        ("rnk", 0, "s.ranked", "rnk", None, None, "ROW_NUMBER() OVER (ORDER BY t.revenue DESC) AS rnk", True),
        *revenue("rnk"),
    ]
    assert_df_equality(got, spark.createDataFrame(rows, got.schema), ignore_nullable=True)
    assert state_rows(spark, module_isolated) == {}  # it reads the queries only: no state is created
