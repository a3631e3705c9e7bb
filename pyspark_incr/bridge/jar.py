"""The JVM shim jar, compiled on first use and cached by source hash.

Compiling against the installed ``pyspark/jars`` (instead of shipping a binary)
keeps the shim in step with whatever Spark version is installed, and makes the
jar a cache, never a manual build step. The hash covers the sources and the
Spark version, so an upgrade of either rebuilds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pyspark

from pyspark_incr.errors import BridgeError

_PACKAGE = Path(__file__).resolve().parent.parent
_built: dict[tuple[Path, Path], Path] = {}


def shim_jar() -> Path:
    """Path of the compiled shim jar, building it when the cache has none for these sources."""
    src, cache = source_dir(), cache_dir()
    known = _built.get((src, cache))
    if known is not None and known.is_file():
        return known
    jar = cache / f"pyspark-incr-shim-{source_hash(src)}.jar"
    if not jar.is_file():
        _build(src, jar)
    _built[(src, cache)] = jar
    return jar


def source_dir() -> Path:
    """The shim's Java sources: the checkout's ``jvm-shim/src``, else the copy inside the wheel."""
    for candidate in (_PACKAGE.parent / "jvm-shim" / "src", _PACKAGE / "_jvm" / "src"):
        if candidate.is_dir():
            return candidate
    raise BridgeError(f"pyspark-incr: the JVM shim sources are missing (looked in {_PACKAGE}); reinstall pyspark-incr")


def cache_dir() -> Path:
    """``$PYSPARK_INCR_CACHE/jars`` or ``~/.cache/pyspark-incr/jars``."""
    root = os.environ.get("PYSPARK_INCR_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "pyspark-incr") / "jars"


def pyspark_jars() -> Path:
    """The jars of the installed pyspark (the classpath we compile against)."""
    return Path(pyspark.__file__).resolve().parent / "jars"


def source_hash(src: Path) -> str:
    """sha256 of the pyspark version and every source's relative path and contents (16 hex digits)."""
    digest = hashlib.sha256(f"pyspark {pyspark.__version__}\n".encode())
    for path in sorted(src.rglob("*.java")):
        digest.update(path.relative_to(src).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _tool(name: str) -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / name).is_file():
        return str(Path(java_home) / "bin" / name)
    found = shutil.which(name)
    if found is None:
        raise BridgeError(
            f"pyspark-incr: `{name}` not found. The small JVM shim is compiled on first use, "
            "so a JDK 17+ is needed (not just a JRE): install one or set JAVA_HOME."
        )
    return found


def _build(src: Path, jar: Path) -> None:
    """Compile into a temp dir, package, then rename into place (atomic, so concurrent builds are safe)."""
    javac = _tool("javac")
    jar.parent.mkdir(parents=True, exist_ok=True)
    sources = [str(p) for p in sorted(src.rglob("*.java"))]
    with tempfile.TemporaryDirectory(prefix="pyspark-incr-shim-") as tmp:
        classes = Path(tmp) / "classes"
        cmd = [javac, "-nowarn", "-cp", str(pyspark_jars() / "*"), "--release", "17", "-d", str(classes), *sources]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise BridgeError(f"pyspark-incr: compiling the JVM shim failed ({javac}):\n{done.stderr.strip()}")
        fd, partial = tempfile.mkstemp(prefix=".building-", suffix=".jar", dir=jar.parent)
        os.close(fd)
        try:
            _package(classes, Path(partial))
            os.replace(partial, jar)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)


def _package(classes: Path, out: Path) -> None:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: pyspark-incr\n\n")
        for path in sorted(classes.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(classes).as_posix())
