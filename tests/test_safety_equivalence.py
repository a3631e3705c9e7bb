"""smelt's per-partition equivalence contract for models the incremental safety gate admits.

For every model in ``tests/fixtures/equivalence/*.sql``, over generated data, three tables are the same:

* the model built incrementally: one ``apply`` and several ``run`` calls of one or several days each, every
  run reading its timeseries sources through the pushed-down filter the gate derived;
* the model under a second name with a ``batch_size``, built in a single ``apply``;
* the model's query rendered once for the whole range *without* pushdown, over all data, filtered to the
  range the way the writer filters its output.

Fixture files hold one query each, after header comments:

* ``-- NAME daily_totals``: the model's name (in the test's schema);
* ``-- BATCH_CLASS bounded``: the batch safety class the gate must give it (``pyspark_incr.plan.safety``);
* ``-- SAFETY_OVERRIDES allow_having = true``: optional, the model's ``safety_overrides``;
* ``-- XFAIL <reason>``: optional, a known gate/pushdown bug (the equivalence test must fail, strictly).

Other ``--`` lines are comments. ``{raw}`` in the query is the schema of the generated sources:
``events`` and ``events_ts`` (the same rows; EXTERNAL models with time column ``ds``, resp. ``ts``),
``clicks`` (EXTERNAL, time column ``ts``) and the lookup ``devices`` (not a model: read in full).
"""

from __future__ import annotations

import os
import random
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from chispa import assert_df_equality

from pyspark_incr.intervals import Interval, to_ms
from pyspark_incr.model.definition import parse_model
from pyspark_incr.model.render import output_filter, render_query
from pyspark_incr.plan import safety
from conftest import call as _call

FIXTURES = Path(__file__).parent / "fixtures" / "equivalence"
CASES = sorted(FIXTURES.glob("*.sql"))
#: One seed by default (every seed builds all models again, ~1 s per batch); more with e.g.
#: INCR_EQUIVALENCE_SEEDS=7,19,23.
SEEDS = tuple(int(s) for s in os.environ.get("INCR_EQUIVALENCE_SEEDS", "7").split(","))


def _batch_size(seed: int) -> int:
    """The batch_size of the seed's second model (built in one apply): several days per job, or one."""
    return (4, 1, 2)[SEEDS.index(seed) % 3]


START = "2024-01-03"
#: Generated data spans days before START (what lookbacks read) and after the last run (what FOLLOWING
#: frames and forward joins could read, and must not).
DATA_DAYS = (date(2023, 12, 31), date(2024, 1, 10))
#: The apply builds two days, the runs then one day and two days (each step costs ~1 s per model).
APPLY_AT = "2024-01-05 00:00:00"
RUNS = ("2024-01-06 00:00:00", "2024-01-08 00:00:00")
END = "2024-01-08"  # the last run covers [START, END)
EXTERNALS = {"events": "ds", "events_ts": "ts", "clicks": "ts"}
DEVICES = [(1, "phone-a"), (2, "phone-b"), (3, "tablet"), (4, "laptop")]  # device 5 has no row: inner joins drop it


def _parse(path: Path) -> dict:
    case: dict = {"name": None, "batch_class": None, "overrides": None, "xfail": None, "query": []}
    for line in path.read_text().splitlines():
        words = line.split()
        if words[:1] == ["--"] and len(words) > 2 and words[1] in ("NAME", "BATCH_CLASS", "SAFETY_OVERRIDES", "XFAIL"):
            case[words[1].lower().replace("safety_", "")] = " ".join(words[2:])
        elif not line.lstrip().startswith("--"):
            case["query"].append(line)
    case["query"] = "\n".join(case["query"]).strip()
    assert case["name"] and case["batch_class"], f"{path.name}: missing NAME or BATCH_CLASS header"
    return case


