"""Deterministic fakes for unit-testing logic (never a substitute for the real model tests)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np


class FakeEmbedder:
    """Bag-of-words hashing embedder: similar word sets → similar vectors. Counts calls."""

    model_id = "fake-hash-64"
    dim = 64
    max_tokens = 256  # like MiniLM: chunk size defaults to the embedder limit

    def __init__(self) -> None:
        self.calls = 0
        self.texts_embedded = 0

    def count_tokens(self, text: str) -> int:
        return len(re.findall(r"\w+|[^\w\s]", text))

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        n = np.linalg.norm(v)
        if n == 0:
            v[0] = 1.0
            n = 1.0
        return v / n

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        return (
            np.vstack([self._vec(t) for t in texts])
            if texts
            else np.zeros((0, self.dim), np.float32)
        )

    def embed_query(self, text: str) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += 1
        return self._vec(text)
