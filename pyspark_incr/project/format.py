"""``pyspark-incr format [--check] [DIR]``: model and audit files rewritten in one stable style, as ``sqlmesh format``.

A file is a list of sections, ``MODEL (...)`` (or each ``AUDIT (...)`` of an audit file) followed by
its statements. The block is laid out one property per line, each value kept as written (a value is
SQLMesh's syntax, which no SQL generator reproduces faithfully); the statements are parsed in the
model's dialect with macros understood (:mod:`pyspark_incr.model.macro_parse`) and written back by
sqlglot, pretty-printed, ``@macro`` and ``@{x}`` restored. Comments are kept: a block holding one is
kept as written, sqlglot carries those inside statements. What sqlglot cannot write back as it was
read (clause macros such as ``@WHERE(...)``, statement-level ``@IF``, ``SET``) is kept as written.

Nothing is written unless the formatted text loads to the same models (every field, both
fingerprints) or audits and keeps every comment; a file failing that is refused with the reason.
config.yaml's ``format:`` section takes SQLMesh's options: normalize, pad, indent,
normalize_functions, leading_comma, max_text_width, append_newline (true by default here), and
no_rewrite_casts (casts are always kept as written).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import Token, TokenType

from pyspark_incr.errors import IncrError, ModelDefinitionError
from pyspark_incr.model import extras, macro_parse, macros
from pyspark_incr.model import statements as model_statements
from pyspark_incr.model.audit_defs import parse_audits
from pyspark_incr.model.block import KindSpec, Property, parse_block, split_blocks
from pyspark_incr.model.definition import Model, parse_models
from pyspark_incr.model.fingerprint import data_hash, metadata_hash
from pyspark_incr.model.macro_python import load_dir
from pyspark_incr.model.signals import load_signal_files
from pyspark_incr.model.sqlerrors import SQLGLOT_ERRORS
from pyspark_incr.project.audit_files import load_audits
from pyspark_incr.project.config import load_config

#: config.yaml ``format:`` keys passed on to sqlglot's generator, and their defaults (SQLMesh's).
_GENERATOR = {"normalize": False, "pad": 2, "indent": 2, "normalize_functions": False, "leading_comma": False,
              "max_text_width": 80}
_OWN = {"append_newline": True, "no_rewrite_casts": True}


@dataclass(frozen=True)
class Style:
    """How files are written: sqlglot generator options, and whether a file ends with a newline."""

    generator: dict[str, Any]
    append_newline: bool = True


def style(options: dict[str, Any], where: str) -> Style:
    """The style config.yaml's ``format:`` section (``options``) asks for; an unknown key is an error naming it."""
    known = {**_GENERATOR, **_OWN}
    for key, value in options.items():
        if key not in known:
            raise ModelDefinitionError(f"{where}: unknown format option {key!r} (known: {', '.join(known)})")
        if not isinstance(value, type(known[key])) and not (key == "normalize_functions" and isinstance(value, str)):
            raise ModelDefinitionError(f"{where}: format.{key} must be {type(known[key]).__name__}, got {value!r}")
    generator = {k: options.get(k, v) for k, v in _GENERATOR.items()}
    return Style(generator, bool(options.get("append_newline", True)))


@dataclass(frozen=True)
class _Section:
    """One ``KEYWORD (...)`` block and what follows it, as spans of the file's text."""

    leading: str  # comments before the block
    block: str
    between: str  # comments between the block and the statements
    body: str  # the statements, '' when none


def format_text(text: str, keyword: str, dialect: str, how: Style) -> str:
    """``text`` (a model file when ``keyword`` is MODEL, an audit file for AUDIT) in the stable style."""
    tokens = Dialect.get_or_raise("spark").tokenize(text)
    sections, trailing = _sections(text, tokens, keyword)
    parts = []
    for i, s in enumerate(sections):
        own = _dialect_of(s.block, keyword, dialect)
        query, section = _virtual_update(s.body)
        body = _statements(query, own, how) if query.strip() else ""
        last = i == len(sections) - 1 and not section
        pieces = [p for p in (s.leading, _block(s.block, keyword) + ";", s.between) if p]
        chunk = "\n".join(pieces)
        if body:
            chunk += "\n\n" + body + ("" if last else ";")
        if section:
            chunk += "\n\n" + _virtual_update_section(section, own)
        parts.append(chunk)
    out = "\n\n".join(parts) + (f"\n\n{trailing}" if trailing else "")
    return out + "\n" if how.append_newline else out


