"""CALL procedures: one module per procedure group, all found through :data:`REGISTRY`."""

from pyspark_incr.procedures.registry import REGISTRY, dispatch, encode_value, procedure
from pyspark_incr.procedures.spec import Column, Param, ProcedureSpec, registry_json

__all__ = ["REGISTRY", "dispatch", "encode_value", "procedure", "Column", "Param", "ProcedureSpec", "registry_json"]
