"""Where models live: each version in a physical table, each environment as views over them.

An environment shows model ``db.events`` as a view: ``db.events`` in ``prod``,
``db__X.events`` in environment ``X``. The view selects from the physical
table of the version the environment holds, ``<physical schema>.db__events__<version>``,
which any environment holding that version shares: promoting a version is a
view swap, never a recomputation.
"""

from __future__ import annotations

import re
from functools import lru_cache

from sqlglot import exp

from pyspark_incr.errors import ArgumentError
from pyspark_incr.sqltext import table_sql

PROD = "prod"
_ENV_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")


def check_env(env: str | None) -> str:
    """A valid environment name, lowercased.

    >>> check_env("Dev_1")
    'dev_1'
    >>> check_env("dev; DROP")
    Traceback (most recent call last):
    ...
    pyspark_incr.errors.ArgumentError: env 'dev; DROP' is not a valid environment name; use letters, digits and underscores, starting with a letter (e.g. 'prod', 'dev', 'feature_x')
    """
    if env is None or not _ENV_NAME.fullmatch(env):
        raise ArgumentError(
            f"env {env!r} is not a valid environment name; use letters, digits and underscores, "
            "starting with a letter (e.g. 'prod', 'dev', 'feature_x')"
        )
    return env.lower()


def table_for(model_name: str, env: str) -> exp.Table:
    """The catalog table (or view) holding ``model_name`` in ``env``.

    >>> table_for("sales.daily", "prod").sql("spark"), table_for("sales.daily", "dev").sql("spark")
    ('`sales`.`daily`', '`sales__dev`.`daily`')
    """
    return exp.table_(model_name.split(".")[1], db=schema_for(model_name, env), quoted=True)


@lru_cache(maxsize=16384)
def shown(model_name: str, env: str) -> tuple[exp.Table, str]:
    """:func:`table_for` and its Spark SQL, made once per model and environment: a warm process's plans share them
    (as ``EnvEntry.table``). Shared: copy the table before changing it, as everything embedding it does.

    >>> shown("sales.daily", "dev")[1], shown("sales.daily", "dev") is shown("sales.daily", "dev")
    ('`sales__dev`.`daily`', True)
    """
    table = table_for(model_name, env)
    return table, table_sql(table)


def schema_for(model_name: str, env: str) -> str:
    """The schema of :func:`table_for` (no table built: a plan asks it of every model).

    >>> schema_for("sales.daily", "prod"), schema_for("sales.daily", "dev")
    ('sales', 'sales__dev')
    """
    schema = model_name.split(".")[0]
    return schema if env == PROD else f"{schema}__{env}"


def physical_table(model_name: str, version: str, schema: str) -> exp.Table:
    """The physical table (or view) of one version of ``model_name`` in the physical ``schema``.

    >>> physical_table("sales.daily", "0123456789abcdef", "incr_physical").sql("spark")
    '`incr_physical`.`sales__daily__0123456789`'
    """
    db, name = model_name.split(".")
    return exp.table_(f"{db}__{name}__{version[:10]}", db=schema, quoted=True)
