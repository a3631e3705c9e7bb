"""The options of the CLI's procedure verbs, derived from the procedure registry so they cannot drift.

Each parameter of ``incr.<verb>`` becomes an option of the same name (``execution_time`` ->
``--execution-time``): a required one is a positional argument, a boolean a flag with its
``--no-`` form, an int an integer option. Left out, an argument is not passed, and the
procedure's own default (or session setting) applies, as in SQL.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

#: Verbs that are CALLs, and the procedure each calls (its name but where SQLMesh's differs).
VERBS = {
    "plan": "plan", "apply": "apply", "run": "run", "status": "status", "render": "render", "history": "history",
    "audit": "audit", "restate": "restate", "janitor": "janitor", "environments": "environments",
    "test": "test", "adopt": "adopt", "adopt-sqlmesh": "adopt_sqlmesh",
    "table-diff": "table_diff", "lineage": "lineage",
}
#: The verbs that build: a progress bar follows the executor while they run.
BUILDING = frozenset({"plan", "apply", "run", "restate"})
#: ``status`` draws a timeline from these arguments only (``pyspark_incr.cli_status``).
STATUS_PARAMS = ("model", "env", "execution_time")
_TYPES = {"int": int, "bigint": int, "double": float}


def procedure_specs() -> dict[str, Any]:
    """Every registered procedure's spec by name (importing the procedure modules registers them)."""
    from pyspark_incr.procedures import REGISTRY, load_all

    load_all()
    return REGISTRY


def add_params(parser: argparse.ArgumentParser, spec: Any, only: tuple[str, ...] | None = None) -> None:
    """Give ``parser`` one argument per parameter of ``spec`` (those in ``only``, when given)."""
    for param in spec.params:
        if only is not None and param.name not in only:
            continue
        text = _help(param)
        if param.required:
            parser.add_argument(param.name, metavar=param.name.upper(), help=text)
        elif param.type == "boolean":
            parser.add_argument(_flag(param.name), dest=param.name, action=argparse.BooleanOptionalAction,
                                default=None, help=text)
        else:
            parser.add_argument(_flag(param.name), dest=param.name, type=_TYPES.get(param.type, str), default=None,
                                metavar=param.name.upper(), help=text)


def call_args(spec: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The CALL's arguments from parsed options: those given, a project as an absolute path."""
    values = {p.name: getattr(args, p.name, None) for p in spec.params}
    if values.get("project"):
        # the embedded session resolves against its own working directory; the user meant theirs
        values["project"] = str(Path(values["project"]).resolve())
    return {name: value for name, value in values.items() if value is not None}


def option_names(spec: Any) -> list[str]:
    """How each parameter of ``spec`` is written on the command line (``--execution-time``, ``MODEL``)."""
    return [p.name.upper() if p.required else _flag(p.name) for p in spec.params]


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _help(param: Any) -> str:
    text = param.description
    if not param.required and param.default is not None:
        text += f" Default: {str(param.default).lower() if isinstance(param.default, bool) else param.default}."
    return text.replace("%", "%%")  # argparse formats help strings with %
