"""The procedure reference (docs/procedures.md), generated from the registry so it cannot drift.

Regenerate with ``python -m pyspark_incr.procedures.reference > docs/procedures.md``;
a test fails when the file and the registry disagree.
"""

from __future__ import annotations

from pyspark_incr.procedures import REGISTRY, load_all
from pyspark_incr.procedures.spec import ProcedureSpec

HEADER = """# Procedure reference

Every procedure is called from Spark SQL as `CALL incr.<name>(...)`, with
positional or named (`name => value`) arguments; omitted optional arguments take
their default. Each returns rows with the schema below. Times are UTC.
`SHOW PROCEDURES IN incr` lists them and `DESCRIBE PROCEDURE incr.<name>` shows
the same parameters from inside Spark.

This file is generated from the procedure registry
(`python -m pyspark_incr.procedures.reference > docs/procedures.md`).
"""


def markdown() -> str:
    """The whole reference as Markdown."""
    load_all()
    return HEADER + "".join(_section(REGISTRY[name]) for name in sorted(REGISTRY))


def _section(spec: ProcedureSpec) -> str:
    lines = [f"\n## incr.{spec.name}\n", spec.description, ""]
    if spec.params:
        lines += ["| parameter | type | default | meaning |", "|---|---|---|---|"]
        for p in spec.params:
            default = "required" if p.required else f"`{p.sql_default}`"
            lines.append(f"| `{p.name}` | {p.type} | {default} | {p.description} |")
    else:
        lines.append("No parameters.")
    lines += ["", "Returns:", "", "| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{c.name}` | {c.type} | {c.description} |" for c in spec.output]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