def _definition(case: dict, name: str, raw: str, batch_size: int | None = None) -> str:
    kind = "INCREMENTAL_BY_TIME_RANGE (time_column ds" + (f", batch_size {batch_size})" if batch_size else ")")
    overrides = f", safety_overrides ({case['overrides']})" if case["overrides"] else ""
    return (f"MODEL (name {name}, kind {kind}, start '{START}', cron '@daily'{overrides});\n"
            + case["query"].replace("{raw}", raw))


def _externals(raw: str) -> dict[str, str]:
    return {f"{raw}.{table}": f"MODEL (name {raw}.{table}, kind EXTERNAL (time_column {column}))"
            for table, column in EXTERNALS.items()}


def _marked(path: Path):
    reason = _parse(path)["xfail"]
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(path, id=path.stem, marks=marks)


def _timestamps(rng: random.Random, day: date, n: int) -> list[datetime]:
    """``n`` times on ``day``, some on its first and last second (where slices and lookbacks meet)."""
    midnight = datetime(day.year, day.month, day.day)
    seconds = [rng.choice((0, 86_399, rng.randint(0, 86_399), rng.randint(0, 86_399))) for _ in range(n)]
    return [midnight + timedelta(seconds=s) for s in seconds]


def _generate(spark, raw: str, seed: int) -> None:
    rng = random.Random(seed)
    first, last = DATA_DAYS
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    events, clicks = [], []
    for day in days:
        for ts in _timestamps(rng, day, rng.randint(0, 24)):  # some days have no events at all
            events.append((day, ts, rng.randint(1, 6), rng.randint(1, 5), rng.randint(-5, 50)))
        for ts in _timestamps(rng, day, rng.randint(0, 12)):
            clicks.append((day, ts, rng.randint(1, 6), rng.choice(["/", "/cart", "/pay"])))
    events += rng.sample(events, 10)  # exact duplicates
    # a click shortly after some events, so the cross-source join finds matches (also across midnight)
    for _, ts, user, _, _ in rng.sample(events, 40):
        at = ts + timedelta(seconds=rng.randint(0, 3_700))
        clicks.append((at.date(), at, user, "/after"))

    spark.sql(f"CREATE DATABASE IF NOT EXISTS {raw}")
    frames = {
        "events": spark.createDataFrame(events, "ds DATE, ts TIMESTAMP, user_id INT, device_id INT, amount INT"),
        "clicks": spark.createDataFrame(clicks, "ds DATE, ts TIMESTAMP, user_id INT, url STRING"),
    }
    frames["events_ts"] = frames["events"]
    # only events is partitioned (by ds, its time column): partitions make every write slow in the metastore
    frames["events"].write.mode("overwrite").partitionBy("ds").saveAsTable(f"{raw}.events")
    for table in ("events_ts", "clicks"):
        frames[table].write.mode("overwrite").saveAsTable(f"{raw}.{table}")
    spark.createDataFrame(DEVICES, "device_id INT, name STRING").write.mode("overwrite").saveAsTable(f"{raw}.devices")


