"""The site `pyspark-incr docs build` writes, loaded in real headless Chromium (issue #27).

Every page loads without a console error (an uncaught exception in site.js, a missing asset), every
graph site.js draws has the nodes and edges its ``data-nodes``/``data-edges`` announce, a built
model's coverage timeline has spans, a node's link leads to its model's page, and the lineage
section lists the model's columns. One browser serves the whole module. The first tests prove the
harness on hand-written pages: that it does report a script's error and a missing file.

Needs Debian's chromium and chromium-driver (scripts/browser.sh) and the Python package selenium;
without them the module skips, naming what is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from browser import Browser, missing
from conftest import call

pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))

#: What site.js draws, per graph: the counts it announces and the elements drawn.
GRAPHS = """
return Array.from(document.querySelectorAll('svg.incr-graph')).map(svg => ({
  nodes: Number(svg.dataset.nodes), edges: Number(svg.dataset.edges),
  drawn_nodes: svg.querySelectorAll('g.node').length, drawn_edges: svg.querySelectorAll('path.edge').length,
  models: Array.from(svg.querySelectorAll('g.node')).map(g => g.dataset.model)}));
"""

#: Whatever a page draws must also take room on it: an element styled away (no box) is not drawn for a reader.
UNSEEN = """
return Array.from(document.querySelectorAll('svg.incr-graph g.node, svg.incr-coverage rect.span'))
  .filter(e => { const r = e.getBoundingClientRect(); return !(r.width > 0 && r.height > 0); })
  .map(e => e.getAttribute('data-model') || 'a coverage span');
"""


@pytest.fixture(scope="module")
def browser():
    started = Browser.start()
    yield started
    started.quit()


def graph_faults(graphs: list[dict]) -> list[str]:
    """Each graph whose drawing differs from what it announces, said in words."""
    return [f"graph {i} announces {g['nodes']} nodes and {g['edges']} edges, draws {g['drawn_nodes']} and "
            f"{g['drawn_edges']}" for i, g in enumerate(graphs)
            if (g["nodes"], g["edges"]) != (g["drawn_nodes"], g["drawn_edges"])]


# --- the harness, on hand-written pages that follow the site's DOM contract -----------------------------------------

#: A stand-in for the site's script: at DOMContentLoaded, draws each graph as a chain a -> b -> …, each node a link
#: to its page; then runs the code put in for ``%s`` (a fault a test plants).
DRAW_JS = """
document.addEventListener('DOMContentLoaded', () => {
  const ns = 'http://www.w3.org/2000/svg';
  for (const svg of document.querySelectorAll('svg.incr-graph')) {
    const names = svg.dataset.models.split(' ');
    names.forEach((name, i) => {
      const a = svg.appendChild(document.createElementNS(ns, 'a'));
      a.setAttribute('href', name + '.html');
      const g = a.appendChild(document.createElementNS(ns, 'g'));
      g.setAttribute('class', 'node');
      g.dataset.model = name;
      const r = g.appendChild(document.createElementNS(ns, 'rect'));
      Object.entries({x: 10 + 120 * i, y: 10, width: 100, height: 30}).forEach(([k, v]) => r.setAttribute(k, v));
      if (i > 0) svg.appendChild(document.createElementNS(ns, 'path')).setAttribute('class', 'edge');
    });
  }
  %s
});
"""

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>{title}</title>
<script src="site.js"></script>{extra}</head><body><h1>{title}</h1>
<svg class="incr-graph" data-nodes="2" data-edges="1" data-models="a b" width="300" height="60"></svg>
</body></html>"""


def _page(folder: Path, name: str, script: str = "", extra: str = "") -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "site.js").write_text(DRAW_JS % script, encoding="utf-8")
    for title in ("a", "b"):
        (folder / f"{title}.html").write_text(PAGE.format(title=title, extra=""), encoding="utf-8")
    page = folder / f"{name}.html"
    page.write_text(PAGE.format(title=name, extra=extra), encoding="utf-8")
    return page


def test_the_harness_sees_a_clean_page_draw_its_graph_and_follows_a_node_link(browser, tmp_path):
    page = _page(tmp_path / "clean", "index")

    assert browser.open(page) == []
    graphs = browser.js(GRAPHS)
    assert graph_faults(graphs) == [] and graphs[0]["drawn_nodes"] == 2
    assert browser.click('svg.incr-graph g.node[data-model="b"]') == []
    assert browser.url.endswith("/clean/b.html") and browser.js("return document.title") == "b"


def test_the_harness_reports_an_uncaught_error_thrown_in_site_js(browser, tmp_path):
    page = _page(tmp_path / "throws", "index", script="undefinedHelper();")

    errors = browser.open(page)

    assert [(e.level, e.source) for e in errors] == [("SEVERE", "javascript")]
    assert "site.js" in errors[0].message and "undefinedHelper is not defined" in errors[0].message


def test_the_harness_reports_a_missing_asset(browser, tmp_path):
    page = _page(tmp_path / "missing", "index", extra='<link rel="stylesheet" href="site.css">')

    errors = browser.open(page)

    assert len(errors) == 1 and "site.css" in errors[0].message and "ERR_FILE_NOT_FOUND" in errors[0].message


