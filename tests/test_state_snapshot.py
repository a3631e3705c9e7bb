"""Parsed models kept in state as JSON snapshots: exact round trips, used only when valid, never code."""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import call

from pyspark_incr.intervals import Interval, IntervalSet
from pyspark_incr.model.definition import Model, parse_model, reparse
from pyspark_incr.model.kinds import FullKind
from pyspark_incr.project.loader import load_project
from pyspark_incr.state import snapshot as snapshots
from pyspark_incr.state import tables as t
from pyspark_incr.state.snapshot import SnapshotError, from_snapshot, model_of, to_snapshot
from pyspark_incr.state.store import StateStore

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
DEFINITION = "MODEL (name s.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), cron '@daily'); SELECT ds FROM raw.x"


def _fixture_models() -> list[Model]:
    """Every model of examples/shop, of the valid model fixtures and of the spec examples."""
    models = list(load_project(ROOT / "examples" / "shop"))
    for sql in sorted((FIXTURES / "models" / "valid").glob("*.sql")):
        models.append(parse_model(sql.read_text(encoding="utf-8"), str(sql)))
    for sql in sorted((FIXTURES / "spec_examples").glob("*.sql")):
        expected = json.loads(sql.with_name(sql.stem + ".expected.json").read_text(encoding="utf-8"))
        if expected.get("xfail"):
            continue
        text = sql.read_text(encoding="utf-8")
        if expected["query_appended"]:
            text = text.rstrip() + "\n\nSELECT 1 AS placeholder\n"
        models.append(parse_model(text, str(sql)))
    return models


def _assert_same_record(again: Model, model: Model) -> None:
    """Equal, and equal in every field, ``compare=False`` ones (definition, source, context, located) included."""
    assert again == model
    for f in dataclasses.fields(Model):
        assert getattr(again, f.name) == getattr(model, f.name), f.name
    assert type(again.kind) is type(model.kind) and type(again.schedule.unit) is type(model.schedule.unit)


# --------------------------------------------------------------------------- round trips


def test_every_example_and_fixture_model_is_rebuilt_exactly_from_its_snapshot():
    models = _fixture_models()
    assert len(models) > 40 and {m.kind.name for m in models} >= {"SEED", "EXTERNAL", "SCD_TYPE_2", "INCREMENTAL_BY_UNIQUE_KEY"}
    for model in models:
        _assert_same_record(from_snapshot(to_snapshot(model)), model)


def test_stored_project_definitions_are_rebuilt_as_they_are_parsed_again():
    """The snapshot state holds is that of reparse (the project's defaults and variables in its context)."""
    for model in load_project(ROOT / "examples" / "shop"):
        parsed = reparse(model.definition, model.source, model.context)
        _assert_same_record(model_of(snapshots.snapshot_for(model.definition, model.source, model.context),
                                     model.definition, model.source, model.context), parsed)


@dataclass(frozen=True)
class _Check:
    name: str
    args: tuple[tuple[str, str], ...] = ()
    blocking: bool = True
    limit: int | None = None


@dataclass(frozen=True)
class _CheckedFull(FullKind):
    checks: tuple[_Check, ...] = ()
    inner: _Check | None = None


def test_fields_added_later_round_trip_without_code_for_them(monkeypatch):
    """Any frozen record of the package, nested in tuples or records, needs no serializer change."""
    module = sys.modules["pyspark_incr.model.kinds.simple"]
    for cls in (_Check, _CheckedFull):
        monkeypatch.setattr(cls, "__module__", module.__name__)
        monkeypatch.setattr(module, cls.__qualname__, cls, raising=False)
    checks = (_Check("not_null", (("columns", "id"),)), _Check("range", (), False, 3))
    model = dataclasses.replace(parse_model("MODEL (name a.b, kind FULL); SELECT 1 AS id"),
                                kind=_CheckedFull(checks=checks, inner=_Check("x")))

    _assert_same_record(from_snapshot(to_snapshot(model)), model)


def test_values_json_cannot_hold_are_refused_when_writing():
    model = parse_model("MODEL (name a.b, kind FULL); SELECT 1 AS id")
    with pytest.raises(SnapshotError, match="list"):
        to_snapshot(dataclasses.replace(model, tags=["a"]))
    with pytest.raises(SnapshotError, match="float"):
        to_snapshot(dataclasses.replace(model, start_ms=float("nan")))


# --------------------------------------------------------------------------- when a snapshot is not used


