"""Writing the site: ``index.html``, ``models/<model>.html`` per model, and ``assets/`` (the one script and style).

No Spark here: the coverage comes in as :class:`~pyspark_incr.coverage.Coverage`
records (``pyspark-incr docs build`` reads them from ``incr.status``), and the column
lineage is traced from the project's files. The site is fully offline: no CDN, no
external fonts or scripts, every link relative, so it opens from a file system or any
static host.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from pyspark_incr.coverage import Coverage
from pyspark_incr.errors import ArgumentError, IncrError
from pyspark_incr.model.definition import Model
from pyspark_incr.project import lineage
from pyspark_incr.project.dag import parents, topological
from pyspark_incr.project.loader import Project
from pyspark_incr.site.pages import ColumnInfo, SiteData, index_page, model_page

ASSETS = Path(__file__).resolve().parent / "assets"
#: Left in every site written, so rebuilding into the same directory may replace its pages (and nothing else may).
MARKER = ".pyspark-incr-site"
_SAFE = re.compile(r"[a-z0-9_][a-z0-9_.-]{0,99}")


@dataclass(frozen=True)
class Written:
    """Where a site was written and how many pages it has."""

    out: Path
    pages: int
    models: int


def build_site(project: Project, out: Path | str, *, coverage: Iterable[Coverage] | None = None,
               until_ms: int | None = None, env: str = "prod") -> Written:
    """Write the site of ``project`` into ``out``; ``coverage`` None means not read (the pages say so)."""
    topological(project.models)  # a cycle fails here, naming its models, before anything is written
    names = [m.name for m in project.models]
    files = {name: file_name(name) for name in names}
    columns = columns_of_project(project)
    data = SiteData(project=project, files=files, parents={m.name: parents(m, names) for m in project.models},
                    coverage=None if coverage is None else {c.model: c for c in coverage},
                    until_ms=until_ms, env=env, columns=columns)
    root = _prepare(Path(out))
    for asset in ("site.js", "site.css"):
        shutil.copyfile(ASSETS / asset, root / "assets" / asset)
    (root / "index.html").write_text(index_page(data), encoding="utf-8")
    for model in project.models:
        (root / "models" / files[model.name]).write_text(model_page(data, model), encoding="utf-8")
    return Written(root, 1 + len(project.models), len(project.models))


def file_name(name: str) -> str:
    """The page's file name of model ``name``: the name itself when it is a plain one, else a slug and a hash, so
    no name (quotes, slashes, ``..``, upper case on a case-blind file system) escapes ``models/`` or collides.

    >>> file_name("shop.daily_orders")
    'shop.daily_orders.html'
    >>> file_name("../etc/passwd")[:-16], file_name("Shop.Orders") != file_name("shop.orders")
    ('etc_passwd', True)
    """
    if _SAFE.fullmatch(name) and not name.endswith("."):
        return f"{name}.html"
    slug = re.sub(r"[^a-z0-9_.-]+", "_", name.lower()).strip("._-")[:80] or "model"
    return f"{slug}-{hashlib.sha1(name.encode()).hexdigest()[:10]}.html"


def check_out(out: Path | str) -> None:
    """Raise ``ArgumentError`` unless ``out`` may take a site: new, empty, or a site built before."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ArgumentError(f"pyspark-incr docs build: --out {out} is a file; name a directory for the site")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise ArgumentError(f"pyspark-incr docs build: --out {out} holds files that are not a site pyspark-incr "
                            "built; name a new or empty directory")


def _prepare(out: Path) -> Path:
    """``out`` ready for a site: new or empty, or a site built before (whose pages are replaced)."""
    check_out(out)
    (out / "models").mkdir(parents=True, exist_ok=True)
    (out / "assets").mkdir(exist_ok=True)
    for old in (out / "models").glob("*.html"):  # pages of models since removed or renamed
        old.unlink()
    (out / MARKER).write_text("written by pyspark-incr docs build; rebuilding replaces this directory's pages\n")
    return out.resolve()


def columns_of_project(project: Project) -> dict[str, list[ColumnInfo]]:
    """Each model's columns with their lineage."""
    return {m.name: _model_columns(project, m) for m in project.models}


def _model_columns(project: Project, model: Model) -> list[ColumnInfo]:
    types = {**cast_types(model), **{name.lower(): kind for name, kind in model.columns}}
    described = {name.lower(): text for name, text in model.column_descriptions}
    note = None
    names: list[str] = []
    try:
        names = list(lineage.columns_of(project, model.name))
    except (IncrError, SqlglotError) as e:
        note = f"lineage not traced: {e}"
    names = names or [n for n, _ in model.columns] or selected_columns(model)
    found = []
    for name in names:
        steps, why = (), note
        if note is None:
            try:
                steps = tuple(lineage.column_lineage(project, model.name, name))
            except (IncrError, SqlglotError) as e:
                why = f"lineage not traced: {e}"
        found.append(ColumnInfo(name, types.get(name.lower()), described.get(name.lower()), steps, why))
    return found


def cast_types(model: Model) -> dict[str, str]:
    """The types of the columns the query casts as it selects them (``CAST(x AS INT) AS n``), by lowercased name.

    >>> from pyspark_incr.model.definition import parse_model
    >>> cast_types(parse_model("MODEL (name s.a, kind FULL); SELECT CAST(x AS INT) AS n, y FROM s.b"))
    {'n': 'INT'}
    """
    query = _parsed(model)
    if not isinstance(query, exp.Select):
        return {}
    return {e.alias_or_name.lower(): e.unalias().to.sql("spark") for e in query.selects
            if isinstance(e.unalias(), exp.Cast) and e.alias_or_name}


def _parsed(model: Model) -> exp.Expression | None:
    if not model.query:
        return None
    try:
        return sqlglot.parse_one(model.query, read="spark")
    except SqlglotError:
        return None


def selected_columns(model: Model) -> list[str]:
    """The names the model's query selects (without ``*``), for when neither lineage nor ``columns`` says.

    >>> from pyspark_incr.model.definition import parse_model
    >>> selected_columns(parse_model("MODEL (name s.a, kind FULL); SELECT x, y + 1 AS z, * FROM s.b"))
    ['x', 'z']
    """
    query = _parsed(model)
    if not isinstance(query, exp.Query):
        return []
    return [name for name in query.named_selects if name and name != "*"]
