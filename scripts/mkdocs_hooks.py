"""mkdocs hooks: the site's procedure reference comes from the procedure registry, not from the checked-in file.

``docs/procedures.md`` stays in the repository for readers on GitHub (a test fails
when it drifts); the site renders ``pyspark_incr.procedures.reference.markdown()``
itself, so it always shows the procedures of the code it was built from.
"""

from __future__ import annotations

from typing import Any

#: Pages whose Markdown is generated at build time, by their path inside docs/.
GENERATED = {"procedures.md": "pyspark_incr.procedures.reference"}


def on_page_read_source(page: Any, config: Any) -> str | None:
    """The generated Markdown of a page listed in ``GENERATED``; None lets mkdocs read the file."""
    module = GENERATED.get(page.file.src_uri)
    if module is None:
        return None
    from importlib import import_module

    return import_module(module).markdown()
