"""Citation helpers shared by every generator.

An answer's text carries inline ``[n]`` markers; ``n`` numbers the distinct cited
passages 1..m in order of first citation, and :class:`~ragline.core.types.Citation`
number ``n`` describes that passage. These pure functions build citations from hits,
render cited sentences, and parse, check and renumber markers (e.g. an LLM that cites
hits by their position in the prompt).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..core.types import Citation, Hit

MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
"""An inline citation marker: ``[3]`` or a grouped ``[1, 3]``."""

QUOTE_SEPARATOR = " … "
"""Joins the sentences quoted from one passage when they are not one contiguous quote."""


def citation_from_hit(hit: Hit, number: int, quote: str = "") -> Citation:
    """The :class:`Citation` numbered ``number`` that points at ``hit``'s passage."""
    return Citation(
        number=number,
        chunk_id=hit.chunk_id,
        doc_key=hit.doc_key,
        title=hit.title,
        source=hit.source,
        heading_path=tuple(hit.heading_path),
        page=hit.page,
        quote=quote,
    )


def render_cited(
    segments: Sequence[tuple[str, Hit] | tuple[str, Hit, str]],
) -> tuple[str, tuple[Citation, ...]]:
    """Join ``(sentence, hit)`` pairs into cited text and its citations.

    Each sentence is followed by the marker of its passage; passages (identified by
    ``chunk_id``) are numbered 1..m in order of first citation, and each citation quotes
    the sentences taken from its passage, in the order they were given. A segment may
    carry a third item, the quote to use when the sentence was reworded for reading
    (a table row shown with its column names): quotes stay verbatim.
    """
    numbers: dict[int, int] = {}
    hits: list[Hit] = []
    quotes: list[list[str]] = []
    parts: list[str] = []
    for segment in segments:
        sentence, hit, *rest = segment
        sentence = sentence.strip()
        quote = rest[0].strip() if rest else sentence
        if not sentence:
            continue
        n = numbers.get(hit.chunk_id)
        if n is None:
            n = numbers[hit.chunk_id] = len(hits) + 1
            hits.append(hit)
            quotes.append([])
        if quote not in quotes[n - 1]:
            quotes[n - 1].append(quote)
        parts.append(f"{sentence} [{n}]")
    citations = tuple(
        citation_from_hit(h, i + 1, QUOTE_SEPARATOR.join(q))
        for i, (h, q) in enumerate(zip(hits, quotes))
    )
    return " ".join(parts), citations


def parse_markers(text: str) -> list[int]:
    """Every number cited in ``text``, in order of appearance (repeats kept)."""
    return [int(n) for m in MARKER.finditer(text) for n in m.group(1).split(",")]


def strip_markers(text: str) -> str:
    """``text`` without its citation markers (and the space before each)."""
    return re.sub(r"\s*" + MARKER.pattern, "", text)


def check_citations(text: str, citations: Sequence[Citation]) -> list[str]:
    """Problems with the markers of ``text`` against ``citations``; empty when consistent.

    Consistent means: every marker names an existing citation, every citation is cited,
    and citations are numbered 1..m in order of first citation.
    """
    problems: list[str] = []
    numbers = [c.number for c in citations]
    if numbers != list(range(1, len(citations) + 1)):
        problems.append(f"citations are numbered {numbers}, expected 1..{len(citations)}")
    cited = parse_markers(text)
    known = set(numbers)
    for n in sorted(set(cited) - known):
        problems.append(f"marker [{n}] refers to no citation")
    for n in sorted(known - set(cited)):
        problems.append(f"citation {n} is never cited in the text")
    first_order = list(dict.fromkeys(n for n in cited if n in known))
    if first_order != sorted(first_order):
        problems.append(f"citations are not numbered in order of first citation: {first_order}")
    return problems


def renumber_markers(
    text: str, sources: Sequence[Hit], quotes: Mapping[int, str] | None = None
) -> tuple[str, tuple[Citation, ...]]:
    """Rewrite markers that cite ``sources`` by 1-based position into final citations.

    A generator that showed the model its passages as ``[1]..[k]`` passes the model's
    text and those passages; markers are renumbered 1..m in order of first citation
    (so ``[4] … [2]`` becomes ``[1] … [2]``), markers naming no source are removed,
    and one citation is built per cited source. ``quotes`` optionally maps a source
    position to its quote. Repeated sources (same ``chunk_id``) share one number.
    """
    mapping: dict[int, int] = {}
    by_chunk: dict[int, int] = {}
    cited_hits: list[tuple[Hit, int]] = []

    def number_for(pos: int) -> int | None:
        if not 1 <= pos <= len(sources):
            return None
        if pos not in mapping:
            hit = sources[pos - 1]
            n = by_chunk.get(hit.chunk_id)
            if n is None:
                n = by_chunk[hit.chunk_id] = len(cited_hits) + 1
                cited_hits.append((hit, pos))
            mapping[pos] = n
        return mapping[pos]

    def replace(m: re.Match[str]) -> str:
        nums = [number_for(int(p)) for p in m.group(2).split(",")]
        kept = list(dict.fromkeys(n for n in nums if n is not None))
        if not kept:
            return ""
        return m.group(1) + "".join(f"[{n}]" for n in kept)

    new_text = re.sub(r"(\s*)" + MARKER.pattern, replace, text)
    new_text = re.sub(r"\[(\d+)\](?:\s*\[\1\])+", r"[\1]", new_text)  # [2][2] -> [2]
    quotes = quotes or {}
    citations = tuple(
        citation_from_hit(hit, i + 1, quotes.get(pos, ""))
        for i, (hit, pos) in enumerate(cited_hits)
    )
    return new_text, citations
