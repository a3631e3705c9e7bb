"""``pyspark-incr validate [DIR]``: every problem of a project, offline, each with its file and line.

It checks what needs no Spark: config.yaml, external_models.yaml, every model and audit
file, the seed CSVs (they read, they hold the declared columns), the audits the models
call, the dependency graph (no cycle) and the incremental safety check. What needs the
catalog (the tables the queries read, Spark's analysis of the queries, seed value types)
is left to ``incr.plan`` and the summary says so. No JVM starts: validating in an editor's
save hook or a CI step takes a second, not a Spark start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from pyspark_incr.errors import IncrError, ModelDefinitionError
from pyspark_incr.model import audits
from pyspark_incr.model.definition import Model
from pyspark_incr.plan import safety
from pyspark_incr.project.dag import topological
from pyspark_incr.project.loader import Project, load, seed_path
from pyspark_incr.writers import can_build, writer_for
from pyspark_incr.writers.seed import read_seed

_LINE = re.compile(r"\bline (\d+)\b")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a project: the file at fault, the line the message names first, the message."""

    file: Path
    line: int | None
    message: str

    @classmethod
    def of(cls, file: Path, error: Exception | str) -> "Problem":
        text = str(error)
        found = _LINE.search(text)
        return cls(Path(file), int(found[1]) if found else None, text)

    def describe(self) -> str:
        """``file:line: message``, the file relative to the working directory when it is below it."""
        try:
            shown = self.file.resolve().relative_to(Path.cwd())
        except ValueError:
            shown = self.file
        message = self.message
        if message.startswith(f"{self.file}: "):  # config and YAML errors start with their file already
            message = message[len(f"{self.file}: "):]
        return f"{shown}{f':{self.line}' if self.line else ''}: {message}"


def problems(root: Path) -> tuple[Project | None, list[Problem]]:
    """The project as far as it loads, and every problem found in it (none: it is valid offline)."""
    found: list[Problem] = []
    try:
        project = load(root, report=lambda path, error: found.append(Problem.of(path, error)))
    except IncrError as e:  # no models/ folder: nothing else to look at
        return None, [Problem.of(root, e)]
    models = list(project.models)
    for model in models:
        found += _model_problems(model)
    found += _cycle(models, root)
    found += _refusals(models)
    return project, found


def _model_problems(model: Model) -> list[Problem]:
    """What the planner would refuse in one model before reading any table: seed file, audit calls, layout."""
    found = []
    file = Path(model.source)
    if model.kind.name == "SEED" and model.content_hash:  # an unreadable CSV is reported by the loader
        found += _seed(model)
    known = {a.name for a in model.custom_audits} | set(audits.BUILTINS)
    for call in model.audits:
        if call[0] in known:  # an unknown one is reported by the loader
            try:
                audits.parse_args(call, f"model {model.name} ({model.located})", model.custom_audits)
            except IncrError as e:
                found.append(Problem.of(file, e))
    if model.kind.builds_object and can_build(model):
        try:
            writer_for(model).check(model)
        except IncrError as e:
            found.append(Problem.of(file, e))
    return found


def _seed(model: Model) -> list[Problem]:
    """The CSV reads and holds every declared column; the values' types are Spark's to check (at apply)."""
    path = seed_path(model)
    try:
        rows = read_seed(model)
    except IncrError as e:
        return [Problem.of(path, e)]
    missing = [c for c, _ in model.columns if c not in rows.column_names]
    if not missing:
        return []
    return [Problem(path, 1, f"model {model.name}: declared columns {', '.join(missing)} are not in the seed file "
                             f"{path}; add them to its header or remove them from the model's columns")]


def _cycle(models: list[Model], root: Path) -> list[Problem]:
    try:
        topological(models)
    except ModelDefinitionError as e:
        text = str(e)
        # the file named first, so that the line named first (Problem.of) is in it
        named = sorted((text.index(m.source), m.source) for m in models if m.source != "registry" and m.source in text)
        return [Problem.of(Path(named[0][1]) if named else root / "models", text)]
    return []


def _refusals(models: list[Model]) -> list[Problem]:
    """The incremental safety check of every time-sliced model, as ``incr.apply`` runs it before writing."""
    known = {m.name: m for m in models}
    found = []
    for model in models:
        if not model.kind.time_sliced or model.query is None:
            continue
        try:
            judgement = safety.judge(model, safety.timeseries_sources(model, known))
        except IncrError as e:
            found.append(Problem.of(Path(model.source), e))
            continue
        if judgement.refused:
            found.append(Problem.of(Path(model.source), judgement.refusal))
    return found


def catalog_tables(models: Iterable[Model]) -> list[str]:
    """The tables only the catalog knows: EXTERNAL models and tables the models read that are no model."""
    names = {m.name for m in models}
    outside = {t for m in models for t in m.depends_on if t not in names}
    return sorted(outside | {m.name for m in models if m.kind.name == "EXTERNAL"})


def summary(root: Path, project: Project) -> str:
    """The one line a valid project gets: what was checked, and what is left to ``incr.plan``."""
    models = project.models
    count = lambda n, what: f"{n} {what}{'' if n == 1 else 's'}"  # noqa: E731
    sliced = sum(1 for m in models if m.kind.time_sliced)
    seeds = sum(1 for m in models if m.kind.name == "SEED")
    custom = len({a.name for m in models for a in m.custom_audits})
    outside = catalog_tables(models)
    reads = f" and the catalog tables they read ({', '.join(outside)})" if outside else ""
    return (f"{root.resolve()}: valid: {count(len(models), 'model')}, {count(seeds, 'seed')}, "
            f"{count(custom, 'custom audit')} called, no dependency cycle, safety check passed ({sliced} time-sliced). "
            f"Not checked offline: Spark's analysis of the queries{reads}; incr.plan checks them.")


def command(root: Path) -> int:
    """Print every problem (exit 1) or the summary (exit 0)."""
    project, found = problems(root)
    for problem in found:
        print(problem.describe())
    if found:
        files = len({p.file for p in found})
        print(f"{root}: {len(found)} problem(s) in {files} file(s)")
        return 1
    assert project is not None
    print(summary(root, project))
    return 0
