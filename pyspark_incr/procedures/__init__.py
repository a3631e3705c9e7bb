"""CALL procedures: one module per procedure group, all found through :data:`REGISTRY`."""

from pyspark_incr.procedures.registry import REGISTRY, dispatch, encode_value, procedure
from pyspark_incr.procedures.spec import Column, Param, ProcedureSpec, registry_json


def load_all() -> None:
    """Import every procedure module so that each registers itself."""
    from pyspark_incr.procedures import audit, environments, explain, history, janitor, meta, models, planning, running  # noqa: F401
    from pyspark_incr.procedures import testing  # noqa: F401  (incr.test: unit tests)
    from pyspark_incr.procedures import adopt  # noqa: F401  (incr.adopt, incr.adopt_sqlmesh)
    from pyspark_incr.procedures import compare  # noqa: F401  (incr.table_diff)
    from pyspark_incr.procedures import lineage  # noqa: F401  (incr.lineage)


__all__ = ["REGISTRY", "dispatch", "encode_value", "load_all", "procedure", "Column", "Param", "ProcedureSpec", "registry_json"]
