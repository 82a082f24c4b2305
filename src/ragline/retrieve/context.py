"""Context assembly: from ranked hits to the passages a generator reads.

1. **Per-document cap:** at most ``max_per_doc`` hits of one document (the best ones).
2. **Neighbour expansion:** each hit is widened by ±``window`` chunks of the same
   document; touching or overlapping spans of one document merge into one passage, whose
   text is rebuilt from the chunks' character spans (overlap counted once). A hit that
   already carries its parent passage (parent–child chunking) is not widened further.
3. **Token budget:** passages are admitted best-first while their tokens fit
   ``token_budget`` (counted with the given tokenizer); a passage that does not fit
   falls back to its unexpanded hit, and is dropped only if even that does not fit.
4. **Order:** strongest evidence first and last, weaker in the middle ("lost in the
   middle", Liu et al. 2023): ranks 1, 3, 5, … then …, 6, 4, 2.

Pure apart from the ``neighbors`` callback, which fetches chunks (with permissions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.types import Hit

Neighbors = Callable[
    [Sequence[tuple[int, int]], int], dict[int, list[tuple[int, int, int, int, str]]]
]


@dataclass(frozen=True)
class Context:
    """What the generator will read, and why."""

    passages: tuple[Hit, ...]
    tokens: int
    budget: int
    dropped: tuple[int, ...] = ()  # chunk ids left out for the budget or the per-document cap
    expanded: dict[int, tuple[int, ...]] = field(
        default_factory=dict
    )  # passage chunk id → chunk ids merged
    plan: Any = None  # the QueryPlan of the search that found the hits
    search: Any = None  # the SearchResult the passages came from (for the trace)


def lost_in_the_middle(items: Sequence[Any]) -> list[Any]:
    """Best first and last: [1, 2, 3, 4, 5] → [1, 3, 5, 4, 2]."""
    front = list(items[0::2])
    back = list(items[1::2])
    return front + back[::-1]


def _merge(chunks: list[tuple[int, int, int, int, str]]) -> tuple[str, tuple[int, ...]]:
    """Text of consecutive chunks from their char spans (overlaps counted once)."""
    text = ""
    end = None
    ids = []
    for _ordinal, cid, start, stop, body in sorted(chunks, key=lambda c: (c[2], c[3])):
        ids.append(cid)
        if end is None:
            text, end = body, stop
        elif start >= end:
            text += "\n\n" + body
            end = stop
        elif stop > end:
            text += body[end - start :]
            end = stop
    return text, tuple(ids)


def assemble(
    hits: Sequence[Hit],
    *,
    count_tokens: Callable[[str], int],
    token_budget: int = 1500,
    window: int = 1,
    max_per_doc: int = 3,
    neighbors: Neighbors | None = None,
    reorder: bool = True,
) -> Context:
    if token_budget <= 0:
        raise ValueError(f"token budget must be positive, got {token_budget}")
    per_doc: dict[int, int] = {}
    kept: list[Hit] = []
    dropped: list[int] = []
    for h in hits:
        if per_doc.get(h.document_id, 0) >= max_per_doc:
            dropped.append(h.chunk_id)
            continue
        per_doc[h.document_id] = per_doc.get(h.document_id, 0) + 1
        kept.append(h)
    # a hit carrying its parent passage (parent–child chunking) is already expanded
    near = (
        neighbors([(h.document_id, h.ordinal) for h in kept if h.parent is None], window)
        if neighbors and window > 0
        else {}
    )
    # group a document's hits whose windows touch into one passage, led by its best hit
    passages: list[tuple[Hit, str, tuple[int, ...]]] = []
    taken: set[int] = set()
    for h in kept:
        if h.chunk_id in taken:
            continue
        doc_chunks = near.get(h.document_id, []) if h.parent is None else []
        if not doc_chunks:
            passages.append((h, h.text, (h.chunk_id,)))
            taken.add(h.chunk_id)
            continue
        lo, hi = h.ordinal - window, h.ordinal + window
        members = {h.ordinal}
        for other in kept:  # other hits of this document within reach join this passage
            if (
                other.document_id == h.document_id
                and other.parent is None
                and other.chunk_id not in taken
                and lo - window <= other.ordinal <= hi + window
            ):
                members.add(other.ordinal)
                taken.add(other.chunk_id)
        lo, hi = min(members) - window, max(members) + window
        span = [c for c in doc_chunks if lo <= c[0] <= hi and c[1] not in taken or c[0] in members]
        text, ids = _merge(span)
        taken.update(ids)
        passages.append((h, text, ids))
    out: list[Hit] = []
    used = 0
    expanded: dict[int, tuple[int, ...]] = {}
    for h, text, ids in passages:
        n = count_tokens(text)
        if used + n > token_budget and text != h.text:
            text, ids, n = h.text, (h.chunk_id,), count_tokens(h.text)
        if used + n > token_budget:
            dropped.extend(ids)
            continue
        used += n
        if len(ids) > 1:
            expanded[h.chunk_id] = ids
        out.append(replace(h, text=text))
    ordered = lost_in_the_middle(out) if reorder else out
    return Context(tuple(ordered), used, token_budget, tuple(dropped), expanded)
