"""`pyspark-incr docs build`: the static model site (pyspark_incr/site), read back as a browser would parse it.

Most tests build a project's site without Spark and parse the pages with html.parser: a page
per model, every link lands on a file (and anchor) that exists, values from the project are
text and never markup, the graph data matches the project's DAG. One module-scoped project is
applied through the session's Spark to check the coverage timelines against `incr.status`.
Drawing in a real browser is tests/test_site_browser.py's.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from conftest import call

from pyspark_incr import cli
from pyspark_incr.coverage import coverages
from pyspark_incr.coverage_plot import COLOURS
from pyspark_incr.errors import ArgumentError, ModelDefinitionError
from pyspark_incr.intervals.times import to_ms
from pyspark_incr.project.dag import parents
from pyspark_incr.project.loader import load
from pyspark_incr.site import graph
from pyspark_incr.site.build import MARKER, build_site, file_name

SHOP = Path(__file__).resolve().parents[1] / "examples" / "shop"
HOSTILE = '</script><img src=x onerror="alert(1)"><!--'


@dataclass
class Parsed:
    """What a page holds: its elements (tag, attributes) in order, the text of each JSON script, its text."""

    elements: list[tuple[str, dict]] = field(default_factory=list)
    scripts: dict[str, str] = field(default_factory=dict)
    text: str = ""

    def all(self, tag: str, **attrs: str) -> list[dict]:
        return [a for t, a in self.elements if t == tag and all(a.get(k.rstrip("_")) == v for k, v in attrs.items())]

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.elements if "id" in a}


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Parsed()
        self._script: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        found = {k: v or "" for k, v in attrs}
        self.page.elements.append((tag, found))
        if tag == "script" and found.get("type") == "application/json":
            self._script = found["id"]
            self.page.scripts[self._script] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.page.scripts[self._script] += data
        else:
            self._text.append(data)

    def close(self) -> None:
        super().close()
        self.page.text = "".join(self._text)


def parse(path: Path) -> Parsed:
    reader = _Reader()
    reader.feed(path.read_text(encoding="utf-8"))
    reader.close()
    return reader.page


def pages(site: Path) -> dict[Path, Parsed]:
    return {p: parse(p) for p in sorted(site.rglob("*.html"))}


def graph_data(page: Parsed, svg: dict) -> dict:
    return json.loads(page.scripts[svg["data-graph"]])


def write_project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def shop_site(tmp_path_factory) -> tuple[Path, dict[Path, Parsed]]:
    site = tmp_path_factory.mktemp("shop_site") / "site"
    build_site(load(SHOP), site)
    return site, pages(site)


# --- the pages and their links ----------------------------------------------------------------------------------


def test_site_has_an_index_and_one_page_per_model_named_after_it(shop_site):
    site, found = shop_site
    project = load(SHOP)

    assert sorted(p.name for p in (site / "models").iterdir()) == sorted(f"{m.name}.html" for m in project.models)
    assert (site / "index.html") in found and (site / MARKER).is_file()
    for model in project.models:
        page = found[site / "models" / f"{model.name}.html"]
        assert model.name in page.text and model.kind.name in page.text


def test_every_link_and_asset_of_every_page_resolves_to_a_file_and_anchor_that_exist(shop_site):
    site, found = shop_site
    checked = 0
    for path, page in found.items():
        for tag, attrs in page.elements:
            target = attrs.get("href") or (attrs.get("src") if tag == "script" else None)
            if target is None:
                continue
            if attrs.get("rel") == "icon":
                assert target == "data:,", "the one inline URL: no favicon request"
                continue
            parts = urlsplit(target)
            assert not parts.scheme and not parts.netloc, f"{path.name}: {target} leaves the site (it must be offline)"
            landing = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            assert landing.is_file() and landing.is_relative_to(site.resolve()), \
                f"{path.name} links to missing {target}"
            if parts.fragment:
                assert parts.fragment in found[landing].ids(), f"{path.name}: no #{parts.fragment} in {landing.name}"
            checked += 1
    assert checked > 100
    assert {p.name for p in (site / "assets").iterdir()} == {"site.js", "site.css"}


def test_index_lists_every_model_with_kind_cron_and_owner(shop_site):
    site, found = shop_site
    index = found[site / "index.html"]
    rows = {a["href"] for a in index.all("a") if a.get("href", "").startswith("models/")}

    assert rows == {f"models/{m.name}.html" for m in load(SHOP).models}
    assert "INCREMENTAL_BY_TIME_RANGE" in index.text and "@daily" in index.text and "shop-data" in index.text
    assert "coverage not read" in index.text


def test_model_page_shows_pretty_sql_with_macros_as_written_and_column_descriptions(shop_site):
    site, found = shop_site
    page = found[site / "models" / "shop.daily_orders.html"]
    html = (site / "models" / "shop.daily_orders.html").read_text()
    sql = html.split('<pre class="sql"><code>')[1].split("</code>")[0]

    assert "SELECT\n  CAST(order_date AS DATE) AS order_date," in sql
    assert "BETWEEN @start_ds AND @end_ds" in sql and "${" not in sql
    assert "Sum of order amounts" in page.text and "batch_size" in page.text
    # a type the query casts to, and one the model declares (a seed's columns)
    assert '<a href="#lineage-order_date">order_date</a></td><td><code>DATE</code>' in html
    seed = (site / "models" / "shop.menu_items.html").read_text()
    assert '<a href="#lineage-price">price</a></td><td><code>DOUBLE</code>' in seed
    assert {"properties", "sql", "columns", "coverage", "graph", "lineage"} <= page.ids()


# --- graphs -----------------------------------------------------------------------------------------------------


def test_dag_data_holds_every_model_and_every_dependency_and_matches_the_svg_counts(shop_site):
    site, found = shop_site
    index = found[site / "index.html"]
    [svg] = index.all("svg", class_="incr-graph")
    data = graph_data(index, svg)
    project = load(SHOP)
    names = [m.name for m in project.models]
    drawn = {(data["nodes"][a]["name"], data["nodes"][b]["name"]) for a, b in data["edges"]}

    assert (int(svg["data-nodes"]), int(svg["data-edges"])) == (len(data["nodes"]), len(data["edges"]))
    assert sorted(n["name"] for n in data["nodes"]) == sorted(names)
    assert drawn == {(p, m.name) for m in project.models for p in parents(m, names)}
    x = {n["name"]: n["x"] for n in data["nodes"]}
    assert all(x[p] < x[c] for p, c in drawn), "parents are drawn left of the models that read them"


def test_every_pages_graph_data_is_json_that_matches_its_svg(shop_site):
    _, found = shop_site
    for path, page in found.items():
        [svg] = page.all("svg", class_="incr-graph")
        data = graph_data(page, svg)
        assert (int(svg["data-nodes"]), int(svg["data-edges"])) == (len(data["nodes"]), len(data["edges"])), path.name
        if path.parent.name == "models":
            assert [n["name"] for n in data["nodes"] if n["focus"]] == [path.stem]


def test_model_graph_shows_two_steps_up_and_down_and_links_the_neighbours(shop_site):
    site, found = shop_site
    page = found[site / "models" / "shop.daily_orders.html"]
    data = graph_data(page, page.all("svg", class_="incr-graph")[0])

    assert {n["name"] for n in data["nodes"]} == {"shop.daily_orders", "shop.orders_enriched", "shop.menu_items",
                                                  "shop_raw.orders", "shop.top_items"}
    assert {n["href"] for n in data["nodes"] if not n["focus"]} == {
        "shop.orders_enriched.html", "shop.menu_items.html", "shop_raw.orders.html", "shop.top_items.html"}


def test_a_model_with_fifty_parents_lays_them_out_in_one_column_without_overlap():
    names = [f"s.p{i:02d}" for i in range(50)]
    data = graph.layout([*names, "s.child"], [(p, "s.child") for p in names], focus="s.child")
    boxes = {(n["x"], n["y"]) for n in data["nodes"]}

    assert (len(data["nodes"]), len(data["edges"])) == (51, 50) and len(boxes) == 51
    assert {n["layer"] for n in data["nodes"] if n["name"] != "s.child"} == {0}
    assert max(n["y"] for n in data["nodes"]) + graph.NODE_H <= data["height"]


def test_a_few_hundred_models_lay_out_in_well_under_a_second():
    # a wide, deep project: 300 models in 10 layers, each reading 3 models of the layer before
    names = [f"s.m{layer}_{i}" for layer in range(10) for i in range(30)]
    edges = [(f"s.m{layer - 1}_{(i * 7 + k) % 30}", f"s.m{layer}_{i}") for layer in range(1, 10)
             for i in range(30) for k in range(3)]
    started = time.perf_counter()
    data = graph.layout(names, edges)

    assert time.perf_counter() - started < 1.0
    assert len({(n["x"], n["y"]) for n in data["nodes"]}) == 300
    assert len(data["edges"]) == len(set(edges))


def test_a_cycle_is_refused_naming_its_models():
    with pytest.raises(ModelDefinitionError, match=r"cycle: .*s\.a"):
        graph.layout(["s.a", "s.b"], [("s.a", "s.b"), ("s.b", "s.a")])


def test_an_empty_project_gets_an_index_with_an_empty_graph(tmp_path):
    root = write_project(tmp_path / "empty", {"models/README.txt": "no models yet\n"})
    written = build_site(load(root), tmp_path / "site")
    index = parse(tmp_path / "site" / "index.html")
    [svg] = index.all("svg", class_="incr-graph")

    assert written.pages == 1 and (svg["data-nodes"], svg["data-edges"]) == ("0", "0")
    assert graph_data(index, svg)["nodes"] == [] and "no models yet" in index.text


# --- escaping and file names ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory) -> tuple[Path, dict[Path, Parsed]]:
    root = write_project(tmp_path_factory.mktemp("hostile"), {
        "models/a.sql": f"MODEL (name s.a, kind FULL, description '{HOSTILE}', "
                        f"column_descriptions (x = '{HOSTILE}'));\nSELECT 1 AS x, '{HOSTILE}' AS y",
        "models/b.sql": "MODEL (name `odd name`.`x y-z`, kind VIEW);\nSELECT x FROM s.a",
    })
    site = root / "site"
    build_site(load(root), site)
    return site, pages(site)


def test_hostile_descriptions_and_sql_are_text_on_the_page_never_markup(hostile_site):
    site, found = hostile_site
    for path, page in found.items():
        assert not page.all("img"), f"{path.name}: a description became an <img> element"
        assert all(t == "script" and (a.get("type") == "application/json" or a.get("src")) for t, a in page.elements
                   if t == "script"), f"{path.name}: an unexpected script element"
    model_a = found[site / "models" / "s.a.html"]
    assert model_a.text.count(HOSTILE) >= 3  # description, column description, the SQL literal


def test_embedded_json_survives_a_hostile_name_and_reads_back_the_original(hostile_site):
    site, found = hostile_site
    raw = (site / "index.html").read_text()
    data = json.loads(found[site / "index.html"].scripts["dag-data"])

    assert "</script>" not in raw.split('id="dag-data">', 1)[1].split("</script>", 1)[0]
    assert {n["name"] for n in data["nodes"]} == {"s.a", "odd name.x y-z"}


def test_odd_model_names_get_safe_distinct_file_names_inside_models(hostile_site):
    site, _ = hostile_site
    odd = file_name("odd name.x y-z")

    assert re.fullmatch(r"[a-z0-9_.-]+\.html", odd) and (site / "models" / odd).is_file()
    for name in ("../../etc/passwd", "..", ".hidden", "a/b", "A.B", "a.b" + "x" * 300, "CON"):
        made = file_name(name)
        assert re.fullmatch(r"[a-z0-9_][a-z0-9_.-]*\.html", made) and len(made) <= 120, name
    assert file_name("A.B") != file_name("a.b") and file_name("a b.c") != file_name("a_b.c")


def test_rebuilding_replaces_the_pages_of_removed_models_and_keeps_to_its_own_directory(tmp_path):
    root = write_project(tmp_path / "p", {"models/a.sql": "MODEL (name s.a, kind FULL);\nSELECT 1 AS x",
                                          "models/b.sql": "MODEL (name s.b, kind FULL);\nSELECT 2 AS x"})
    site = tmp_path / "site"
    build_site(load(root), site)
    (root / "models" / "b.sql").unlink()
    build_site(load(root), site)

    assert sorted(p.name for p in (site / "models").iterdir()) == ["s.a.html"]
    foreign = tmp_path / "mine"
    (foreign / "notes.txt").parent.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(ArgumentError, match="not a site pyspark-incr built; name a new or empty directory"):
        build_site(load(root), foreign)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]


# --- column lineage ---------------------------------------------------------------------------------------------


def test_lineage_section_traces_each_column_back_through_the_models_it_reads(shop_site):
    site, found = shop_site
    page = found[site / "models" / "shop.daily_orders.html"]
    html = (site / "models" / "shop.daily_orders.html").read_text()
    lineage = html.split('<section id="lineage">', 1)[1].split("</section>", 1)[0]
    revenue = lineage.split('id="lineage-revenue"', 1)[1].split("</details>", 1)[0]

    assert {"lineage-order_date", "lineage-item_name", "lineage-orders", "lineage-revenue"} <= page.ids()
    assert 'href="shop.orders_enriched.html">shop.orders_enriched</a>.<b>amount</b>' in revenue
    assert "shop_raw.orders" in revenue and 'data-depth="2"' in revenue


# --- coverage ---------------------------------------------------------------------------------------------------


def _rows(model: str, *spans: tuple[str, str, str, int], kind: str = "INCREMENTAL_BY_TIME_RANGE") -> list[dict]:
    return [{"model": model, "kind": kind, "state": s, "start": a, "end": b, "intervals": n, "table": model}
            for s, a, b, n in spans]


def test_timelines_draw_one_coloured_span_per_status_row_and_the_pending_stretch(tmp_path):
    rows = [*_rows("shop.daily_orders", ("covered", "2024-01-01", "2024-01-05", 4),
                   ("missing", "2024-01-05", "2024-01-06", 1), ("covered", "2024-01-06", "2024-01-08", 2)),
            {"model": "shop.top_items", "kind": "VIEW", "state": "view", "start": None, "end": None,
             "intervals": 0, "table": "shop.top_items"}]
    build_site(load(SHOP), tmp_path / "site", coverage=coverages(rows), until_ms=to_ms("2024-01-10"), env="dev")
    daily = parse(tmp_path / "site" / "models" / "shop.daily_orders.html")
    [timeline] = daily.all("svg", class_="incr-coverage")
    spans = daily.all("rect", class_="span")

    assert [s["data-state"] for s in spans] == ["covered", "missing", "covered", "pending"]
    assert int(timeline["data-spans"]) == len(spans)
    assert [s["fill"] for s in spans] == [COLOURS[s["data-state"]] for s in spans]
    assert "6/7 built, 1 gap" in daily.text
    assert float(spans[1]["width"]) >= 1.0 and 0 < float(spans[1]["x"]) < 600
    view = parse(tmp_path / "site" / "models" / "shop.top_items.html")
    assert not view.all("rect", class_="span") and "view: no intervals" in view.text
    assert "not in environment dev" in parse(tmp_path / "site" / "models" / "shop.order_log.html").text


# --- the command ------------------------------------------------------------------------------------------------


def test_docs_build_without_coverage_writes_the_site_and_starts_no_spark(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "_session", lambda args: pytest.fail("--no-coverage must not start Spark"))
    out = tmp_path / "out"

    code = cli.main(["docs", "build", "--project", str(SHOP), "--out", str(out), "--no-coverage"])

    assert code == 0 and (out / "index.html").is_file()
    printed = capsys.readouterr().out
    assert f"Wrote 12 pages (11 models and the project page) to {out}" in printed


@pytest.mark.parametrize("argv", [["--home", "H", "docs", "build"], ["docs", "build", "--home", "H"]])
def test_docs_build_takes_the_home_before_or_after_its_verb(argv):
    args = cli._parser().parse_args(argv)

    assert args.home == Path("H") and args.out == Path("incr-site") and args.env == "prod"


def test_docs_build_with_a_malformed_execution_time_fails_before_spark(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "_session", lambda args: pytest.fail("Spark started for a bad flag"))

    code = cli.main(["docs", "build", "--project", str(SHOP), "--out", str(tmp_path / "o"),
                     "--execution-time", "yesterday-ish"])

    assert code == 1 and "--execution-time" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_docs_build_into_a_directory_of_other_files_fails_before_spark(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "_session", lambda args: pytest.fail("Spark started for a taken --out"))
    (tmp_path / "notes.txt").write_text("mine")

    code = cli.main(["docs", "build", "--project", str(SHOP), "--out", str(tmp_path)])

    assert code == 1 and "not a site pyspark-incr built" in capsys.readouterr().err


@pytest.fixture(scope="module")
def applied(spark, module_isolated, tmp_path_factory):
    """A two-model project applied up to 2024-01-02 of five days: daily counts, and a view of them."""
    prefix = module_isolated
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {prefix}_raw")
    spark.sql(f"DROP TABLE IF EXISTS {prefix}_raw.events")
    spark.sql(f"CREATE TABLE {prefix}_raw.events USING parquet AS SELECT id, date_add(DATE'2024-01-01', "
              "CAST(id % 6 AS INT)) AS ds FROM range(60)")
    root = write_project(tmp_path_factory.mktemp("applied"), {
        "models/daily.sql": f"MODEL (name {prefix}.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds), "
                            f"start '2024-01-01', cron '@daily');\n"
                            f"SELECT ds, COUNT(*) AS n FROM {prefix}_raw.events "
                            "WHERE ds BETWEEN @start_ds AND @end_ds GROUP BY ds",
        "models/recent.sql": f"MODEL (name {prefix}.recent, kind VIEW);\nSELECT * FROM {prefix}.daily",
    })
    call(spark, "apply", project=str(root), end="2024-01-02", execution_time="2024-01-06 00:00:00")
    return prefix, root


def test_site_of_an_applied_project_draws_the_coverage_incr_status_reports(spark, applied, tmp_path, capsys):
    from pyspark_incr.cli_docs import command
    from pyspark_incr.cli_status import status_rows

    prefix, root = applied
    args = cli._parser().parse_args(["docs", "build", "--project", str(root), "--out", str(tmp_path / "site"),
                                     "--execution-time", "2024-01-06 00:00:00"])

    assert command(args, lambda: spark) == 0
    rows = [r for r in status_rows(spark, f"{prefix}.daily", None, to_ms("2024-01-06")) if r["start"]]
    page = parse(tmp_path / "site" / "models" / f"{prefix}.daily.html")
    spans = page.all("rect", class_="span")
    assert [s["data-state"] for s in spans] == [r["state"] for r in rows]
    assert [r["state"] for r in rows] == ["covered", "missing"]
    assert "2/5 built, 1 gap" in page.text
    assert "view: no intervals" in parse(tmp_path / "site" / "models" / f"{prefix}.recent.html").text
    assert "Coverage of environment prod at 2024-01-06 00:00 UTC" in parse(tmp_path / "site" / "index.html").text


def test_the_wheel_ships_the_sites_script_and_style():
    builder = pytest.importorskip("hatchling.builders.wheel").WheelBuilder(str(SHOP.parents[1]))
    shipped = {f.distribution_path for f in builder.recurse_included_files()}

    assert {"pyspark_incr/site/assets/site.js", "pyspark_incr/site/assets/site.css"} <= shipped
