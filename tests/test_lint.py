"""``pyspark-incr lint``: SQLMesh's built-in rules, the safety check's as rules, a project's linter/*.py; offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.plan import lint_safety  # noqa: F401 - registers the safety rules, as the CLI does
from pyspark_incr.project import lint
from pyspark_incr.project.lint_rules import REGISTRY
from pyspark_incr.project.loader import load

#: SQLMesh 0.236.4's sqlmesh/core/linter/rules/builtin.py, by rule name.
SQLMESH_BUILTINS = {"ambiguousorinvalidcolumn", "invalidselectstarexpansion", "noselectstar", "nomissingaudits",
                    "nomissingunittest", "nomissingexternalmodels", "noambiguousprojections"}
AUDITED = "audits (not_null(columns := (x)))"
#: The tiny project checked against ``sqlmesh lint`` (0.236.4): the same findings for the same rules.
PROJECT = {
    "config.yaml": "gateways:\n  local:\n    connection:\n      type: duckdb\nmodel_defaults:\n  dialect: spark\n"
                   "linter:\n  enabled: true\n  rules: ALL\n  ignored_rules: [nomissingunittest]\n",
    "models/a.sql": "MODEL (name s.a, kind FULL);\nSELECT 1 AS x, 2 AS x\n",
    "models/b.sql": "MODEL (name s.b, kind FULL, ignored_rules [\"noselectstar\"]);\nSELECT * FROM s.a\n",
    "models/c.sql": f"MODEL (name s.c, kind FULL, {AUDITED});\nSELECT * FROM s.a\n",
    "models/d.sql": f"MODEL (name s.d, kind FULL, {AUDITED}, owner 'me');\nSELECT x, y + 1 FROM ext.t\n",
    "models/e.sql": f"MODEL (name s.e, kind FULL, {AUDITED}, owner 'me', ignored_rules 'ALL');\nSELECT * FROM ext.t\n",
    # the guide's user-defined rule, as a SQLMesh project holds it
    "linter/user.py": "import typing as t\n\nfrom sqlmesh.core.linter.rule import Rule, RuleViolation\n"
                      "from sqlmesh.core.model import Model\n\n\nclass NoMissingOwner(Rule):\n"
                      "    \"\"\"Model owner should always be specified.\"\"\"\n\n"
                      "    def check_model(self, model: Model) -> t.Optional[RuleViolation]:\n"
                      "        return self.violation() if not model.owner else None\n",
}
#: What ``sqlmesh lint`` reports for PROJECT.
SQLMESH_FINDINGS = {
    ("a.sql", "nomissingaudits"), ("a.sql", "noambiguousprojections"), ("a.sql", "nomissingowner"),
    ("b.sql", "nomissingaudits"), ("b.sql", "nomissingowner"), ("b.sql", "invalidselectstarexpansion"),
    ("c.sql", "noselectstar"), ("c.sql", "nomissingowner"), ("c.sql", "invalidselectstarexpansion"),
    ("d.sql", "noambiguousprojections"), ("d.sql", "nomissingexternalmodels"),
}
UNSAFE = ("MODEL (name s.daily, kind INCREMENTAL_BY_TIME_RANGE (time_column ds){extra});\n"
          "SELECT ds, x FROM s.raw\nWHERE ds BETWEEN @start_ds AND @end_ds\nLIMIT 10\n")


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture(scope="module")
def sqlmesh_project(tmp_path_factory) -> Path:
    return _write(tmp_path_factory.mktemp("lint") / "p", PROJECT)


def _findings(root: Path) -> list[lint.Finding]:
    return lint.lint_project(load(root))[1]


def test_the_builtin_rules_are_sqlmeshs_by_name():
    assert SQLMESH_BUILTINS <= set(REGISTRY)


def test_a_sqlmesh_project_gets_the_findings_sqlmesh_lint_gives(sqlmesh_project):
    found = _findings(sqlmesh_project)
    assert {(f.file.name, f.rule) for f in found} == SQLMESH_FINDINGS
    assert {f.severity for f in found} == {"error"}
    by = {(f.file.name, f.rule): f.message for f in found}
    assert by["c.sql", "noselectstar"] == ("Query should not contain SELECT * on its outer most projections, "
                                          "even if it can be expanded.")
    assert by["a.sql", "noambiguousprojections"] == "Found duplicate outer select name 'x'"
    assert by["d.sql", "noambiguousprojections"] == ("Outer projection 'y + 1' must have inferrable names or "
                                                     "explicit aliases.")
    assert by["a.sql", "nomissingowner"] == "Model owner should always be specified."


def test_errors_print_file_line_col_rule_and_exit_1(sqlmesh_project, capsys, monkeypatch):
    monkeypatch.chdir(sqlmesh_project)
    assert lint.command(Path(".")) == 1
    out = capsys.readouterr().out
    assert "models/c.sql:1:8: error noselectstar: Query should not contain SELECT *" in out
    assert out.rstrip().endswith("11 error(s), 0 warning(s) in 4 file(s)")


def test_warn_rules_print_and_exit_0(tmp_path, capsys):
    config = "linter:\n  enabled: true\n  warn_rules: [noselectstar]\n"
    root = _write(tmp_path, {"config.yaml": config, "models/c.sql": PROJECT["models/c.sql"]})
    assert lint.command(root) == 0
    assert f"{root / 'models/c.sql'}:1:8: warning noselectstar:" in capsys.readouterr().out


@pytest.mark.parametrize("section, fault", [
    ("  rules: [noselectstr]", "rule noselectstr could not be found"),
    ("  rules: [noselectstar]\n  warn_rules: [noselectstar]", "cannot both warn and raise an error: noselectstar"),
    ("  rules: ALL\n  warn_rules: [noselectstar]", "cannot both warn and raise an error: noselectstar"),
    ("  rules: [noselectstar]\n  ignored_rules: [noselectstar]", "it is in linter.ignored_rules too"),
    ("  rulez: ALL", "unknown linter key 'rulez'"),
])
def test_a_bad_linter_section_is_refused_naming_config_yaml(tmp_path, section, fault):
    root = _write(tmp_path, {"config.yaml": f"linter:\n  enabled: true\n{section}\n",
                             "models/c.sql": PROJECT["models/c.sql"]})
    with pytest.raises(ModelDefinitionError, match="config.yaml") as e:
        _findings(root)
    assert fault in str(e.value)


def test_a_model_ignoring_an_unknown_rule_is_refused_naming_the_model(tmp_path):
    root = _write(tmp_path, {"config.yaml": "linter:\n  enabled: true\n  rules: ALL\n",
                             "models/c.sql": "MODEL (name s.c, kind FULL, ignored_rules (nosuchrule));\nSELECT 1 AS x\n"})
    with pytest.raises(ModelDefinitionError, match=r"model s\.c .*rule nosuchrule could not be found"):
        _findings(root)


def test_without_a_linter_section_the_safety_findings_are_warnings_at_their_place(tmp_path, capsys):
    root = _write(tmp_path, {"models/daily.sql": UNSAFE.format(extra="")})
    assert lint.command(root) == 0
    out = capsys.readouterr().out
    assert f"{root / 'models/daily.sql'}:4:1: warning safety_limit: LIMIT" in out
    assert "safety_overrides (allow_limit = true)" in out


def test_safety_rules_named_in_rules_are_errors_and_overrides_admit_them(tmp_path):
    config = "linter:\n  enabled: true\n  rules: [safety_limit]\n"
    root = _write(tmp_path, {"config.yaml": config, "models/daily.sql": UNSAFE.format(extra="")})
    assert [(f.rule, f.severity, f.line) for f in _findings(root)] == [("safety_limit", "error", 4)]
    assert lint.command(root) == 1
    (root / "models/daily.sql").write_text(UNSAFE.format(extra=", safety_overrides (allow_limit = true)"))
    assert _findings(root) == []


def test_a_disabled_linter_checks_nothing(tmp_path, capsys):
    root = _write(tmp_path, {"config.yaml": "linter:\n  enabled: false\n  rules: ALL\n",
                             "models/daily.sql": UNSAFE.format(extra="")})
    assert lint.command(root) == 0
    assert "the linter is disabled" in capsys.readouterr().out


def test_a_column_no_upstream_model_has_is_ambiguousorinvalidcolumn(tmp_path):
    config = "linter:\n  enabled: true\n  rules: [ambiguousorinvalidcolumn]\n"
    root = _write(tmp_path, {
        "config.yaml": config,
        "models/up.sql": "MODEL (name s.up, kind FULL);\nSELECT 1 AS id, 'a' AS name\n",
        "models/ok.sql": "MODEL (name s.ok, kind FULL);\nSELECT id, name FROM s.up\n",
        "models/bad.sql": "MODEL (name s.bad, kind FULL);\nSELECT id, nmae FROM s.up\n",
        "models/outside.sql": "MODEL (name s.outside, kind FULL);\nSELECT whatever FROM raw.unknown\n",
    })
    found = _findings(root)
    assert [(f.file.name, f.rule) for f in found] == [("bad.sql", "ambiguousorinvalidcolumn")]
    assert "nmae" in found[0].message and "s.bad" in found[0].message


def test_a_rule_that_raises_is_reported_naming_rule_and_model(tmp_path):
    rule = ("from sqlmesh.core.linter.rule import Rule\n\nclass Broken(Rule):\n    \"\"\"x\"\"\"\n"
            "    def check_model(self, model):\n        return 1 / 0\n")
    root = _write(tmp_path, {"config.yaml": "linter:\n  enabled: true\n  rules: [broken]\n",
                             "models/c.sql": PROJECT["models/c.sql"], "linter/rules.py": rule})
    with pytest.raises(ModelDefinitionError, match=r"lint rule broken failed on model s\.c: ZeroDivisionError"):
        _findings(root)


def test_the_cli_verb_runs_lint_without_spark(sqlmesh_project, capsys):
    from pyspark_incr import cli

    assert cli.main(["lint", str(sqlmesh_project)]) == 1
    assert "error noselectstar" in capsys.readouterr().out


def test_seed_headers_and_external_models_give_the_columns_checked_offline(tmp_path):
    config = "linter:\n  enabled: true\n  rules: [ambiguousorinvalidcolumn, invalidselectstarexpansion]\n"
    root = _write(tmp_path, {
        "config.yaml": config,
        "external_models.yaml": "- name: raw.orders\n  columns:\n    id: int\n    amount: double\n",
        "seeds/items.csv": "id,label\n1,a\n",
        "models/items.sql": "MODEL (name s.items, kind SEED (path '../seeds/items.csv'));\n",
        "models/good.sql": "MODEL (name s.good, kind FULL);\nSELECT o.*, i.label FROM raw.orders AS o "
                           "JOIN s.items AS i ON o.id = i.id\n",
        "models/typo.sql": "MODEL (name s.typo, kind FULL);\nSELECT o.amuont FROM raw.orders AS o\n",
        "models/seed_typo.sql": "MODEL (name s.seed_typo, kind FULL);\nSELECT lable FROM s.items\n",
    })
    assert sorted((f.file.name, f.rule) for f in _findings(root)) == [
        ("seed_typo.sql", "ambiguousorinvalidcolumn"), ("typo.sql", "ambiguousorinvalidcolumn")]


def test_nomissingunittest_knows_the_models_the_tests_folder_tests(tmp_path):
    test = "test_a:\n  model: s.a\n  outputs:\n    query:\n      rows:\n      - x: 1\n"
    root = _write(tmp_path, {"config.yaml": "linter:\n  enabled: true\n  rules: [nomissingunittest]\n",
                             "models/a.sql": "MODEL (name s.a, kind FULL);\nSELECT 1 AS x\n",
                             "models/b.sql": "MODEL (name s.b, kind FULL);\nSELECT 1 AS x\n",
                             "tests/test_a.yaml": test})
    found = _findings(root)
    assert [(f.file.name, f.message) for f in found] == [
        ("b.sql", "Model s.b is missing unit test(s). Please add in the tests/ directory.")]


def test_ignored_rules_and_formatting_change_no_fingerprint():
    from pyspark_incr.model.definition import parse_model
    from pyspark_incr.model.fingerprint import data_hash, metadata_hash

    plain = parse_model("MODEL (name s.a, kind FULL); SELECT 1 AS x")
    marked = parse_model("MODEL (name s.a, kind FULL, ignored_rules 'ALL', formatting false); SELECT 1 AS x")
    assert (marked.ignored_rules, marked.formatting) == (("ALL",), False)
    assert (data_hash(marked), metadata_hash(marked)) == (data_hash(plain), metadata_hash(plain))


def test_a_file_that_does_not_load_is_an_error_and_the_rest_is_still_linted(tmp_path, capsys):
    config = "linter:\n  enabled: true\n  warn_rules: [noselectstar]\n"
    root = _write(tmp_path, {"config.yaml": config, "models/c.sql": PROJECT["models/c.sql"],
                             "models/broken.sql": "MODEL (name s.x, kind FULL, bogus 1);\nSELECT 1 AS x\n"})
    assert lint.command(root) == 1
    out = capsys.readouterr().out
    assert f"{root / 'models/broken.sql'}: error: does not load, so it was not linted" in out
    assert "warning noselectstar" in out and out.rstrip().endswith("1 error(s), 1 warning(s) in 2 file(s)")


# --- the linter in incr.plan and incr.apply (as sqlmesh plan lints) -----------------------------------------


def _gated(root: Path, p: str, linter: str) -> Path:
    return _write(root, {
        "config.yaml": f"linter:\n  enabled: true\n{linter}",
        "models/owned.sql": f"MODEL (name {p}.owned, kind FULL, {AUDITED});\nSELECT 1 AS x\n",
        "models/orphan.sql": f"MODEL (name {p}.orphan, kind FULL);\nSELECT 2 AS y\n",
    })


def test_a_lint_error_stops_plan_and_apply_before_anything_is_written(spark, isolated, tmp_path):
    from conftest import call, state_rows

    root = _gated(tmp_path, isolated, "  rules: [nomissingaudits]\n")

    for verb in ("plan", "apply"):
        with pytest.raises(Exception) as failed:
            call(spark, verb, project=str(root))
        assert "[INCR_LINT_FAILED]" in str(failed.value)
        assert "orphan.sql:1:8: error nomissingaudits: Model `audits` must be configured" in str(failed.value)
        assert "owned.sql" not in str(failed.value)
    assert state_rows(spark, isolated) == {} or not any(state_rows(spark, isolated).values())


def test_lint_warnings_show_on_the_plan_row_of_their_model_and_apply_goes_on(spark, isolated, tmp_path):
    from conftest import call

    root = _gated(tmp_path, isolated, "  warn_rules: [nomissingaudits]\n")

    rows = {r["model"]: r for r in call(spark, "plan", project=str(root))}
    assert rows[f"{isolated}.orphan"]["lint"].startswith("nomissingaudits: ")
    assert rows[f"{isolated}.owned"]["lint"] is None
    assert {r["status"] for r in call(spark, "apply", project=str(root))} == {"ok"}


def test_a_project_without_linter_enabled_plans_unlinted(spark, isolated, tmp_path):
    from conftest import call

    root = _gated(tmp_path, isolated, "  rules: ALL\n")
    (root / "config.yaml").write_text("linter:\n  enabled: false\n  rules: ALL\n")

    assert all(r["lint"] is None for r in call(spark, "plan", project=str(root)))
