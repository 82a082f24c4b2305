"""Longest-first batching shared by the local embedders."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def embed_longest_first(
    texts: Sequence[str], dim: int, batch_size: int, embed_batch: Callable[[list[str]], np.ndarray]
) -> np.ndarray:
    """Embed ``texts`` in batches of similar length (longest first, as sentence-transformers
    does, so little padding is computed); rows come back in input order."""
    import numpy as np

    out = np.zeros((len(texts), dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    for s in range(0, len(order), batch_size):
        idx = order[s : s + batch_size]
        out[idx] = embed_batch([texts[i] for i in idx])
    return out
