"""Catalog-resident state: models, environments, intervals and runs, as Parquet tables."""

from pyspark_incr.state.store import EnvEntry, StateStore

__all__ = ["EnvEntry", "StateStore"]
