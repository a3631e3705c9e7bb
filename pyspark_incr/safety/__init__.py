"""Incremental safety: what a time-sliced run of a model may and may not do."""
