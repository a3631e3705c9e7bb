"""HTML pieces of the site: escaping, JSON inside a page, the page frame, tables.

Every value from a project (names, descriptions, SQL, column names) reaches a page
through :func:`esc` or :func:`json_script`; nothing else builds markup from data.
"""

from __future__ import annotations

import html
import json
from typing import Any, Iterable


def esc(value: Any) -> str:
    """``value`` as HTML text or attribute value (quotes escaped too).

    >>> esc('</script><img onerror="x">')
    '&lt;/script&gt;&lt;img onerror=&quot;x&quot;&gt;'
    """
    return html.escape("" if value is None else str(value), quote=True)


def json_script(element_id: str, data: Any) -> str:
    """``data`` as ``<script type="application/json">``: ``<``, ``>`` and ``&`` as JSON escapes, so no text in it
    can close the element or open a comment, and ``JSON.parse`` reads the original back.

    >>> json_script("g", {"a": "</script>"})
    '<script type="application/json" id="g">{"a": "\\\\u003c/script\\\\u003e"}</script>'
    """
    text = json.dumps(data, ensure_ascii=False, sort_keys=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{esc(element_id)}">{text}</script>'


def page(title: str, body: str, *, root: str, project: str) -> str:
    """A whole page: ``root`` is the relative path from the page to the site's top (``""`` or ``"../"``)."""
    return (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n"
        '<link rel="icon" href="data:,">\n'  # no favicon request: a file:// site has none to serve
        f'<link rel="stylesheet" href="{root}assets/site.css">\n'
        f'<script src="{root}assets/site.js" defer></script>\n'
        "</head>\n<body>\n"
        f'<header><a class="home" href="{root}index.html">{esc(project)}</a>'
        '<span class="by">models by pyspark-incr</span></header>\n'
        f"<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], css: str = "") -> str:
    """A table of cells given as HTML already (escape values with :func:`esc` first)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{esc(css)}"><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>'


def link(href: str | None, text: str) -> str:
    """``text`` (escaped) linked to ``href`` (a relative path the site wrote), or plain when there is none."""
    return f'<a href="{esc(href)}">{esc(text)}</a>' if href else esc(text)


def section(element_id: str, title: str, body: str) -> str:
    """A titled ``<section>`` with an id (the anchors the pages link to)."""
    return f'<section id="{esc(element_id)}">\n<h2>{esc(title)}</h2>\n{body}\n</section>'


def graph_svg(element_id: str, data: dict, caption: str) -> str:
    """The SVG ``site.js`` draws ``data`` (:func:`pyspark_incr.site.graph.layout`) into, and the data beside it.

    ``data-nodes`` and ``data-edges`` say how many nodes and edges the drawing must have (the browser test counts).
    """
    return (
        f'<figure class="graph"><div class="graph-scroll">'
        f'<svg class="incr-graph" data-nodes="{len(data["nodes"])}" data-edges="{len(data["edges"])}" '
        f'data-graph="{esc(element_id)}" role="img" aria-label="{esc(caption)}"></svg></div>'
        f"<figcaption>{esc(caption)}</figcaption></figure>\n{json_script(element_id, data)}"
    )
