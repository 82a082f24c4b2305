"""Longest-first batching shared by the local embedders."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

BATCH_CHARS = 8 * 256 * 4
"""Characters per batch at most (about 8 texts of 256 tokens): a transformer's working
memory grows with batch x length (attention with its square), and ONNX Runtime's arena
keeps its peak. MiniLM on 2 cores, 800 SciFact abstracts: batch 32 embedded 16.9 texts/s
at peak RSS 1,494 MB, batch 8 21.2 texts/s at 571 MB, batch 2 21.8 at 311 MB; short texts
still batch up to the embedder's ``batch_size``. Batches embedded side by side (``workers``)
are each ``workers`` times smaller, so together they hold the same."""


def embed_longest_first(
    texts: Sequence[str],
    dim: int,
    batch_size: int,
    embed_batch: Callable[[list[str]], np.ndarray],
    *,
    max_chars: int | None = None,
    batch_chars: int = BATCH_CHARS,
    workers: int = 1,
    side_by_side: Callable[[list[str]], np.ndarray] | None = None,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Embed ``texts`` in batches of similar length (longest first, as sentence-transformers
    does, so little padding is computed); rows come back in input order. A batch holds at
    most ``batch_size`` texts and, by its longest text (counted up to ``max_chars``, where
    the model truncates), about ``batch_chars`` characters. With ``workers`` > 1 and more
    than one batch, ``side_by_side`` (thread-safe: a single-threaded session) embeds them
    on that many threads, each batch ``workers`` times smaller (the same working memory),
    taken longest first. ``progress(n)``, if given, is called in the caller's thread as
    each batch's ``n`` texts are embedded, batches in longest-first order."""
    import numpy as np

    out = np.zeros((len(texts), dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    if workers > 1 and side_by_side is not None:
        batch_chars = max(1, batch_chars // workers)
        batch_size = max(1, batch_size // workers)
    batches: list[list[int]] = []
    s = 0
    while s < len(order):
        longest = len(texts[order[s]])
        if max_chars is not None:
            longest = min(longest, max_chars)
        n = max(1, min(batch_size, batch_chars // max(longest, 1)))
        batches.append(order[s : s + n])
        s += n
    if workers <= 1 or side_by_side is None or len(batches) <= 1:
        for idx in batches:  # one batch: faster spread over the cores by ``embed_batch``
            out[idx] = embed_batch([texts[i] for i in idx])
            if progress is not None:
                progress(len(idx))
        return out
    from concurrent.futures import ThreadPoolExecutor

    def one(idx: list[int]) -> None:
        out[idx] = side_by_side([texts[i] for i in idx])

    pool = ThreadPoolExecutor(max_workers=min(workers, len(batches)))
    try:
        futures = [(pool.submit(one, idx), len(idx)) for idx in batches]  # longest first
        for f, n in futures:
            f.result()
            if progress is not None:
                progress(n)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # after an error, the rest is not run
    return out


def embed_reporting(
    embedder: Any, texts: Sequence[str], progress: Callable[[int], None], *, slice_size: int
) -> np.ndarray:
    """``embedder.embed_documents(texts)`` with ``progress(n)`` called (in this thread) as
    the next ``n`` texts are embedded, in order. Embedders whose ``embed_documents``
    takes ``progress`` report batch by batch in one call (the local ones); others are
    called ``slice_size`` texts at a time, at the cost of one call's end per slice (on
    two cores a call ends with one core idle while the other finishes the last batch:
    ~1.7 % of MiniLM's time over 64-text calls, ~0.5 % over 256-text ones)."""
    import numpy as np

    cls: Any = type(embedder)
    if _takes_progress(cls):
        return embedder.embed_documents(texts, progress=progress)
    parts = []
    for i in range(0, len(texts), slice_size):
        part = texts[i : i + slice_size]
        parts.append(embedder.embed_documents(part))
        progress(len(part))
    return np.vstack(parts) if parts else embedder.embed_documents(texts)


@lru_cache(maxsize=64)
def _takes_progress(cls: Any) -> bool:
    try:
        return "progress" in inspect.signature(cls.embed_documents).parameters
    except (TypeError, ValueError, AttributeError):
        return False