@pytest.fixture(scope="module", params=SEEDS, ids=lambda s: f"seed{s}")
def world(spark, module_isolated, request):
    """One seed's generated sources (declared as EXTERNAL models) and every fixture model built on them twice.

    Models are built together (one call per step, not per model: each call has a fixed cost): into schema
    ``incremental`` by an apply and several runs, into ``batched`` with a batch_size by one apply. XFAIL
    cases are built by calls of their own, so that a gate refusing them one day cannot stop the others.
    ``results`` holds each model's result rows of every call, ``errors`` what a call raised, by model.
    """
    seed = request.param
    raw = f"{module_isolated}_raw{seed}"
    _generate(spark, raw, seed)
    for definition in _externals(raw).values():
        _call(spark, "create_model", definition=definition)

    world = {"raw": raw, "schemas": {}, "results": {}, "errors": {}, "batch_size": _batch_size(seed)}
    for group, cases in (("", [c for c in map(_parse, CASES) if not c["xfail"]]),
                         ("x", [c for c in map(_parse, CASES) if c["xfail"]])):
        schemas = {"incremental": f"{module_isolated}_{group}inc{seed}",
                   "batched": f"{module_isolated}_{group}bat{seed}"}
        for case in cases:
            world["schemas"][case["name"]] = schemas
            for schema, size in (("incremental", None), ("batched", _batch_size(seed))):
                name = f"{schemas[schema]}.{case['name']}"
                try:
                    _call(spark, "create_model", definition=_definition(case, name, raw, size))
                except Exception as e:  # noqa: BLE001 - reported by the model's test
                    world["errors"][name] = e
        steps = [("apply", APPLY_AT, "incremental"), *(("run", at, "incremental") for at in RUNS),
                 ("apply", RUNS[-1], "batched")]
        for procedure, at, schema in steps if cases else ():
            try:
                rows = _call(spark, procedure, execution_time=at, select=f"{schemas[schema]}.*", concurrency=2)
            except Exception as e:  # noqa: BLE001 - reported by the tests of the models it concerns
                for c in cases:
                    world["errors"].setdefault(f"{schemas[schema]}.{c['name']}", e)
                continue
            for row in rows:
                world["results"].setdefault(row.model, []).append(row)
    return world


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_fixture_is_admitted_with_its_batch_class_and_every_source_pushed_down(path: Path):
    case = _parse(path)
    known = {name: parse_model(text) for name, text in _externals("raw").items()}
    model = parse_model(_definition(case, "m.model", "raw"))
    sources = safety.timeseries_sources(model, known)

    judgement = safety.judge(model, sources)

    assert not judgement.refused, judgement.refusal
    assert judgement.batch_class == case["batch_class"]
    assert sources and {p.source.name for p in judgement.pushdown} == {s.name for s in sources}


def test_fixtures_cover_enough_models():
    assert len(CASES) >= 12
    assert len({_parse(p)["name"] for p in CASES}) == len(CASES)


def _reference(spark, definition: str):
    """The model's query over all data, rendered once for [START, END) without any pushdown, output-filtered."""
    model = parse_model(definition)
    whole = Interval(to_ms(START), to_ms(END))
    query = render_query(model.query, whole, to_ms(RUNS[-1]), where=f"reference of {model.name}")
    return spark.sql(output_filter(query, model.kind.time_column, whole, "date", None).sql("spark"))


def _jobs(batch_size: int) -> tuple[list[int], list[int]]:
    """Days per job of the incremental models (one job per call: 2 days, 1, 2) and of the batched ones."""
    days = (to_ms(END) - to_ms(START)) // 86_400_000
    return [2, 1, 2], [min(batch_size, days - done) for done in range(0, days, batch_size)]


@pytest.mark.parametrize("path", [_marked(p) for p in CASES])
def test_incremental_runs_and_batches_build_what_one_unpushed_query_computes(spark, world, path: Path):
    case = _parse(path)
    names = [f"{world['schemas'][case['name']][schema]}.{case['name']}" for schema in ("incremental", "batched")]
    reference = _reference(spark, _definition(case, names[0], world["raw"]))

    for name, jobs_expected in zip(names, _jobs(world["batch_size"])):
        if name in world["errors"]:
            raise world["errors"][name]
        rows = world["results"].get(name, [])
        assert rows and all(r.status == "ok" for r in rows), [(r.action, r.status, r.message) for r in rows]
        # every day built exactly once, in the jobs any admitted model gets (safety_overrides change none of them)
        assert sorted(r.intervals for r in rows if r.action == "build") == sorted(jobs_expected)
        built = spark.sql(f"SELECT * FROM {name}")
        # the table's partition column comes last
        assert_df_equality(built, reference.select(*built.columns), ignore_row_order=True, ignore_nullable=True)
    assert reference.count() > 0
