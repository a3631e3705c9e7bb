"""What both sides of the differential suite share: the Spark settings, the scenario walk and the dumps.

Imported by ``sqlmesh_side.py`` (SQLMesh's venv) and ``incr_side.py`` (ours), so it uses pyspark and
the standard library only. A side is a :class:`Side` (load, plan, run, its models' names);
:func:`play` walks the scenario with it and writes one JSON dump: after every plan/run step,
every model's columns and rows, or the error that stopped the side.
"""

from __future__ import annotations

import base64
import json
import math
import sys
import traceback
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any


def spark_conf(work: Path) -> dict[str, str]:
    """The same modest Spark settings on both sides; only ``work`` (warehouse, metastore) differs."""
    work = work.resolve()
    return {
        "spark.master": "local[1]",
        "spark.app.name": "differential",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "1g",
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(work / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={work / 'metastore_db'};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={work}",
    }


def encode(value: Any) -> Any:
    """A collected value as JSON; the column's Spark type (in the dump's ``columns``) says how to read it."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, dict):
        return [[encode(k), encode(v)] for k, v in value.items()]
    if hasattr(value, "asDict"):  # a struct
        return {k: encode(v) for k, v in value.asDict().items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return repr(value)


def dump_model(spark, name: str) -> dict:
    """``name``'s columns (name, Spark type) and rows, or why it could not be read."""
    try:
        df = spark.table(name)
        return {
            "columns": [[f.name, f.dataType.simpleString()] for f in df.schema.fields],
            "rows": [[encode(v) for v in row] for row in df.collect()],
        }
    except Exception as e:  # noqa: BLE001 -- a model that cannot be read is a result to compare
        return {"error": first_line(e)}


def first_line(error: BaseException) -> str:
    """The first non-empty line of an error (Spark's are long), with its root cause's when it wraps one."""
    def line(e: BaseException) -> str:
        text = next((part.strip() for part in str(e).splitlines() if part.strip()), "")
        return f"{type(e).__name__}: {text}"

    root = error
    while (root.__cause__ or root.__context__) is not None and len(str(root)) < 100_000:
        root = root.__cause__ or root.__context__
    text = line(error) if root is error else f"{line(error)} (cause: {line(root)})"
    return text[:400]


def label(step: dict) -> str:
    """A step's short name for reports: ``plan 2024-01-05 06:30:00``."""
    verb = "plan" if "plan" in step else "run"
    return f"{verb} {step[verb]}"


class Side:
    """One tool's way of loading the project, planning and running it, and naming its models."""

    def load(self) -> None:
        """Load the project (after the scenario's setup: a tool may read the raw tables' schemas)."""

    def plan(self, execution_time: str) -> None:
        raise NotImplementedError

    def run(self, execution_time: str) -> None:
        raise NotImplementedError

    def models(self) -> list[str]:
        """The ``schema.table`` names of the models with a table or view (not external, not embedded)."""
        raise NotImplementedError


def play(spark, scenario: dict, side: Side, out: Path, versions: dict[str, str]) -> None:
    """Run the scenario's setup and steps; after each plan/run, dump every model; write the dump to ``out``.

    The first failure stops the side (later states would compare a broken history); it is recorded
    with its step (-1: setup or loading the project), and the dump is written whatever happens.
    """
    dump: dict[str, Any] = {"versions": versions, "steps": []}
    step_no = -1
    try:
        for statement in scenario.get("setup", []):
            spark.sql(statement)
        side.load()
        for step_no, step in enumerate(scenario["steps"]):
            if "sql" in step:
                for statement in step["sql"]:
                    spark.sql(statement)
                continue
            print(f"# step {step_no}: {label(step)}", file=sys.stderr, flush=True)
            if "plan" in step:
                side.plan(step["plan"])
            else:
                side.run(step["run"])
            dump["steps"].append({"step": step_no, "label": label(step),
                                  "models": {name: dump_model(spark, name) for name in sorted(side.models())}})
    except Exception as e:  # noqa: BLE001 -- reported per model by the runner
        traceback.print_exc()
        dump["error"] = {"step": step_no, "message": first_line(e)}
    out.write_text(json.dumps(dump, indent=1))


def main_args(argv: list[str]) -> tuple[Path, dict, Path, Path]:
    """``<project> <scenario.json> <work dir> <dump.json>`` from the runner."""
    project, scenario, work, out = argv
    return Path(project), json.loads(Path(scenario).read_text()), Path(work), Path(out)
