"""Longest-first batching: rows in input order, batches bounded by count and characters."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.embed.batching import embed_longest_first, embed_reporting


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


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 3000), max_size=60),
    batch_size=st.integers(1, 40),
    batch_chars=st.integers(1, 9000),
    workers=st.integers(1, 4),
)
def test_batches_side_by_side_come_back_in_input_order(lengths, batch_size, batch_chars, workers):
    """With workers, every row still comes back in input order, each text embedded once,
    within the budget; ``side_by_side`` embeds them exactly when there are several
    batches to share, else ``embed_batch`` does."""
    import threading

    texts = [f"{i}:" + "x" * n for i, n in enumerate(lengths)]
    seen: dict[str, list[list[str]]] = {"alone": [], "side": []}
    lock = threading.Lock()

    def make(kind: str):
        def embed(batch: list[str]) -> np.ndarray:
            with lock:
                seen[kind].append(batch)
            return np.array([[float(t.split(":")[0]), 1.0] for t in batch], dtype=np.float32)

        return embed

    reported: list[tuple[int, int]] = []
    out = embed_longest_first(
        texts,
        2,
        batch_size,
        make("alone"),
        batch_chars=batch_chars,
        workers=workers,
        side_by_side=make("side"),
        progress=lambda n: reported.append((threading.get_ident(), n)),
    )
    assert out[:, 0].tolist() == list(range(len(texts)))
    batches = seen["alone"] + seen["side"]
    # progress: each batch once, in the caller's thread, longest first (as submitted)
    assert all(t == threading.get_ident() for t, _ in reported)
    longest_first = sorted(batches, key=lambda b: -len(b[0]))
    assert [n for _, n in reported] == [len(b) for b in longest_first]
    assert sum(n for _, n in reported) == len(texts)
    assert sorted(t for b in batches for t in b) == sorted(texts)
    for b in batches:
        assert 1 <= len(b) <= batch_size
        assert len(b) == 1 or len(b) * max(len(t) for t in b) <= batch_chars
    if workers == 1 or len(batches) <= 1:
        assert not seen["side"]
    else:
        assert not seen["alone"]


def test_batches_side_by_side_run_at_once_and_an_error_stops_the_rest():
    """Two workers embed two batches at the same time (each waits for the other at a
    barrier); a batch that fails raises, and the batches not started are not run."""
    import threading

    import pytest

    barrier = threading.Barrier(2, timeout=10)
    texts = ["a " * 300] * 4 + ["b"] * 40

    def side(batch: list[str]) -> np.ndarray:
        if batch[0].startswith("a"):
            barrier.wait()  # BrokenBarrierError unless both long batches run at once
        return np.ones((len(batch), 1), dtype=np.float32)

    out = embed_longest_first(
        texts, 1, 4, lambda b: 1 / 0, batch_chars=2400, workers=2, side_by_side=side
    )
    assert out.shape == (44, 1) and (out == 1).all()

    ran: list[int] = []

    def failing(batch: list[str]) -> np.ndarray:
        ran.append(len(batch))
        raise RuntimeError("model failed")

    with pytest.raises(RuntimeError, match="model failed"):
        embed_longest_first(["x"] * 200, 1, 1, failing, workers=2, side_by_side=failing)
    assert len(ran) < 200


class _Reporting:
    """An embedder whose ``embed_documents`` reports its own batches (of 3)."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed_documents(self, texts, *, progress=None):
        self.calls.append(len(texts))
        for i in range(0, len(texts), 3):
            if progress is not None:
                progress(len(texts[i : i + 3]))
        return np.array([[float(t)] for t in texts], dtype=np.float32).reshape(-1, 1)


class _Plain:
    """An embedder without ``progress`` (a third party's, a test fake)."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed_documents(self, texts):
        self.calls.append(len(texts))
        return np.array([[float(t)] for t in texts], dtype=np.float32).reshape(-1, 1)


def test_embed_reporting_calls_once_when_the_embedder_reports_else_slice_by_slice():
    texts = [str(i) for i in range(10)]
    for embedder, calls, reported in (
        (_Reporting(), [10], [3, 3, 3, 1]),  # one call, its own batches reported
        (_Plain(), [4, 4, 2], [4, 4, 2]),  # sliced: a call per report
    ):
        got: list[int] = []
        out = embed_reporting(embedder, texts, got.append, slice_size=4)
        assert out[:, 0].tolist() == list(range(10))
        assert embedder.calls == calls and got == reported
    empty = _Plain()
    assert embed_reporting(empty, [], lambda n: None, slice_size=4).shape == (0, 1)
