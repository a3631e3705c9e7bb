"""Loading a bench/ script as a module, for tests of its pure parts (bench/ is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load(name: str) -> ModuleType:
    """``bench/<name>.py`` (``name`` may be ``peers/common``) as the module ``bench_<its stem>``, registered so
    dataclasses and pickling find it."""
    module_name = f"bench_{Path(name).name}"
    spec = importlib.util.spec_from_file_location(module_name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
