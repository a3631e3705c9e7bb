"""Wheel build hook: compile the JVM shim into the wheel, against the lowest pyspark we declare.

A wheel installed on a cluster must run on a Java runtime without a compiler, so
the jar is built here, once, as Java 17 bytecode. It is compiled against the
lowest pyspark of ``project.dependencies`` (the hook asks for exactly that
version as a build dependency), so it links against every version we declare;
the test suite runs the quickstart on the lowest and the highest.
An editable install (a checkout) builds no jar: it compiles the sources on first use.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ROOT = Path(__file__).resolve().parent


class ShimJarHook(BuildHookInterface):
    """Adds ``pyspark_incr/_jvm/pyspark-incr-shim.jar`` to a standard (non-editable) wheel."""

    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        """``pyspark==<lowest declared>``: the classpath the shim compiles against."""
        return [f"pyspark=={lowest_pyspark(self.metadata.core.dependencies)}"]

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Compile the jar and place it in the wheel (nothing for an editable wheel)."""
        if self.target_name != "wheel" or version == "editable":
            return
        jarbuild = _load_jarbuild()
        import pyspark

        wanted = lowest_pyspark(self.metadata.core.dependencies)
        if pyspark.__version__ != wanted:
            raise RuntimeError(
                f"Cannot build the pyspark-incr wheel: the shim must compile against pyspark {wanted} (the lowest "
                f"declared), this build environment has {pyspark.__version__}; build with `python -m build` "
                "(an isolated environment), not --no-isolation"
            )
        javac = jarbuild.find_javac()
        if javac is None:
            raise RuntimeError("Cannot build the pyspark-incr wheel: `javac` (a JDK 17+) is needed to compile the shim")
        self._scratch = tempfile.mkdtemp(prefix="pyspark-incr-wheel-")
        out = Path(self._scratch) / jarbuild.PACKAGED_NAME
        failure = jarbuild.compile_jar(javac, ROOT / "jvm-shim" / "src", Path(pyspark.__file__).parent / "jars", out)
        if failure is not None:
            raise RuntimeError(f"Cannot build the pyspark-incr wheel: compiling the shim failed:\n{failure}")
        build_data["force_include"][str(out)] = f"pyspark_incr/_jvm/{jarbuild.PACKAGED_NAME}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        """Remove the compiled jar's scratch directory once the wheel holds it."""
        scratch = getattr(self, "_scratch", None)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def lowest_pyspark(dependencies: list[str]) -> str:
    """The version in the ``pyspark>=X`` requirement, as three numbers (``4.1`` -> ``4.1.0``)."""
    from packaging.requirements import Requirement

    for line in dependencies:
        requirement = Requirement(line)
        if requirement.name == "pyspark":
            lows = [s.version for s in requirement.specifier if s.operator == ">="]
            if len(lows) == 1:
                parts = lows[0].split(".")
                return ".".join((parts + ["0", "0"])[:3])
    raise RuntimeError("Cannot build the pyspark-incr wheel: project.dependencies needs one `pyspark>=X` bound")


def _load_jarbuild() -> Any:
    """``pyspark_incr/bridge/jarbuild.py`` by path: importing the package would need its dependencies."""
    path = ROOT / "pyspark_incr" / "bridge" / "jarbuild.py"
    spec = importlib.util.spec_from_file_location("_pyspark_incr_jarbuild", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
