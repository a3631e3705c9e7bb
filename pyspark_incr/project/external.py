"""``external_models.yaml``: tables built elsewhere, declared so models can read them as leaves.

The SQLMesh format: a list of ``{name, description, columns: {column: type}}``.
Each entry becomes a model of kind EXTERNAL whose definition text is written
with sqlglot (identifiers and strings quoted), so it round-trips through state.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from sqlglot import exp

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.definition import Model, parse_model

_KEYS = {"name", "description", "columns", "owner", "gateway", "dialect", "time_column", "time_column_format"}


def load_external_models(root: Path, dialect: str = "spark") -> list[Model]:
    """The EXTERNAL models declared in ``root/external_models.yaml`` (none when the file is absent)."""
    path = next((p for p in (root / "external_models.yaml", root / "external_models.yml") if p.is_file()), None)
    if path is None:
        return []
    try:
        entries = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    except yaml.YAMLError as e:
        raise ModelDefinitionError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(entries, list):
        raise ModelDefinitionError(f"{path}: must be a list of models, each with name: and columns:")
    return [parse_model(_definition(entry, i, path, dialect), source=str(path)) for i, entry in enumerate(entries, 1)]


def _definition(entry: object, index: int, path: Path, dialect: str) -> str:
    where = f"{path}: entry {index}"
    if not isinstance(entry, dict) or "name" not in entry:
        raise ModelDefinitionError(f"{where}: must be a mapping with at least name:")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ModelDefinitionError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})")
    try:
        name = exp.to_table(str(entry["name"]), dialect="spark")
    except Exception:  # noqa: BLE001 - sqlglot raises several types for a bad name
        raise ModelDefinitionError(f"{where}: name {entry['name']!r} is not a table name") from None
    props = [f"name {name.sql('spark')}", f"kind EXTERNAL{_time_column(entry, where)}"]
    if entry.get("description"):
        props.append(f"description {exp.Literal.string(str(entry['description'])).sql('spark')}")
    if entry.get("owner"):
        props.append(f"owner {exp.Literal.string(str(entry['owner'])).sql('spark')}")
    columns = entry.get("columns") or {}
    if not isinstance(columns, dict):
        raise ModelDefinitionError(f"{where}: columns must map column names to types, e.g. {{id: int}}")
    defs = []
    for column, type_name in columns.items():
        try:
            data_type = exp.DataType.build(str(type_name), dialect=entry.get("dialect", dialect))
        except Exception:  # noqa: BLE001
            raise ModelDefinitionError(f"{where}: column {column!r} has type {type_name!r}, which is not a type") from None
        defs.append(f"{exp.to_identifier(str(column), quoted=True).sql('spark')} {data_type.sql('spark')}")
    if defs:
        props.append(f"columns ({', '.join(defs)})")
    return f"MODEL ({', '.join(props)})"


def _time_column(entry: dict, where: str) -> str:
    """`` (time_column `ts`[, 'format'])`` for an entry declaring its time column (a timeseries source), else ''."""
    column, fmt = entry.get("time_column"), entry.get("time_column_format")
    if column is None:
        if fmt is not None:
            raise ModelDefinitionError(f"{where}: time_column_format needs time_column (the column it formats)")
        return ""
    if not isinstance(column, str) or not column.strip():
        raise ModelDefinitionError(f"{where}: time_column must be a column name, e.g. time_column: event_ts")
    ident = exp.to_identifier(column.strip(), quoted=True).sql("spark")
    if fmt is None:
        return f" (time_column {ident})"
    return f" (time_column ({ident}, {exp.Literal.string(str(fmt)).sql('spark')}))"
