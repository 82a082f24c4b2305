"""Longest-first batching: rows in input order, batches bounded by count and characters."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.embed.batching import embed_longest_first


@settings(max_examples=80, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 3000), max_size=60),
    batch_size=st.integers(1, 40),
    batch_chars=st.integers(1, 9000),
    max_chars=st.one_of(st.none(), st.integers(1, 2000)),
)
def test_rows_in_order_and_batches_within_budget(lengths, batch_size, batch_chars, max_chars):
    texts = [f"{i}:" + "x" * n for i, n in enumerate(lengths)]
    batches: list[list[str]] = []

    def embed(batch: list[str]) -> np.ndarray:
        batches.append(batch)
        return np.array([[float(t.split(":")[0]), 1.0] for t in batch], dtype=np.float32)

    out = embed_longest_first(
        texts, 2, batch_size, embed, max_chars=max_chars, batch_chars=batch_chars
    )
    assert out[:, 0].tolist() == list(range(len(texts)))  # every row back in input order
    assert sorted(t for b in batches for t in b) == sorted(texts)  # each text once
    for b in batches:
        assert 1 <= len(b) <= batch_size
        longest = max(len(t) for t in b)
        if max_chars is not None:
            longest = min(longest, max_chars)
        assert len(b) == 1 or len(b) * longest <= batch_chars  # the budget holds
    flat = [len(t) for b in batches for t in b]
    assert flat == sorted(flat, reverse=True)  # longest first


def test_long_texts_batch_small_and_short_ones_up_to_batch_size():
    sizes: list[int] = []

    def embed(batch: list[str]) -> np.ndarray:
        sizes.append(len(batch))
        return np.zeros((len(batch), 1), dtype=np.float32)

    texts = ["long " * 400] * 20 + ["short"] * 70
    embed_longest_first(texts, 1, 32, embed, max_chars=1024)
    assert sizes[:3] == [8, 8, 8] and max(sizes) == 32
