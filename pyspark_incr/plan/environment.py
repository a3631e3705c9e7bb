"""Where each environment keeps a model: ``prod`` uses the model's own name, ``X`` uses ``schema__X``."""

from __future__ import annotations

import re

from sqlglot import exp

from pyspark_incr.errors import ArgumentError

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
    schema, name = model_name.split(".")
    if env != PROD:
        schema = f"{schema}__{env}"
    return exp.table_(name, db=schema, quoted=True)
