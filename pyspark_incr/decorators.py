"""What a project's Python files import when written for pyspark-incr rather than SQLMesh.

``from pyspark_incr.decorators import macro, model, signal`` is the same as SQLMesh's
``from sqlmesh import macro, model, signal`` (which also works here, SQLMesh installed or not).
A module of its own because ``pyspark_incr.model`` is the name of a package.
"""

from pyspark_incr.model.pyfiles import macro, model, signal

__all__ = ["macro", "model", "signal"]
