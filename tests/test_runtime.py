"""What calls reuse lives on one object per SparkContext, not in module globals (docs/architecture.md#the-runtime)."""

from __future__ import annotations

import ast
from pathlib import Path

from pyspark_incr.runtime import Runtime, discard, runtime
from pyspark_incr.state.store import StateStore, file_cache, table_location
from pyspark_incr.state import tables as t

PACKAGE = Path(__file__).resolve().parents[1] / "pyspark_incr"

#: Module-level containers that are not an application's (see the architecture page for why each stays).
PROCESS_WIDE = {
    "pyspark_incr/writers/base.py": {"WRITERS"},
    "pyspark_incr/procedures/registry.py": {"REGISTRY"},
    "pyspark_incr/state/compact.py": {"_FOLDS"},
    "pyspark_incr/run/progress.py": {"_listeners"},
    "pyspark_incr/bridge/jar.py": {"_built"},
    "pyspark_incr/model/macro_functions.py": {"BUILTINS"},
    "pyspark_incr/model/pyfiles.py": {"_extra"},
    "pyspark_incr/project/lint_rules.py": {"REGISTRY"},  # the lint rules' classes, as WRITERS holds the writers
    "pyspark_incr/project/dag.py": {"_ORDERS"},  # orders of immutable models, by their identity: a memoised sort
}
_MUTABLE_CALLS = {"dict", "set", "list", "defaultdict", "OrderedDict", "WeakValueDictionary", "WeakKeyDictionary"}


def _module_containers(path: Path) -> set[str]:
    """Names bound at module level to a new, empty mutable container."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        empty = isinstance(value, (ast.Dict, ast.List, ast.Set)) and not getattr(value, "keys", getattr(value, "elts", None))
        call = (isinstance(value, ast.Call) and not value.args
                and getattr(value.func, "id", getattr(value.func, "attr", "")) in _MUTABLE_CALLS)
        if empty or call:
            found |= {target.id for target in targets if isinstance(target, ast.Name)}
    return found


def test_no_module_keeps_an_applications_cache_in_a_global():
    kept = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        extra = _module_containers(path) - PROCESS_WIDE.get(rel, set()) - {"__all__"}
        if extra:
            kept[rel] = sorted(extra)
    assert not kept, f"module-level caches (move them onto pyspark_incr.runtime.Runtime): {kept}"


def test_a_module_global_cache_is_noticed(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import threading\n_seen: dict[str, int] = {}\n_names = set()\nRULES = {'a': 1}\nLETTERS = set('ab')\nlock = threading.Lock()\n")
    assert _module_containers(probe) == {"_seen", "_names"}


def test_one_runtime_per_spark_context_holds_the_state_caches(spark):
    store = StateStore(spark)
    store.read(t.MODELS)
    rt = runtime(spark)

    assert store.runtime is rt and isinstance(rt, Runtime)
    assert rt.app_id == spark.sparkContext.applicationId
    assert store.schema in rt.ensured
    assert (store.schema, t.MODELS.name) in rt.roots  # from the one describe of the state tables, however made
    location = table_location(spark, store.schema, t.MODELS.name)
    assert rt.locations[(store.schema, t.MODELS.name)] is location
    assert rt.state_files[(store.schema, t.MODELS.name)] is file_cache(spark, store.schema, t.MODELS)


def test_a_discarded_runtime_starts_again_empty_and_reads_state_the_same(spark):
    store = StateStore(spark)
    before = store.read(t.MODELS)
    old = runtime(spark)
    discard(spark)
    try:
        fresh = runtime(spark)
        assert fresh is not old and not fresh.ensured and not fresh.state_files
        assert StateStore(spark).read(t.MODELS).equals(before)
    finally:
        vars(spark.sparkContext)["_incr_runtime"] = old