def test_the_harness_finds_a_graph_drawn_short_of_what_it_announces(browser, tmp_path):
    page = _page(tmp_path / "short", "index", script="document.querySelector('path.edge').remove();")

    assert browser.open(page) == []
    assert graph_faults(browser.js(GRAPHS)) == ["graph 0 announces 2 nodes and 1 edges, draws 2 and 0"]


def test_the_harness_finds_nodes_styled_out_of_sight(browser, tmp_path):
    page = _page(tmp_path / "hidden", "index", extra="<style>g.node { display: none }</style>")

    assert browser.open(page) == [] and graph_faults(browser.js(GRAPHS)) == []
    assert browser.js(UNSEEN) == ["a", "b"]


# --- the sites `pyspark-incr docs build` writes -----------------------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _docs_build(spark, project: Path, out: Path, *options: str) -> Path:
    """``pyspark-incr docs build`` of ``project`` into ``out``, through the command's own code; the index page."""
    from pyspark_incr import cli
    from pyspark_incr.cli_docs import command

    args = cli._parser().parse_args(["docs", "build", "--project", str(project), "--out", str(out), *options])
    assert command(args, lambda: spark) == 0
    return out / "index.html"


@pytest.fixture(scope="module")
def sites(spark, module_isolated, tmp_path_factory) -> dict[str, Path]:
    """The index page of two sites: shop (every kind, eleven models; no coverage, no Spark) and orders360, whose
    pages show the coverage ``incr.status`` reports after sales.daily_sales and its seed were applied on
    2025-01-22 (sales.weekly_sales left out: its two weekly jobs and audits would only add time)."""
    out = tmp_path_factory.mktemp("sites")
    for view in ("sales.daily_sales", "sales.weekly_sales", "raw.raw_orders"):  # test_examples' too: start afresh
        spark.sql(f"DROP VIEW IF EXISTS {view}")
    call(spark, "apply", project=str(EXAMPLES / "orders360"), select="+sales.daily_sales", execution_time="2025-01-22")
    return {
        "shop": _docs_build(spark, EXAMPLES / "shop", out / "shop", "--no-coverage"),
        "orders360": _docs_build(spark, EXAMPLES / "orders360", out / "orders360", "--execution-time", "2025-01-22"),
    }


def _page_faults(browser: Browser, page: Path) -> list[str]:
    """What is wrong with ``page`` in the browser: console errors, graphs drawn short, drawn elements without a box."""
    where = f"{page.parent.name}/{page.name}"
    faults = [f"{where}: console {e}" for e in browser.open(page)]
    graphs = browser.js(GRAPHS)
    faults += [f"{where}: no graph drawn"] if not graphs else [f"{where}: {f}" for f in graph_faults(graphs)]
    faults += [f"{where}: {name} drawn without a box" for name in browser.js(UNSEEN)]
    return faults


@pytest.mark.parametrize("name", ["shop", "orders360"])
def test_every_page_loads_without_a_console_error_and_draws_each_graph_as_announced(browser, sites, name):
    from pyspark_incr.project.loader import load

    index = sites[name]
    pages = [index, *sorted((index.parent / "models").glob("*.html"))]

    assert len(pages) == 1 + len(load(EXAMPLES / name).models)
    assert [fault for page in pages for fault in _page_faults(browser, page)] == []


def test_the_index_draws_every_model_of_the_project_and_its_dependencies(browser, sites):
    from pyspark_incr.project.loader import load

    assert browser.open(sites["shop"]) == []
    (dag,) = browser.js(GRAPHS)

    assert sorted(dag["models"]) == sorted(m.name for m in load(EXAMPLES / "shop").models)
    assert dag["drawn_edges"] == dag["edges"] > 0


def test_clicking_a_node_opens_that_models_page_and_its_neighbours_link_onwards(browser, sites):
    assert browser.open(sites["shop"]) == []

    assert browser.click('svg.incr-graph g.node[data-model="shop.daily_orders"]') == []
    assert browser.url.endswith("/shop/models/shop.daily_orders.html")
    assert browser.js("return document.querySelector('h1').textContent") == "shop.daily_orders"
    assert browser.click('svg.incr-graph g.node[data-model="shop.top_items"]') == []
    assert browser.url.endswith("/shop/models/shop.top_items.html")


def test_a_built_models_coverage_timeline_shows_its_built_days(browser, sites):
    assert browser.open(sites["orders360"].parent / "models" / "sales.daily_sales.html") == []
    spans = browser.js("return Array.from(document.querySelectorAll('svg.incr-coverage rect.span'))"
                       ".map(r => [r.dataset.state, r.getBoundingClientRect().width])")

    assert spans and spans[0][0] == "covered" and all(width > 0 for _, width in spans)


def test_the_lineage_section_lists_every_column_the_model_has(browser, spark, sites):
    assert browser.open(sites["orders360"].parent / "models" / "sales.daily_sales.html") == []
    listed = browser.js("return Array.from(document.querySelectorAll('section#lineage details.column summary'))"
                        ".map(s => s.textContent)")

    assert sorted(listed) == sorted(spark.table("sales.daily_sales").columns)