def _tampered(change) -> str:
    data = json.loads(to_snapshot(reparse(DEFINITION, "registry", "")))
    change(data)
    return json.dumps(data)


@pytest.mark.parametrize("bad", [
    pytest.param(lambda d: d.update(format="1/0.0.1/sqlglot 1/0"), id="another-format"),
    pytest.param(lambda d: d["model"]["fields"].pop("tags"), id="a-field-is-missing"),
    pytest.param(lambda d: d["model"]["fields"].update(colour="red"), id="an-unknown-field"),
    pytest.param(lambda d: d["model"]["fields"].update(definition="MODEL (name s.other); SELECT 1"), id="other-definition"),
    pytest.param(lambda d: d["model"].update({"@": "pyspark_incr.model.kinds.simple:FullKind"}), id="not-a-model"),
    pytest.param(lambda d: d["model"]["fields"]["kind"].update({"@": "subprocess:Popen"}), id="class-not-ours"),
    pytest.param(lambda d: d["model"]["fields"]["kind"].update({"@": "pyspark_incr.model.definition:parse_model"}),
                 id="not-a-record"),
    pytest.param(lambda d: d["model"]["fields"]["kind"].update({"@": "pyspark_incr.state.snapshot:Enum"}),
                 id="a-class-only-imported-there"),
    pytest.param(lambda d: d["model"]["fields"]["schedule"]["fields"]["unit"].update(value="fortnight"), id="bad-enum"),
])
def test_a_snapshot_that_is_not_valid_is_ignored_and_the_definition_parsed_again(bad, monkeypatch):
    parsed = []
    monkeypatch.setattr(snapshots, "reparse", lambda *args: parsed.append(args) or reparse(*args))

    model = model_of(_tampered(bad), DEFINITION, "registry", "")

    assert parsed == [(DEFINITION, "registry", "")]
    _assert_same_record(model, reparse(DEFINITION, "registry", ""))


def test_a_valid_snapshot_is_used_and_nothing_parsed(monkeypatch):
    snapshot = to_snapshot(reparse(DEFINITION, "registry", ""))
    monkeypatch.setattr(snapshots, "reparse", lambda *args: pytest.fail("parsed again despite a valid snapshot"))

    _assert_same_record(model_of(snapshot, DEFINITION, "registry", ""), reparse(DEFINITION, "registry", ""))


def test_the_format_names_the_encoding_the_versions_and_the_parsing_code():
    encoding, version, sqlglot_version, digest = snapshots.format_version().split("/")
    assert (encoding, version) == (str(snapshots.ENCODING), __import__("pyspark_incr").__version__)
    assert sqlglot_version.startswith("sqlglot ") and len(digest) == 16


# --------------------------------------------------------------------------- in state


def _env_row(definition: str, op: str = "apply") -> dict:
    """An environment row as the executor writes it: no snapshot."""
    return {"env": "prod", "model": "s.daily", "fingerprint": "f", "metadata_hash": "m", "definition": definition,
            "source": "registry", "model_source": "registry", "context": "", "table_name": "`s`.`daily`",
            "start_ms": 0, "op": op}


def test_applied_rows_get_a_snapshot_and_reading_the_environment_parses_nothing(spark, isolated, monkeypatch):
    StateStore(spark).append(t.ENVIRONMENTS, [_env_row(DEFINITION)])

    [row] = StateStore(spark).read(t.ENVIRONMENTS).to_pylist()
    model_of.cache_clear()
    monkeypatch.setattr(snapshots, "reparse", lambda *a: pytest.fail("parsed again despite a valid snapshot"))
    entry = StateStore(spark).environment("prod")["s.daily"]

    assert json.loads(row["snapshot"])["format"] == snapshots.format_version()
    _assert_same_record(entry.parsed(), reparse(DEFINITION, "registry", ""))


def test_removal_rows_carry_no_snapshot(spark, isolated):
    StateStore(spark).append(t.ENVIRONMENTS, [_env_row(DEFINITION), _env_row(DEFINITION, "remove")])

    rows = StateStore(spark).read(t.ENVIRONMENTS).to_pylist()

    assert [r["snapshot"] is None for r in sorted(rows, key=lambda r: r["seq"])] == [False, True]
    assert StateStore(spark).environment("prod") == {}