def _sections(text: str, tokens: list[Token], keyword: str) -> tuple[list[_Section], str]:
    """The file's sections and the comments after its last statement."""
    starts = [i for i, t in enumerate(tokens) if t.text.upper() == keyword and i + 1 < len(tokens)
              and tokens[i + 1].token_type == TokenType.L_PAREN
              and (i == 0 or tokens[i - 1].token_type == TokenType.SEMICOLON)]
    if not starts or starts[0] != 0:
        raise ModelDefinitionError(f"the file must start with a {keyword} (...) block")
    sections, end_of_last = [], 0
    for n, k in enumerate(starts):
        close = _closing(tokens, k + 1)
        stop = starts[n + 1] if n + 1 < len(starts) else len(tokens)
        body = [t for t in tokens[close + 1 : stop]]
        while body and body[0].token_type == TokenType.SEMICOLON:
            body.pop(0)
        while body and body[-1].token_type == TokenType.SEMICOLON:
            body.pop()
        after_block = tokens[close].end + 1
        sections.append(_Section(
            leading=_comments(text[end_of_last : tokens[k].start]),
            block=text[tokens[k].start : after_block],
            between=_comments(text[after_block : body[0].start]) if body else "",
            body=text[body[0].start : body[-1].end + 1] if body else "",
        ))
        end_of_last = body[-1].end + 1 if body else after_block
    return sections, _comments(text[end_of_last:])


def _closing(tokens: list[Token], open_at: int) -> int:
    depth = 0
    for j in range(open_at, len(tokens)):
        if tokens[j].token_type in (TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE):
            depth += 1
        elif tokens[j].token_type in (TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE):
            depth -= 1
            if depth == 0:
                return j
    raise ModelDefinitionError(f"the '(' on line {tokens[open_at].line} is never closed")


def _comments(gap: str) -> str:
    """What a stretch between tokens holds besides blanks and semicolons: comments, kept as written."""
    lines = [line.rstrip() for line in gap.lstrip(" \t\r\n;").splitlines() if line.strip() not in ("", ";")]
    return "\n".join(lines)


def _has_comment(text: str) -> bool:
    tokens = Dialect.get_or_raise("spark").tokenize(text)
    return any(t.comments for t in tokens)


def _block(text: str, keyword: str) -> str:
    """A block one property per line (a kind's properties one level deeper), values as written."""
    if _has_comment(text):  # a property's comment has no place in the layout: the block stays as written
        return text
    props = (parse_block(text) if keyword == "MODEL" else split_blocks(text, keyword, "file")[0]).properties
    lines = [_property(key, prop) for key, prop in props.items()]
    return f"{keyword} (\n" + ",\n".join(f"  {line}" for line in lines) + "\n)"


def _property(key: str, prop: Property | KindSpec) -> str:
    if not isinstance(prop, KindSpec):
        return f"{key} {prop.text}"
    if not prop.properties:
        return f"{key} {prop.name}"
    inner = ",\n".join(f"    {k} {p.text}" for k, p in prop.properties.items())
    return f"{key} {prop.name} (\n{inner}\n  )"


def _dialect_of(block: str, keyword: str, default: str) -> str:
    props = (parse_block(block) if keyword == "MODEL" else split_blocks(block, keyword, "file")[0]).properties
    given = props.get("dialect")
    return given.text.strip("'\"").lower() if isinstance(given, Property) else default


def _statements(body: str, dialect: str, how: Style) -> str:
    """The statements after a block, pretty-printed by sqlglot; as written where it cannot reproduce them."""
    hidden = macros.hide_macros(body)
    if model_statements.guard(hidden)[1]:
        return body
    try:
        parsed = [s for s in macro_parse.parse(hidden, dialect) if s is not None and not isinstance(s, exp.Semicolon)]
    except SQLGLOT_ERRORS:
        return body  # loading says what is wrong with it (pyspark-incr validate); formatting leaves it alone
    if not parsed or any(macro_parse.CLAUSE_IF in n.meta for s in parsed for n in s.walk()):
        return body
    return ";\n\n".join(_unhide(s.sql(dialect=dialect, pretty=True, **how.generator)) for s in parsed)


def _virtual_update(body: str) -> tuple[str, str]:
    """``body`` split into its statements and its ON_VIRTUAL_UPDATE section's statements ('' when none)."""
    query, section, _ = extras.split_virtual_update(body, 1, "formatting")
    return query.rstrip().rstrip(";"), section.strip()


def _virtual_update_section(section: str, dialect: str) -> str:
    """The section as SQLMesh writes it: its markers and each statement on a line of its own, with semicolons."""
    hidden = macros.hide_macros(section)
    try:
        parsed = [s for s in macro_parse.parse(hidden, dialect) if s is not None and not isinstance(s, exp.Semicolon)]
        lines = [_unhide(s.sql(dialect=dialect)) + ";" for s in parsed]
    except SQLGLOT_ERRORS:
        lines = [section if section.endswith(";") else section + ";"]
    return "\n".join(["ON_VIRTUAL_UPDATE_BEGIN;", *lines, "ON_VIRTUAL_UPDATE_END;"])


def _unhide(generated: str) -> str:
    """``@macro`` and ``@{x}`` back, whatever case the generator wrote their stand-ins in (normalize options)."""
    for stand_in in (macros.PREFIX, macros.BRACE, macros.BRACE_END):
        generated = re.sub(re.escape(stand_in), stand_in, generated, flags=re.IGNORECASE)
    return macros.unhide(generated)


# ---------------------------------------------------------------- checking a formatted file


def _comment_texts(text: str) -> list[str]:
    """Every comment's words, sorted: sqlglot writes ``-- x`` as ``/* x */``, which keeps them."""
    tokens = Dialect.get_or_raise("spark").tokenize(text)
    return sorted(" ".join(c.split()) for t in tokens for c in t.comments)


