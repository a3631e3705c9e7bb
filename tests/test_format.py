"""``pyspark-incr format [--check]``: model and audit files in one stable style, their meaning and comments kept."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.audit_defs import parse_audits
from pyspark_incr.model.definition import parse_models
from pyspark_incr.model.fingerprint import data_hash, metadata_hash
from pyspark_incr.project import format as fmt
from pyspark_incr.project.loader import load

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "format"
CASES = sorted(p for p in FIXTURES.glob("*.sql") if not p.name.endswith(".expected.sql"))
EXAMPLES = sorted(p.parent for p in (ROOT / "examples").glob("*/models"))
DEFAULT = fmt.style({}, "config.yaml")


def _keyword(path: Path) -> str:
    return "AUDIT" if path.name.startswith("audit") else "MODEL"


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_a_file_formats_to_its_expected_text_and_stays_there(case):
    expected = case.with_name(f"{case.stem}.expected.sql").read_text()
    out = fmt.format_text(case.read_text(), _keyword(case), "spark", DEFAULT)
    assert out == expected
    assert fmt.format_text(out, _keyword(case), "spark", DEFAULT) == out


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_a_formatted_fixture_defines_what_the_original_does(case):
    before, after = case.read_text(), case.with_name(f"{case.stem}.expected.sql").read_text()
    if _keyword(case) == "AUDIT":
        assert parse_audits(after, "f") == parse_audits(before, "f")
        return
    old, new = parse_models(before, "f"), parse_models(after, "f")
    assert [fmt.unchanged_part(m) for m in new] == [fmt.unchanged_part(m) for m in old]
    assert [(data_hash(m), metadata_hash(m)) for m in new] == [(data_hash(m), metadata_hash(m)) for m in old]


@pytest.fixture(scope="module")
def formatted_examples(tmp_path_factory) -> list[tuple[Path, Path]]:
    """Every example project copied and formatted once: (original, formatted copy)."""
    pairs = []
    for project in EXAMPLES:
        copy = tmp_path_factory.mktemp("fmt") / project.name
        shutil.copytree(project, copy)
        assert fmt.command(copy) == 0, project
        pairs.append((project, copy))
    return pairs


def test_formatting_every_example_keeps_each_models_fingerprints_and_query(formatted_examples):
    for original, copy in formatted_examples:
        before, after = load(original).models, load(copy).models
        assert [m.name for m in after] == [m.name for m in before]
        for old, new in zip(before, after):
            assert (new.query, data_hash(new), metadata_hash(new)) == (old.query, data_hash(old), metadata_hash(old))


def test_formatting_every_example_twice_changes_nothing(formatted_examples, capsys):
    for _, copy in formatted_examples:
        assert fmt.command(copy, check=True) == 0  # nothing would change, nothing refused
    out = capsys.readouterr().out
    assert "needs reformatting" not in out and "refused" not in out


def test_check_changes_nothing_lists_what_would_change_and_exits_1(tmp_path, capsys):
    shutil.copytree(ROOT / "examples" / "quickstart", tmp_path / "q")
    texts = {p: p.read_text() for p in (tmp_path / "q").rglob("*.sql")}
    assert fmt.command(tmp_path / "q", check=True) == 1
    assert {p: p.read_text() for p in texts} == texts
    out = capsys.readouterr().out
    assert f"{tmp_path / 'q' / 'models' / 'daily_revenue.sql'} needs reformatting" in out


def test_a_file_whose_formatted_text_would_define_another_model_is_refused_and_left(tmp_path, capsys, monkeypatch):
    text = "MODEL (name s.a, kind FULL);\nSELECT 1 AS x\n"
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "a.sql").write_text(text)
    monkeypatch.setattr(fmt, "format_text", lambda text, *_: text.replace("1 AS x", "2 AS x"))
    assert fmt.command(tmp_path) == 1
    assert (tmp_path / "models" / "a.sql").read_text() == text
    assert "a.sql: not formatted: the formatted text would define other models" in capsys.readouterr().out


def test_a_file_whose_formatting_would_drop_a_comment_is_refused(tmp_path, monkeypatch):
    text = "MODEL (name s.a, kind FULL);\nSELECT 1 AS x -- why\n"
    path = tmp_path / "a.sql"
    path.write_text(text)
    monkeypatch.setattr(fmt, "format_text", lambda *_: "MODEL (name s.a, kind FULL);\nSELECT 1 AS x\n")
    outcome = fmt.format_file(path, "MODEL", "spark", DEFAULT, lambda t: parse_models(t, "a.sql"))
    assert outcome.after is None and "lose or change a comment" in outcome.reason


def test_formatting_false_keeps_a_model_as_written(tmp_path):
    text = "MODEL (name s.a, kind FULL, formatting false);\nselect 1 as x\n"
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "a.sql").write_text(text)
    assert fmt.command(tmp_path) == 0
    assert (tmp_path / "models" / "a.sql").read_text() == text


def test_config_format_options_shape_the_output():
    how = fmt.style({"leading_comma": True, "pad": 4, "append_newline": False}, "config.yaml")
    out = fmt.format_text("MODEL (name s.a, kind FULL); SELECT a, b FROM t", "MODEL", "spark", how)
    assert out.endswith("SELECT\n    a\n    , b\nFROM t")


@pytest.mark.parametrize("options, fault", [
    ({"indnet": 2}, "unknown format option 'indnet'"),
    ({"indent": "wide"}, "format.indent must be int"),
])
def test_a_bad_format_section_is_refused_naming_the_option(options, fault):
    with pytest.raises(ModelDefinitionError, match=fault):
        fmt.style(options, "config.yaml")


def test_the_cli_verb_formats_without_spark(tmp_path, capsys):
    from pyspark_incr import cli

    shutil.copytree(ROOT / "examples" / "quickstart", tmp_path / "q")
    assert cli.main(["format", "--check", str(tmp_path / "q")]) == 1
    assert cli.main(["format", str(tmp_path / "q")]) == 0
    assert cli.main(["format", "--check", str(tmp_path / "q")]) == 0