def test_an_environments_table_of_an_older_version_gets_the_column_and_its_rows_are_parsed_again(spark, isolated):
    schema = f"{isolated}_state"
    old = t.StateTable("environments", pa.schema([f for f in t.ENVIRONMENTS.schema
                                                  if f.name not in ("snapshot", "run_id", "conform")]), "")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{schema}`")
    spark.sql(old.ddl(schema))
    written = {**_env_row(DEFINITION), "seq": 1, "at": datetime.now(timezone.utc)}
    spark.createDataFrame(t.to_arrow(old, [written])).write.insertInto(old.qualified(schema))

    before = StateStore(spark).environment("prod")["s.daily"]
    StateStore(spark).append(t.ENVIRONMENTS, [_env_row(DEFINITION.replace("raw.x", "raw.y"))])
    after = StateStore(spark).environment("prod")["s.daily"]

    assert spark.table(f"`{schema}`.`environments`").columns[-3:] == ["snapshot", "run_id", "conform"]
    assert before.snapshot is None and before.parsed() == reparse(DEFINITION, "registry", "")
    assert after.snapshot and after.parsed().depends_on == ("raw.y",)


def test_coverage_folds_each_tables_adds_and_removes_in_order(spark, isolated):
    def row(table: str, op: str, start: int, end: int) -> dict:
        return {"table_name": table, "fingerprint": "f", "model": "m", "start_ms": start, "end_ms": end, "op": op,
                "run_id": "r"}

    StateStore(spark).append(t.INTERVALS, [
        row("a", "add", 0, 10), row("b", "add", 0, 5), row("a", "add", 10, 20), row("a", "remove", 5, 15),
        row("b", "remove", 0, 5), row("a", "add", 12, 13), row("b", "add", 7, 9),
    ])

    coverage = StateStore(spark).coverage()

    assert coverage == {"a": IntervalSet([Interval(0, 5), Interval(12, 13), Interval(15, 20)]),
                        "b": IntervalSet([Interval(7, 9)])}


# --------------------------------------------------------------------------- the safety judgement kept beside it

SLICED = ("MODEL (name s.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), cron '@daily');\n"
          "SELECT ds, v FROM raw.events WHERE ds BETWEEN @start_ds AND @end_ds")


def test_a_judgement_is_taken_only_when_judged_from_the_same_model_sources_and_code(monkeypatch):
    from pyspark_incr.safety import judge as gate
    from pyspark_incr.safety.pushdown import Source

    model = reparse(SLICED, "registry", "")
    kept = gate.judge(model, ())
    events = (Source("raw.events", "ds"),)

    other_sources = gate.judge(model, events, kept)
    monkeypatch.setattr(gate, "_judge", lambda *a: pytest.fail("judged again despite a judgement kept for the same"))
    same = gate.judge(model, events, other_sources)

    assert kept.key and other_sources.key != kept.key
    assert (kept.pushdown, [p.source.name for p in other_sources.pushdown]) == ((), ["raw.events"])
    assert same is other_sources
    monkeypatch.setattr(gate, "_code", lambda: "another version of the judging code")
    gate._key.cache_clear()  # keys are cached per process, whose code does not change
    try:
        with pytest.raises(pytest.fail.Exception):
            gate.judge(model, events, other_sources)
    finally:
        gate._key.cache_clear()


@pytest.mark.parametrize("bad", [
    pytest.param(lambda d: d["judgement"].update({"@": "pyspark_incr.safety.rules:Verdict"}), id="not-a-judgement"),
    pytest.param(lambda d: d["judgement"]["fields"].pop("key"), id="a-field-is-missing"),
    pytest.param(lambda d: d["judgement"]["fields"]["verdict"].update({"@": "subprocess:Popen"}), id="class-not-ours"),
])
def test_a_kept_judgement_that_cannot_be_read_is_none_and_the_model_still_rebuilt(bad):
    from pyspark_incr.safety import judge as gate

    model = reparse(SLICED, "registry", "")
    data = json.loads(to_snapshot(model, gate.judge(model, ())))
    bad(data)
    snapshot = json.dumps(data)

    assert snapshots.judgement_of(snapshot) is None
    _assert_same_record(model_of(snapshot, SLICED, "registry", ""), model)


def _daily_project(spark, isolated: str, root) -> str:
    db = f"{isolated}_db"
    (root / "models").mkdir()
    (root / "models" / "daily.sql").write_text(
        f"MODEL (name {db}.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), cron '@daily', "
        f"start '2024-01-01');\nSELECT CAST(@start_ds AS DATE) AS ds, 1 AS v\n")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    return db


def test_a_run_in_another_application_takes_the_judgement_its_apply_kept(spark, isolated, tmp_path, monkeypatch):
    from pyspark_incr.runtime import discard
    from pyspark_incr.safety import judge as gate

    db = _daily_project(spark, isolated, tmp_path)
    applied = call(spark, "apply", project=str(tmp_path), execution_time="2024-01-03 00:00:00")
    [row] = [r for r in StateStore(spark).read(t.ENVIRONMENTS).to_pylist() if r["model"] == f"{db}.daily"]
    # another application: nothing parsed, judged or read yet
    discard(spark)
    for cache in (reparse, model_of, snapshots.judgement_of, snapshots._read, gate._judge):
        cache.cache_clear()
    monkeypatch.setattr(gate, "_judge", lambda *a: pytest.fail("judged again despite the judgement kept"))

    ran = call(spark, "run", execution_time="2024-01-04 00:00:00")

    assert {r.status for r in applied} == {"ok"} and json.loads(row["snapshot"])["judgement"]["fields"]["key"]
    assert [(r.model, r.status) for r in ran] == [(f"{db}.daily", "ok")]
    spark.catalog.refreshTable(f"{db}.daily")
    # a row per batch: the apply's one batch (two days), then the run's day
    assert sorted(str(r.ds) for r in spark.table(f"{db}.daily").collect()) == ["2024-01-01", "2024-01-03"]


def test_a_version_promoted_without_building_keeps_its_judgement_too(spark, isolated, tmp_path):
    db = _daily_project(spark, isolated, tmp_path)
    call(spark, "apply", project=str(tmp_path), env="dev", execution_time="2024-01-03 00:00:00")
    promoted = call(spark, "apply", project=str(tmp_path), env="prod", execution_time="2024-01-03 00:00:00")

    kept = {r["env"]: json.loads(r["snapshot"]).get("judgement") for r in StateStore(spark).read(t.ENVIRONMENTS).to_pylist()
            if r["model"] == f"{db}.daily"}

    assert [r.action for r in promoted if r.model == f"{db}.daily"] == ["promote"]  # nothing built in prod
    assert kept["prod"] is not None and kept["prod"] == kept["dev"]


def _another_application(spark) -> None:
    """What a fresh process has: nothing parsed, judged or read yet."""
    from pyspark_incr.runtime import discard
    from pyspark_incr.safety import judge as gate

    discard(spark)
    for cache in (reparse, model_of, snapshots.judgement_of, snapshots._read, gate._judge, gate._key):
        cache.cache_clear()


def _rows_of(spark, model: str) -> list[dict]:
    rows = StateStore(spark).read(t.ENVIRONMENTS).to_pylist()
    return sorted((r for r in rows if r["model"] == model), key=lambda r: r["seq"])


def test_an_apply_after_an_upgrade_records_kept_versions_again_with_fresh_snapshots(spark, isolated, tmp_path,
                                                                                   monkeypatch):
    from pyspark_incr.safety import judge as gate

    db = _daily_project(spark, isolated, tmp_path)
    call(spark, "apply", project=str(tmp_path), execution_time="2024-01-03 00:00:00")
    [before] = _rows_of(spark, f"{db}.daily")
    [(_, _, _, applied_at)] = [r for r in call(spark, "environments") if r.env == "prod"]
    # an upgrade changing the parsing and judging code: no kept snapshot or judgement is taken any more
    monkeypatch.setattr(snapshots, "format_version", lambda: "another version of the parsing code")
    monkeypatch.setattr(gate, "_code", lambda: "another version of the judging code")
    _another_application(spark)

    call(spark, "apply", project=str(tmp_path), execution_time="2024-01-03 00:00:00")
    call(spark, "apply", project=str(tmp_path), execution_time="2024-01-03 00:00:00")  # nothing stale now
    rows = _rows_of(spark, f"{db}.daily")
    _another_application(spark)
    parsed, judged, judge = [], [], gate._judge  # counted, not failed inside the call (which would never return)
    monkeypatch.setattr(snapshots, "reparse", lambda *a: parsed.append(a) or reparse(*a))
    monkeypatch.setattr(gate, "_judge", lambda *a: judged.append(a) or judge(*a))
    ran = call(spark, "run", execution_time="2024-01-04 00:00:00")

    assert (parsed, judged) == ([], [])
    assert len(rows) == 2  # the second apply after the upgrade found nothing to record again
    kept, again = (json.loads(r["snapshot"]) for r in rows)
    assert again["format"] == "another version of the parsing code" != kept["format"]
    assert again["judgement"]["fields"]["key"] != kept["judgement"]["fields"]["key"]
    same = ("fingerprint", "metadata_hash", "definition", "source", "model_source", "context", "table_name",
            "start_ms", "conform", "op")
    assert {k: rows[1][k] for k in same} == {k: before[k] for k in same}
    assert [(r.model, r.status) for r in ran] == [(f"{db}.daily", "ok")]
    # recording the same version again is no change of the environment
    assert [r.updated_at for r in call(spark, "environments") if r.env == "prod"] == [applied_at]


def test_compaction_folds_a_version_recorded_again_into_the_row_before_it(spark, isolated, tmp_path, monkeypatch):
    import time

    from pyspark_incr.safety import judge as gate
    from pyspark_incr.state import compact

    db = _daily_project(spark, isolated, tmp_path)
    call(spark, "apply", project=str(tmp_path), execution_time="2024-01-03 00:00:00")
    [(_, _, _, applied_at)] = [r for r in call(spark, "environments") if r.env == "prod"]
    monkeypatch.setattr(snapshots, "format_version", lambda: "another version of the parsing code")
    monkeypatch.setattr(gate, "_code", lambda: "another version of the judging code")
    _another_application(spark)
    call(spark, "apply", project=str(tmp_path), execution_time="2024-01-03 00:00:00")  # records it again
    store = StateStore(spark)
    [_, again] = _rows_of(spark, f"{db}.daily")
    held = store.environment("prod")
    an_hour_on = int(time.time() * 1000) + 3_600_000  # every row settled

    folded = compact.compact(spark, store.schema, t.ENVIRONMENTS, now_ms=an_hour_on)
    _another_application(spark)
    parsed, judged, judge = [], [], gate._judge
    monkeypatch.setattr(snapshots, "reparse", lambda *a: parsed.append(a) or reparse(*a))
    monkeypatch.setattr(gate, "_judge", lambda *a: judged.append(a) or judge(*a))
    ran = call(spark, "run", execution_time="2024-01-04 00:00:00")

    assert folded == 2
    [row] = _rows_of(spark, f"{db}.daily")
    assert {k: row[k] for k in ("seq", "snapshot", "run_id")} == {k: again[k] for k in ("seq", "snapshot", "run_id")}
    assert StateStore(spark).environment("prod") == held
    assert [r.updated_at for r in call(spark, "environments") if r.env == "prod"] == [applied_at]
    assert (parsed, judged) == ([], [])  # the fresh snapshot is the one kept
    assert [(r.model, r.status) for r in ran] == [(f"{db}.daily", "ok")]


def test_an_apply_of_kept_versions_with_current_snapshots_records_nothing_again(spark, isolated, tmp_path):
    db = _daily_project(spark, isolated, tmp_path)
    call(spark, "apply", project=str(tmp_path), execution_time="2024-01-03 00:00:00")
    _another_application(spark)

    call(spark, "apply", project=str(tmp_path), execution_time="2024-01-05 00:00:00")

    assert len(_rows_of(spark, f"{db}.daily")) == 1


def test_an_environments_history_folds_to_each_models_last_row_in_seq_order():
    import random

    from pyspark_incr.state.entries import entry_of, held as _held

    rng = random.Random(7)
    rows = []
    for k in range(400):  # applies, re-applies and removals of a few models in two environments, seq shuffled
        op = rng.choice(["apply", "apply", "remove"])
        rows.append({"env": rng.choice(["prod", "dev"]), "model": f"s.m{rng.randrange(12)}", "fingerprint": f"f{k}",
                     "metadata_hash": "h", "definition": f"d{k}", "source": "registry", "table_name": f"s.t{k}",
                     "start_ms": None, "op": op, "seq": rng.randrange(10**6), "at": None})
    rng.shuffle(rows)
    table = pa.Table.from_pylist(rows, schema=t.ENVIRONMENTS.schema)
    folded: dict[str, dict] = {}
    for row in sorted(table.to_pylist(), key=lambda r: r["seq"]):  # the fold itself: every row in turn, the last one wins
        folded.setdefault(row["env"], {})[row["model"]] = entry_of(row) if row["op"] == "apply" else None
    expected = {env: {m: e for m, e in models.items() if e is not None} for env, models in folded.items()}

    held = _held(table)

    assert held == expected
    assert [list(models) for models in held.values()] == [list(models) for models in expected.values()]
    assert list(held) == list(expected)
    assert _held(table, "dev") == {"dev": expected["dev"]} and _held(table, "qa") == {}
    assert _held(t.ENVIRONMENTS.schema.empty_table()) == {} == _held(t.ENVIRONMENTS.schema.empty_table(), "dev")
