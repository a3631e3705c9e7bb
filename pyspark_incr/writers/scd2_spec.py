"""What the SQL of SCD type 2 needs to know about one model: its columns, key, options and key types.

Built from the model and its query's analysed output (:meth:`Scd2Spec.of`), which is also
where what cannot work is refused, before any SQL is built (:mod:`scd2_sql`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark_incr.errors import ModelDefinitionError

#: Types ``valid_from`` / ``valid_to`` may have (``time_data_type``).
TIME_TYPES = ("TIMESTAMP", "TIMESTAMP_LTZ", "TIMESTAMP_NTZ", "DATE")
#: Prefix of the helper names the queries use; refused as a column name so they never collide.
RESERVED = "__incr_"


@dataclass(frozen=True)
class Scd2Spec:
    """What the SQL needs to know about one SCD type 2 model, with column names as the query spells them."""

    #: The query's columns, in its order (``valid_from`` / ``valid_to`` excluded).
    columns: tuple[str, ...]
    unique_key: tuple[str, ...]
    valid_from: str = "valid_from"
    valid_to: str = "valid_to"
    time_type: str = "TIMESTAMP"
    #: By time: the column whose growth means a new version. None by column.
    updated_at: str | None = None
    #: By column: the columns whose change means a new version. Empty by time.
    check_columns: tuple[str, ...] = ()
    invalidate_hard_deletes: bool = True
    updated_at_as_valid_from: bool = False
    execution_time_as_valid_from: bool = False
    #: Spark types of ``unique_key``'s columns as the query produces them (``DataFrame.dtypes``); empty when not
    #: known, and every key is then matched with ``<=>`` as it is (:mod:`scd2_keys`).
    key_types: tuple[str, ...] = ()

    @property
    def by_time(self) -> bool:
        return self.updated_at is not None

    @property
    def table_columns(self) -> tuple[str, ...]:
        return (*self.columns, self.valid_from, self.valid_to)

    @classmethod
    def of(cls, model: Any, columns: list[str] | tuple[str, ...], types: dict[str, str] | None = None) -> "Scd2Spec":
        """The spec of ``model`` (an SCD type 2 kind) whose query produces ``columns`` (of ``types``, by name, when
        known); refuses what cannot work.

        >>> from pyspark_incr.model.definition import parse_model
        >>> m = parse_model("MODEL (name a.b, kind SCD_TYPE_2 (unique_key ID)); SELECT 1 AS id, 2 AS updated_at")
        >>> Scd2Spec.of(m, ["id", "updated_at"]).unique_key
        ('id',)
        >>> Scd2Spec.of(m, ["id"])
        Traceback (most recent call last):
        ...
        pyspark_incr.errors.ModelDefinitionError: model a.b: updated_at_name 'updated_at' is not a column of the query's output (id); select it or set updated_at_name
        """
        kind, where = model.kind, f"model {model.name}"
        by_name = {c.lower(): c for c in columns}

        def find(name: str, what: str, fix: str) -> str:
            if name.lower() not in by_name:
                raise ModelDefinitionError(
                    f"{where}: {what} {name!r} is not a column of the query's output ({', '.join(columns)}); {fix}")
            return by_name[name.lower()]

        for column in columns:
            if column.lower().startswith(RESERVED):
                raise ModelDefinitionError(f"{where}: column {column!r}: names starting with {RESERVED} are reserved")
        for managed in (kind.valid_from_name, kind.valid_to_name):
            if managed.lower() in by_name:
                raise ModelDefinitionError(
                    f"{where}: the query's output has a column {managed!r}, which SCD type 2 adds itself; "
                    "rename the column or set valid_from_name / valid_to_name")
        if kind.valid_from_name.lower() == kind.valid_to_name.lower():
            raise ModelDefinitionError(f"{where}: valid_from_name and valid_to_name are both {kind.valid_from_name!r}")
        time_type = kind.time_data_type.upper()
        if time_type not in TIME_TYPES:
            raise ModelDefinitionError(
                f"{where}: time_data_type {kind.time_data_type} is not one of {', '.join(TIME_TYPES)}")
        key = tuple(find(k, "unique_key", "fix unique_key") for k in kind.unique_key)
        common = dict(columns=tuple(columns), unique_key=key, valid_from=kind.valid_from_name,
                      valid_to=kind.valid_to_name, time_type=time_type,
                      invalidate_hard_deletes=kind.invalidate_hard_deletes,
                      key_types=tuple(types[k] for k in key) if types and all(k in types for k in key) else ())
        if hasattr(kind, "updated_at_name"):
            updated_at = find(kind.updated_at_name, "updated_at_name", "select it or set updated_at_name")
            return cls(**common, updated_at=updated_at, updated_at_as_valid_from=kind.updated_at_as_valid_from)
        checked = tuple(columns) if kind.columns == ("*",) else tuple(
            find(c, "columns entry", "fix columns") for c in kind.columns)
        return cls(**common, check_columns=checked, execution_time_as_valid_from=kind.execution_time_as_valid_from)
