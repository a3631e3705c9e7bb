"""The text of result rows (a plan's ``reason``, a step's ``message``) as whole sentences.

Reasons and messages are put together from phrases many modules write ("new model", a
writer's why-stale, a safety refusal, Spark's error), any of which may be empty or end in a
separator. Joining them here, and only here, keeps a row from reading ``new model; ; refused``:
every part becomes a sentence of its own, empty parts vanish, and a list inside one sentence
keeps only the items that say something.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: A first word that is a plain word (``new``, ``non-breaking``), not a name (``db.t``, ``batch_size``, `` `t` ``):
#: only a plain word is capitalized, a name keeps its case.
_PLAIN_WORD = re.compile(r"[a-z]+(?:-[a-z]+)*(?=[\s:,;(]|$)")
#: What a fragment may dangle at either end once its neighbours are gone.
_SEPARATORS = " ;,:"
_ENDINGS = (".", "!", "?")


def sentence(text: str | None) -> str:
    """``text`` as one sentence: whitespace collapsed, dangling separators dropped, a plain first word
    capitalized, a closing period; ``""`` when nothing is left.

    >>> sentence("new model; "), sentence(" ; "), sentence("db.t is missing: rebuild"), sentence("Done.")
    ('New model.', '', 'db.t is missing: rebuild.', 'Done.')
    """
    text = " ".join((text or "").split()).strip(_SEPARATORS)
    if not text:
        return ""
    if _PLAIN_WORD.match(text):
        text = text[0].upper() + text[1:]
    return text if text.endswith(_ENDINGS) else text + "."


def sentences(*parts: str | None) -> str:
    """Each non-empty part as a sentence of its own, in order, separated by one space.

    >>> sentences("new model", "", None, "refused by the incremental safety check;")
    'New model. Refused by the incremental safety check.'
    """
    return " ".join(s for s in map(sentence, parts) if s)


def clauses(parts: Iterable[str | None], separator: str = "; ") -> str:
    """The non-empty parts of a list inside one sentence, trimmed and joined by ``separator``.

    >>> clauses(["adds column c int", "", " drops column b string;", None])
    'adds column c int; drops column b string'
    """
    kept = []
    for part in parts:
        text = " ".join((part or "").split()).strip(_SEPARATORS)
        if text.endswith(".") and not text.endswith("..."):
            text = text[:-1].rstrip(_SEPARATORS)
        if text:
            kept.append(text)
    return separator.join(kept)
