"""Exact identifiers in a query, and the hits that contain them.

A user who types ``ERR_4021``, ``X-570``, ``ICT-38`` or ``v4.1.3`` wants the passage
holding that identifier, whatever the embedding thinks. BM25 already ranks it first (the
identifier is indexed whole, with a high IDF), but fusion with the vector leg can push it
down a place or two. After fusion, hits containing the query's identifiers are therefore
moved ahead of hits that do not (stable: the fused order holds within each group).

An identifier is a query token with a digit and a ``- _ . / :`` joint whose letters are all
upper case (``X-570``, ``HP-E14``, ``МР-08``), or one with an underscore (``ERR_4021``), or
a version or address of three or more dotted numbers (``v2.3.1``, ``192.168.0.1``).
Lower-case hyphenations (``7-day-old``, ``hiv-1``) and plain numbers are not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ..core.types import Hit

_TOKEN = re.compile(r"[^\s,;:!?()\[\]{}\"'«»„“”‘’]+")
_VERSION = re.compile(r"v?\d+(?:\.\d+){2,}", re.IGNORECASE)


def query_identifiers(query: str) -> list[str]:
    """The exact identifiers typed in ``query`` (see the module text), casefolded."""
    out: list[str] = []
    for raw in _TOKEN.findall(query):
        tok = raw.strip(".-/")
        if not any(c.isdigit() for c in tok):
            continue
        letters = [c for c in tok if c.isalpha()]
        joined = any(c in "-_./:" for c in tok)
        if (
            ("_" in tok and letters)
            or _VERSION.fullmatch(tok)
            or (joined and letters and all(c.isupper() for c in letters))
        ):
            key = tok.casefold()
            if key not in out:
                out.append(key)
    return out


def promote_identifiers(query: str, hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` with those containing more of the query's identifiers first (stable);
    unchanged when the query has none. Ranks are renumbered."""
    idents = query_identifiers(query)
    if not idents or not hits:
        return list(hits)
    patterns = [re.compile(r"(?<!\w)" + re.escape(i) + r"(?!\w)") for i in idents]
    folded = [f"{h.title}\n{h.text}".casefold() for h in hits]
    counts = [sum(p.search(text) is not None for p in patterns) for text in folded]
    if not any(counts):
        return list(hits)
    order = sorted(range(len(hits)), key=lambda i: -counts[i])
    return [replace(hits[i], rank=r) for r, i in enumerate(order, start=1)]
