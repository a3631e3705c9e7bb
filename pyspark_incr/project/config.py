"""A project's ``config.yaml``: model defaults, variables and plugin settings.

SQLMesh's own top-level keys that concern its runtime (gateways, ui, ...) are
accepted and ignored, so a SQLMesh project's config loads unchanged (``linter:``
and ``format:`` are kept for ``pyspark-incr lint`` and ``format``);
inside the sections we read, unknown keys are errors with a suggestion.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.intervals.times import to_end_ms, to_ms
from pyspark_incr.errors import ArgumentError

#: model_defaults keys -> the Model field they fill.
_DEFAULTS = {
    "dialect": "dialect", "start": "start_ms", "end": "end_ms", "cron": "cron", "owner": "owner",
    "interval_unit": "interval_unit", "table_format": "table_format", "storage_format": "storage_format",
    "cron_tz": "cron_tz", "allow_partials": "allow_partials", "enabled": "enabled", "week_start": "week_start",
}
_SETTINGS = ("state_schema", "physical_schema", "table_format", "concurrency")
_SQLMESH_ONLY = {
    "gateways", "default_gateway", "project", "ui", "linter", "format", "plan", "janitor", "users", "notification_targets",
    "cicd_bot", "run", "migration", "default_target_environment", "physical_schema_mapping", "environment_suffix_target",
    "environment_catalog_mapping", "model_naming", "cache_dir", "log_limit", "env_vars",
    "default_connection", "default_test_connection", "default_scheduler", "snapshot_ttl", "environment_ttl",
    "pinned_environments", "time_column_format", "infer_python_dependencies", "dbt", "gateway_managed_virtual_layer",
}
_SECTIONS = {"model_defaults", "variables", "incr"}
#: SQLMesh keys naming statements to run: silently skipping them would build tables without them.
_UNSUPPORTED = ("before_all", "after_all")


@dataclass(frozen=True)
class ProjectConfig:
    """What ``config.yaml`` says."""

    model_defaults: dict[str, Any] = field(default_factory=dict)
    variables: dict[str, Any] = field(default_factory=dict)
    #: Plugin settings (the ``incr:`` section): state_schema, physical_schema, table_format, concurrency.
    settings: dict[str, str] = field(default_factory=dict)
    #: The ``linter:`` section as written (None when absent), read by ``pyspark-incr lint`` (project/lint.py).
    linter: dict[str, Any] | None = None
    #: The ``format:`` section as written, read by ``pyspark-incr format`` (project/format.py).
    format: dict[str, Any] = field(default_factory=dict)


def load_config(root: Path) -> ProjectConfig:
    """Read ``config.yaml`` (or ``config.yml``) under ``root``; none means all defaults."""
    path = next((p for p in (root / "config.yaml", root / "config.yml") if p.is_file()), None)
    if path is None:
        return ProjectConfig()
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ModelDefinitionError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise ModelDefinitionError(f"{path}: must be a mapping of sections (model_defaults:, variables:, incr:)")
    for key in _UNSUPPORTED:
        if raw.get(key):
            raise ModelDefinitionError(
                f"{path}: {key} is not supported yet; run those statements in the job itself, before or after "
                "CALL incr.run, or as a model's pre- or post-statements")
    _check_keys(raw, _SECTIONS | _SQLMESH_ONLY | set(_UNSUPPORTED), path, "section")
    defaults = _section(raw, "model_defaults", path)
    _check_keys(defaults, set(_DEFAULTS), path, "model_defaults key")
    settings = _section(raw, "incr", path)
    _check_keys(settings, set(_SETTINGS), path, "incr setting")
    return ProjectConfig(
        model_defaults={_DEFAULTS[k]: _default(k, v, path) for k, v in defaults.items()},
        variables={str(k).lower(): v for k, v in _section(raw, "variables", path).items()},
        settings={k: str(v) for k, v in settings.items()},
        linter=_section(raw, "linter", path) if "linter" in raw else None,
        format=_section(raw, "format", path),
    )


def _section(raw: dict, name: str, path: Path) -> dict:
    value = raw.get(name) or {}
    if not isinstance(value, dict):
        raise ModelDefinitionError(f"{path}: {name} must be a mapping of keys to values")
    return value


def _check_keys(mapping: dict, known: set[str], path: Path, what: str) -> None:
    for key in mapping:
        if key not in known:
            hint = difflib.get_close_matches(str(key), sorted(known), n=1)
            also = f"; did you mean {hint[0]!r}?" if hint else ""
            raise ModelDefinitionError(f"{path}: unknown {what} {key!r}{also} (known: {', '.join(sorted(known))})")


def _default(key: str, value: Any, path: Path) -> Any:
    try:
        if key == "start":
            return to_ms(str(value), "model_defaults.start")
        if key == "end":
            return to_end_ms(str(value), "model_defaults.end")
    except ArgumentError as e:
        raise ModelDefinitionError(f"{path}: {e}") from None
    if key in ("allow_partials", "enabled"):
        if not isinstance(value, bool):
            raise ModelDefinitionError(f"{path}: model_defaults.{key} must be true or false, got {value!r}")
        return value
    if key == "week_start":
        from pyspark_incr.model.definition import WEEKDAYS

        if str(value).lower() not in WEEKDAYS:
            raise ModelDefinitionError(f"{path}: model_defaults.week_start must be one of {', '.join(WEEKDAYS)}")
        return WEEKDAYS.index(str(value).lower())
    return str(value).lower() if key in ("dialect", "table_format") else str(value)
