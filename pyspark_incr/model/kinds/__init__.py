"""Model kinds as frozen records, looked up by name in :data:`KINDS`.

Each kind reads its own properties from its property table; writers are found
separately by kind name (:mod:`pyspark_incr.writers`).
"""

from __future__ import annotations

import difflib

from pyspark_incr.errors import ModelDefinitionError
from pyspark_incr.model.block import KindSpec
from pyspark_incr.model.kinds.base import KindBase
from pyspark_incr.model.kinds.cursor import IncrementalByCursorKind
from pyspark_incr.model.kinds.partition import IncrementalByPartitionKind
from pyspark_incr.model.kinds.scd import ScdType2ByColumnKind, ScdType2ByTimeKind, ScdType2Kind
from pyspark_incr.model.kinds.simple import (
    EmbeddedKind, ExternalKind, FullKind, IncrementalUnmanagedKind, SeedKind, ViewKind,
)
from pyspark_incr.model.kinds.time_range import IncrementalByTimeRangeKind
from pyspark_incr.model.kinds.unique_key import IncrementalByUniqueKeyKind


KINDS: dict[str, type[KindBase]] = {
    k.name: k
    for k in (
        FullKind, ViewKind, EmbeddedKind, IncrementalUnmanagedKind, SeedKind, ExternalKind,
        IncrementalByTimeRangeKind, IncrementalByUniqueKeyKind, ScdType2Kind, ScdType2ByTimeKind,
        ScdType2ByColumnKind, IncrementalByCursorKind, IncrementalByPartitionKind,
    )
}


def kind_from_spec(spec: KindSpec, where: str, dialect: str = "spark") -> KindBase:
    """The kind record for ``kind NAME (...)``; unknown names list the known ones."""
    cls = KINDS.get(spec.name)
    if cls is None:
        hint = difflib.get_close_matches(spec.name, KINDS, n=1)
        also = f" Did you mean {hint[0]}?" if hint else ""
        raise ModelDefinitionError(
            f"{where}: {spec.at}: unknown model kind {spec.name!r}.{also} Kinds: {', '.join(sorted(KINDS))}"
        )
    return cls.from_spec(spec, where, dialect)


__all__ = ["KINDS", "KindBase", "kind_from_spec", *[c.__name__ for c in KINDS.values()]]
