"""One answer from the answers to the parts of a question (the agent's synthesis)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.types import Answer, Hit


def merge_answers(question: str, parts: Sequence[Answer]) -> Answer:
    """One answer from answers to the parts of a question: texts joined, citations
    renumbered across them (a passage cited by two parts keeps one number)."""
    import re

    from ..generate.citations import MARKER, renumber_markers

    sources: list[Hit] = []
    quotes: dict[int, str] = {}
    texts = []
    for a in parts:
        by_chunk = {h.chunk_id: h for h in a.hits}
        offset = len(sources)
        for c in a.citations:
            sources.append(by_chunk.get(c.chunk_id) or _hit_of(c))
            quotes[len(sources)] = c.quote

        def shift(m: re.Match[str], o: int = offset) -> str:
            return "".join(f"[{int(x) + o}]" for x in m.group(1).split(","))

        texts.append(re.sub(MARKER, shift, a.text))
    text, citations = renumber_markers(" ".join(texts), sources, quotes)
    hits = list({h.chunk_id: h for a in parts for h in a.hits}.values())
    return Answer(
        question=question,
        text=text,
        citations=citations,
        abstained=False,
        hits=tuple(hits),
        generator=parts[0].generator,
        evidence=min(p.evidence for p in parts),
        grounded_ratio=None
        if any(p.grounded_ratio is None for p in parts)
        else sum(p.grounded_ratio or 0 for p in parts) / len(parts),
        claims=tuple(c for p in parts for c in p.claims),
        notes=tuple(n for p in parts for n in p.notes),
        prompt_tokens=None
        if all(p.prompt_tokens is None for p in parts)
        else sum(p.prompt_tokens or 0 for p in parts),
    )


def _hit_of(c: Any) -> Hit:
    return Hit(
        c.chunk_id, 0, c.doc_key, c.title, c.source, c.quote, 0.0, 0, tuple(c.heading_path), c.page
    )
