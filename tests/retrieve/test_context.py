"""Context assembly: neighbour expansion, per-document cap, token budget, edge ordering."""

from __future__ import annotations

import pytest

from ragline.core.types import Hit
from ragline.retrieve.context import assemble, lost_in_the_middle

# one document of 10 chunks with 5-char overlaps: chunk i covers [20*i, 20*i + 25)
DOC = "".join(f"[{i:02d}]" + "abcdefghijklmno" for i in range(10))  # 20 chars per chunk body
CHUNKS = {
    i: (i, 100 + i, 20 * i, min(20 * i + 25, len(DOC)), DOC[20 * i : min(20 * i + 25, len(DOC))])
    for i in range(10)
}


def words(text: str) -> int:
    return len(text)  # 1 "token" per character keeps the arithmetic visible


def neighbors(spots, window):
    out = {}
    for doc, o in spots:
        if doc != 1:
            continue
        for j in range(o - window, o + window + 1):
            if j in CHUNKS:
                out.setdefault(1, {})[j] = CHUNKS[j]
    return {d: sorted(v.values()) for d, v in out.items()}


def hit(ordinal: int, rank: int, doc: int = 1) -> Hit:
    c = CHUNKS[ordinal]
    return Hit(
        chunk_id=c[1] if doc == 1 else 900 + ordinal,
        document_id=doc,
        doc_key=f"d{doc}",
        title="T",
        source="s",
        text=c[4],
        score=1.0 / rank,
        rank=rank,
        ordinal=ordinal,
    )


def test_lost_in_the_middle_order():
    assert lost_in_the_middle([1, 2, 3, 4, 5]) == [1, 3, 5, 4, 2]
    assert lost_in_the_middle([]) == []


def test_neighbours_merge_without_duplicating_overlap():
    ctx = assemble(
        [hit(4, 1)],
        count_tokens=words,
        token_budget=10_000,
        window=1,
        neighbors=neighbors,
        reorder=False,
    )
    (p,) = ctx.passages
    assert p.text == DOC[60:125]  # chunks 3..5 rebuilt from spans, overlap counted once
    assert ctx.expanded[104] == (103, 104, 105)


def test_adjacent_hits_of_one_document_become_one_passage():
    ctx = assemble(
        [hit(4, 1), hit(5, 2)],
        count_tokens=words,
        token_budget=10_000,
        window=1,
        neighbors=neighbors,
        reorder=False,
    )
    assert len(ctx.passages) == 1 and ctx.passages[0].text == DOC[60:145]


def test_per_document_cap_and_budget():
    hits = [hit(0, 1), hit(4, 2), hit(8, 3), hit(2, 4, doc=2)]
    ctx = assemble(
        hits, count_tokens=words, token_budget=10_000, window=0, max_per_doc=2, reorder=False
    )
    assert [h.chunk_id for h in ctx.passages] == [100, 104, 902] and 108 in ctx.dropped
    tight = assemble(
        hits, count_tokens=words, token_budget=60, window=1, neighbors=neighbors, reorder=False
    )
    assert tight.tokens <= 60
    assert sum(words(p.text) for p in tight.passages) == tight.tokens
    # the best hit falls back to its own chunk rather than being dropped
    assert tight.passages[0].chunk_id == 100


def test_budget_never_exceeded_randomized():
    import random

    rng = random.Random(3)
    for _ in range(200):
        hits = [hit(o, r + 1) for r, o in enumerate(rng.sample(range(10), rng.randint(1, 6)))]
        budget = rng.randint(10, 200)
        ctx = assemble(
            hits,
            count_tokens=words,
            token_budget=budget,
            window=rng.randint(0, 2),
            neighbors=neighbors,
        )
        assert ctx.tokens <= budget
        assert ctx.tokens == sum(words(p.text) for p in ctx.passages)
        texts = [p.text for p in ctx.passages]
        assert all(t in DOC for t in texts)


def test_bad_budget():
    with pytest.raises(ValueError):
        assemble([], count_tokens=words, token_budget=0)
