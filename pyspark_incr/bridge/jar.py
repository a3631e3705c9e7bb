"""The JVM shim jar: the one inside the wheel, or, in a checkout, compiled on first use.

An installed wheel carries the jar (``pyspark_incr/_jvm/pyspark-incr-shim.jar``),
compiled when the wheel was built against the lowest pyspark it supports, as
Java 17 bytecode: a machine with a Java runtime and no compiler runs it, from a
read-only site-packages. A checkout has the sources instead (``jvm-shim/src``),
compiled against the installed ``pyspark/jars`` on first use and cached by a hash
of the sources and the Spark version, so an edit or an upgrade rebuilds and the
jar is never a manual build step.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyspark

from pyspark_incr.bridge.jarbuild import PACKAGED_NAME, compile_jar, find_javac
from pyspark_incr.errors import BridgeError

_PACKAGE = Path(__file__).resolve().parent.parent
_built: dict[tuple[Path, Path], Path] = {}


def shim_jar() -> Path:
    """Path of the shim jar: a checkout's sources compiled (once), else the wheel's own jar."""
    src = checkout_sources()
    if src is not None:
        return _checkout_jar(src, cache_dir())
    packaged = packaged_jar()
    if packaged.is_file():
        return packaged
    raise BridgeError(
        f"Cannot find the pyspark-incr JVM shim: neither {packaged} nor the sources of a checkout exist; "
        "reinstall pyspark-incr from its wheel"
    )


def jar_path() -> str:
    """The jar to give Spark (``--jars``, ``spark.jars``, a cluster library), as ``pyspark-incr jar-path`` prints it."""
    return str(shim_jar())


def checkout_sources() -> Path | None:
    """The shim's Java sources when pyspark-incr runs from a checkout (an editable install), else None."""
    src = _PACKAGE.parent / "jvm-shim" / "src"
    return src if src.is_dir() else None


def packaged_jar() -> Path:
    """Where an installed wheel keeps its prebuilt jar."""
    return _PACKAGE / "_jvm" / PACKAGED_NAME


def cache_dir() -> Path:
    """``$PYSPARK_INCR_CACHE/jars`` or ``~/.cache/pyspark-incr/jars`` (a checkout's compiled jars)."""
    root = os.environ.get("PYSPARK_INCR_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "pyspark-incr") / "jars"


def pyspark_jars() -> Path:
    """The jars of the installed pyspark (the classpath a checkout compiles against)."""
    return Path(pyspark.__file__).resolve().parent / "jars"


def source_hash(src: Path) -> str:
    """sha256 of the pyspark version and every source's relative path and contents (16 hex digits)."""
    digest = hashlib.sha256(f"pyspark {pyspark.__version__}\n".encode())
    for path in sorted(src.rglob("*.java")):
        digest.update(path.relative_to(src).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _checkout_jar(src: Path, cache: Path) -> Path:
    known = _built.get((src, cache))
    if known is not None and known.is_file():
        return known
    jar = cache / f"pyspark-incr-shim-{source_hash(src)}.jar"
    if not jar.is_file():
        _build(src, jar)
    _built[(src, cache)] = jar
    return jar


def _build(src: Path, jar: Path) -> None:
    javac = find_javac()
    if javac is None:
        raise BridgeError(
            "Cannot compile the pyspark-incr JVM shim: `javac` not found. A checkout compiles the shim on first "
            "use, so it needs a JDK 17+ (not just a Java runtime): install one or set JAVA_HOME; "
            "an installed wheel needs no compiler"
        )
    failure = compile_jar(javac, src, pyspark_jars(), jar)
    if failure is not None:
        raise BridgeError(f"Cannot compile the pyspark-incr JVM shim ({javac}):\n{failure}")
