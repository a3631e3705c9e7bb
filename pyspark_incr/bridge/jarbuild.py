"""Compiling the JVM shim into a jar: one implementation for the wheel's build and a checkout.

Standard library only, and importing nothing of pyspark-incr: the wheel's build
hook (``hatch_build.py``) loads this file by its path, in a build environment
that has pyspark's jars and none of our dependencies. Failures come back as
text rather than as an exception so that each caller raises its own kind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

#: Java bytecode level of the jar: the oldest Java that Spark 4 runs on.
RELEASE = "17"
#: The jar's name inside the wheel (``pyspark_incr/_jvm/``).
PACKAGED_NAME = "pyspark-incr-shim.jar"


def find_javac() -> str | None:
    """``$JAVA_HOME/bin/javac``, else ``javac`` on the PATH, else None (a Java runtime without a JDK)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "javac").is_file():
        return str(Path(java_home) / "bin" / "javac")
    return shutil.which("javac")


def compile_jar(javac: str, sources: Path, classpath: Path, jar: Path) -> str | None:
    """Compile every ``*.java`` under ``sources`` against ``classpath/*`` into ``jar``; the error text, or None.

    Compiles into a temporary directory and renames the finished jar into
    place, so two processes building the same jar at once both leave a valid one.
    """
    files = [str(p) for p in sorted(sources.rglob("*.java"))]
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pyspark-incr-shim-") as tmp:
        classes = Path(tmp) / "classes"
        cmd = [javac, "-nowarn", "-cp", str(classpath / "*"), "--release", RELEASE, "-d", str(classes), *files]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            return done.stderr.strip() or done.stdout.strip() or f"{javac} exited with {done.returncode}"
        fd, partial = tempfile.mkstemp(prefix=".building-", suffix=".jar", dir=jar.parent)
        os.close(fd)
        try:
            _package(classes, Path(partial))
            os.replace(partial, jar)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
    return None


def _package(classes: Path, out: Path) -> None:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: pyspark-incr\n\n")
        for path in sorted(classes.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(classes).as_posix())
