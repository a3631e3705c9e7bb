"""``pyspark-incr init``: a project skeleton that validates offline and builds as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from chispa import assert_df_equality

from conftest import call
from pyspark_incr import cli

SKELETON = ["audits/assert_positive.sql", "config.yaml", "models/customer_totals.sql", "models/daily_revenue.sql",
            "models/seed_orders.sql", "seeds/orders.csv"]
EQUAL = dict(ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)


def _written(root) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_init_writes_models_a_seed_an_audit_and_config_that_validate(tmp_path, capsys):
    assert cli.main(["init", str(tmp_path / "proj")]) == 0

    assert _written(tmp_path / "proj") == SKELETON
    told = capsys.readouterr().out
    assert f"pyspark-incr apply --project {tmp_path / 'proj'}" in told
    assert f"CALL incr.apply(project => '{tmp_path / 'proj'}'" in told
    assert cli.main(["validate", str(tmp_path / "proj")]) == 0
    assert "valid: 3 models, 1 seed, 1 custom audit called" in capsys.readouterr().out


def test_init_without_a_directory_writes_into_the_current_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    assert cli.main(["init"]) == 0

    assert _written(tmp_path) == SKELETON


def test_init_refuses_a_directory_holding_any_of_its_files_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "daily_revenue.sql").write_text("-- mine")

    assert cli.main(["init", str(tmp_path)]) == 2

    assert "already holds models/daily_revenue.sql; remove them or name another directory" in capsys.readouterr().err
    assert _written(tmp_path) == ["models/daily_revenue.sql"]
    assert (tmp_path / "models" / "daily_revenue.sql").read_text() == "-- mine"


def test_the_skeleton_applies_as_written_and_its_tables_hold_the_seeds_orders(spark, isolated, tmp_path):
    assert cli.main(["init", str(tmp_path / "proj")]) == 0

    rows = call(spark, "apply", project=str(tmp_path / "proj"), execution_time="2024-01-08 00:00:00")

    assert sorted((r.model, r.action, r.intervals, r.status) for r in rows) == [
        ("incr_example.customer_totals", "build", 7, "ok"),
        ("incr_example.daily_revenue", "build", 7, "ok"),
        ("incr_example.seed_orders", "create seed", 0, "ok")]
    daily = spark.sql("""SELECT CAST(d AS DATE) AS order_date, CAST(c AS INT) AS customer_id, CAST(o AS BIGINT) AS orders,
                                CAST(r AS DOUBLE) AS revenue FROM VALUES
        ('2024-01-01', 1, 1, 12.5), ('2024-01-01', 2, 1, 7.0), ('2024-01-02', 1, 1, 3.25), ('2024-01-03', 3, 1, 20.0),
        ('2024-01-04', 2, 1, 5.5), ('2024-01-04', 3, 1, 9.75), ('2024-01-05', 1, 1, 14.0), ('2024-01-06', 2, 1, 6.0),
        ('2024-01-07', 3, 2, 15.5) AS t(d, c, o, r)""")
    totals = spark.sql("""SELECT CAST(c AS INT) AS customer_id, CAST(o AS BIGINT) AS orders, CAST(r AS DOUBLE) AS revenue,
                                 CAST(d AS DATE) AS last_order_date FROM VALUES
        (1, 3, 29.75, '2024-01-05'), (2, 3, 18.5, '2024-01-06'), (3, 4, 45.25, '2024-01-07') AS t(c, o, r, d)""")
    for name, expected in (("daily_revenue", daily), ("customer_totals", totals)):
        assert_df_equality(spark.table(f"incr_example.{name}").select(*expected.columns), expected, **EQUAL)
    assert spark.table("incr_example.seed_orders").count() == 10


def test_the_wheel_carries_the_skeleton():
    wheel = pytest.importorskip("hatchling.builders.wheel", reason="hatchling selects the wheel's files")
    root = Path(__file__).resolve().parents[1]

    shipped = {f.distribution_path for f in wheel.WheelBuilder(str(root)).recurse_included_files()}

    assert {f"pyspark_incr/_skeleton/{name}" for name in SKELETON} <= shipped