@dataclass(frozen=True)
class Outcome:
    """What formatting one file gives: the new text (None: refused, ``reason`` says why)."""

    path: Path
    before: str
    after: str | None
    reason: str = ""

    @property
    def changed(self) -> bool:
        return self.after is not None and self.after != self.before


def unchanged_part(model: Model) -> tuple:
    """What of a model formatting must not change: every compared field and both fingerprints."""
    # an on_virtual_update statement's place in the file (kept for error messages) moves with the layout
    placeless = replace(model, on_virtual_update=tuple((sql, "") for sql, _ in model.on_virtual_update))
    return placeless, data_hash(model), metadata_hash(model)


def _loaded_models(loader: Callable[[str], list[Model]]) -> Callable[[str], list[tuple]]:
    def read(text: str) -> list[tuple]:
        return [unchanged_part(m) for m in loader(text)]

    return read


def format_file(path: Path, keyword: str, dialect: str, how: Style, load: Callable[[str], Any]) -> Outcome:
    """``path`` formatted, after checking the result loads as the file does (``load``) and keeps its comments."""
    before = path.read_text(encoding="utf-8")
    try:
        expected = load(before)
    except IncrError as e:
        return Outcome(path, before, None, f"does not load ({str(e).splitlines()[0]}); pyspark-incr validate "
                                           "shows every problem")
    try:
        after = format_text(before, keyword, dialect, how)
        if after == before:
            return Outcome(path, before, after)
        if load(after) != expected:
            return Outcome(path, before, None, f"the formatted text would define other "
                                               f"{'models' if keyword == 'MODEL' else 'audits'} than the file does; "
                                               "left as it is (please report it)")
    except (IncrError, *SQLGLOT_ERRORS) as e:
        return Outcome(path, before, None, f"cannot be formatted ({str(e).splitlines()[0]}); left as it is")
    if _comment_texts(after) != _comment_texts(before):
        return Outcome(path, before, None, "formatting would lose or change a comment; left as it is")
    return Outcome(path, before, after)


def format_project(root: Path) -> list[Outcome]:
    """Every ``models/**/*.sql`` and ``audits/**/*.sql`` of the project at ``root``, formatted (nothing written)."""
    config = load_config(root)
    how = style(config.format, f"{root / 'config.yaml'}")
    defaults = dict(config.model_defaults)
    if config.settings.get("table_format"):
        defaults.setdefault("table_format", config.settings["table_format"].lower())
    dialect = str(defaults.get("dialect", "spark"))
    ignore = lambda path, error: None  # noqa: E731 - a broken file is refused by the file's own check
    custom = load_audits(root, dialect, ignore)
    signals = load_signal_files(root, ignore)
    try:
        python_macros = load_dir(root)
    except IncrError:
        python_macros = None
    outcomes = []
    for path in _files(root / "models"):
        def model_loader(text: str, source: str = str(path)) -> list[Model]:
            return parse_models(text, source, defaults, config.variables, custom.values(), signals,
                                python_macros=python_macros)

        if _formatting_off(path):
            continue
        outcomes.append(format_file(path, "MODEL", dialect, how, _loaded_models(model_loader)))
    for path in _files(root / "audits"):
        outcomes.append(format_file(path, "AUDIT", dialect, how,
                                    lambda text, source=str(path): parse_audits(text, source, dialect)))
    return outcomes


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [f for f in sorted(folder.rglob("*.sql"))
            if not any(part.startswith(".") for part in f.relative_to(folder).parts)]


def _formatting_off(path: Path) -> bool:
    """True for a model whose block says ``formatting false`` (SQLMesh's way to keep a file as written)."""
    try:
        prop = parse_block(path.read_text(encoding="utf-8"), str(path)).properties.get("formatting")
    except (IncrError, OSError):
        return False
    return isinstance(prop, Property) and prop.text.strip().strip("'\"").lower() == "false"


def command(root: Path, check: bool = False) -> int:
    """Format the project's files (with ``check``: list those that would change); 1 when one would change
    (``check``) or was refused."""
    if not (root / "models").is_dir():
        print(f"{root}: no models/ directory there; pass the project root (the directory holding models/*.sql)")
        return 1
    outcomes = format_project(root)
    refused = [o for o in outcomes if o.after is None]
    changed = [o for o in outcomes if o.changed]
    for o in refused:
        print(f"{_shown(o.path)}: not formatted: {o.reason}")
    for o in changed:
        if check:
            print(f"{_shown(o.path)} needs reformatting")
        else:
            o.path.write_text(o.after or "", encoding="utf-8")
            print(f"{_shown(o.path)} reformatted")
    verb = "need reformatting" if check else "reformatted"
    print(f"{root}: {len(changed)} file(s) {verb}, {len(outcomes) - len(changed) - len(refused)} unchanged"
          + (f", {len(refused)} refused" if refused else ""))
    return 1 if refused or (check and changed) else 0


def _shown(path: Path) -> Path:
    try:
        return path.resolve().relative_to(Path.cwd())
    except ValueError:
        return path
