"""pyspark-incr as a user installs it: the wheel ``python -m build`` makes, in a fresh venv, without a JDK.

``build_wheel`` builds from the checkout exactly as a release would (an sdist, then
the wheel from it, in an isolated build environment). ``Install.create`` makes a venv
outside the checkout and pip-installs that wheel into it, optionally with a given
pyspark. ``Install.env`` is the environment to run it in: the venv first on the
PATH, then a directory holding every command of the machine except the JDK's
compiler tools, no ``JAVA_HOME``, and an empty jar cache, so nothing can compile
the shim and nothing from the checkout can be imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: The JDK's tools a Java runtime does not have.
JDK_ONLY = {"javac", "jar", "jarsigner", "javadoc", "jshell", "jlink", "jpackage", "jdeps", "jmod", "jdeprscan"}


def build_wheel(out: Path) -> Path:
    """``python -m build`` of the checkout into ``out``; the wheel's path."""
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
                          capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(f"python -m build failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    wheels = sorted(Path(out).glob("pyspark_incr-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"python -m build left {len(wheels)} wheels in {out}")
    return wheels[0]


def runtime_only_path(directory: Path) -> Path:
    """A directory of links to every command on this PATH except the JDK's compiler tools."""
    directory.mkdir(parents=True, exist_ok=True)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not Path(folder).is_dir() or Path(folder).resolve() == Path(sys.executable).parent.resolve():
            continue
        for command in Path(folder).iterdir():
            link = directory / command.name
            if command.name in JDK_ONLY or link.exists() or link.is_symlink() or not os.access(command, os.X_OK):
                continue
            link.symlink_to(command)
    return directory


@dataclass(frozen=True)
class Install:
    """A venv holding the installed wheel, and the directories its runs may use."""

    venv: Path
    bin_path: Path
    cache: Path

    @classmethod
    def create(cls, root: Path, wheel: Path, pyspark: str | None = None) -> "Install":
        """A fresh venv under ``root`` with ``wheel`` installed (and ``pyspark==<pyspark>`` when given)."""
        root = Path(root)
        venv = root / "venv"
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=300)
        wanted = [str(wheel), *([f"pyspark=={pyspark}"] if pyspark else [])]
        done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *wanted],
                              capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"pip install {' '.join(wanted)} failed:\n{done.stderr[-3000:]}")
        return cls(venv, runtime_only_path(root / "runtime-bin"), root / "jar-cache")

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def command(self, name: str) -> Path:
        """A console script of the venv (``pyspark-incr``, pyspark's ``spark-sql``, ``spark-submit``)."""
        return self.venv / "bin" / name

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a run: this venv, a Java runtime and no compiler, nothing of the checkout."""
        self.cache.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items()
               if k not in ("JAVA_HOME", "PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON", "SPARK_HOME")}
        env.update(PATH=f"{self.venv / 'bin'}{os.pathsep}{self.bin_path}", PYSPARK_INCR_CACHE=str(self.cache),
                   **extra)
        return env

    def run(self, argv: list[str], cwd: Path, timeout: float = 900, **extra: str) -> subprocess.CompletedProcess:
        """Run ``argv`` in this install's environment from ``cwd``."""
        return subprocess.run(argv, cwd=cwd, env=self.env(**extra), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def version(self, package: str) -> str:
        """The installed version of ``package`` in the venv."""
        done = subprocess.run([str(self.python), "-c", f"import {package}; print({package}.__version__)"],
                              capture_output=True, text=True, check=True, env=self.env(), cwd=self.venv)
        return done.stdout.strip()


def lowest_declared_pyspark() -> str:
    """The lowest pyspark pyproject.toml declares, as three numbers: what the wheel's build hook compiles against."""
    import importlib.util
    import tomllib

    spec = importlib.util.spec_from_file_location("_hatch_build", REPO / "hatch_build.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook.lowest_pyspark(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"])
