"""Duplicate collapsing for result lists: exact (normalized text hash) and near (MinHash + LSH).

The same boilerplate paragraph in fifty documents should take one slot of the top k, not
fifty. A hit whose normalized text equals an earlier hit's, or whose estimated Jaccard
similarity of word 3-gram shingles with an earlier hit reaches ``threshold``, is folded
into that earlier (better-ranked) hit, which lists what it absorbed in
``metadata["duplicates"]``. Pure functions, no I/O.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import zlib
from collections.abc import Sequence
from dataclasses import replace

from ..core.types import Hit

NUM_PERM = 64
BANDS = 16  # 16 bands × 4 rows: pairs with Jaccard ≳ 0.5 become candidates
SHINGLE = 3
_PRIME = (1 << 31) - 1  # a*x+b stays below 2**63 in uint64 arithmetic
_WORD = re.compile(r"\w+", re.UNICODE)


def normalize(text: str) -> str:
    """Case-, width- and punctuation-insensitive form of ``text``."""
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def text_fingerprint(text: str) -> str:
    """Hash of the normalized text: equal for exact duplicates up to case/spacing/punctuation."""
    return hashlib.blake2b(normalize(text).encode(), digest_size=16).hexdigest()


def _coefficients() -> tuple[list[int], list[int]]:
    aa, bb = [], []
    for i in range(NUM_PERM):
        h = hashlib.blake2b(f"minhash-{i}".encode(), digest_size=16).digest()
        aa.append(int.from_bytes(h[:8], "little") % (_PRIME - 1) + 1)
        bb.append(int.from_bytes(h[8:], "little") % _PRIME)
    return aa, bb


_A, _B = _coefficients()
_K1, _K2 = 1_000_003, 8_191  # shingle = (w1·K1 + w2·K2 + w3) mod p


def minhash(text: str) -> tuple[int, ...]:
    """MinHash signature (NUM_PERM values) of the word 3-gram shingles of ``text``.

    A shingle's hash combines its words' CRC-32s, vectorized: the search path runs this
    on every hit, so it must cost well under a millisecond per passage."""
    import numpy as np

    words = normalize(text).split()
    if len(words) < SHINGLE:
        x = np.asarray([zlib.crc32(" ".join(words).encode())], dtype=np.uint64)
    else:
        w = np.fromiter((zlib.crc32(t.encode()) for t in words), dtype=np.uint64, count=len(words))
        p = np.uint64(_PRIME)
        x = np.unique((w[:-2] * _K1 % p + w[1:-1] * _K2 % p + w[2:]) % p)  # each product < 2**63
    a = np.asarray(_A, dtype=np.uint64)[:, None]
    b = np.asarray(_B, dtype=np.uint64)[:, None]
    return tuple(int(v) for v in ((a * x[None, :] + b) % np.uint64(_PRIME)).min(axis=1))


def estimated_jaccard(s1: Sequence[int], s2: Sequence[int]) -> float:
    return sum(1 for x, y in zip(s1, s2) if x == y) / len(s1)


def collapse_duplicates(hits: Sequence[Hit], *, threshold: float = 0.8) -> list[Hit]:
    """Keep the best-ranked hit of each group of (near-)duplicates; re-number ranks from 1.

    ``threshold`` is the estimated Jaccard similarity at which two hits count as near
    duplicates (1.0: exact duplicates only).
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"duplicate threshold must be in (0, 1], got {threshold}")
    kept: list[Hit] = []
    absorbed: dict[int, list[dict[str, object]]] = {}
    fingerprints: dict[str, int] = {}
    signatures: list[tuple[int, ...]] = []
    buckets: dict[tuple[int, tuple[int, ...]], list[int]] = {}
    rows = NUM_PERM // BANDS
    for hit in hits:
        fp = text_fingerprint(hit.text)
        target = fingerprints.get(fp)
        sig: tuple[int, ...] | None = None
        if target is None and threshold < 1.0:
            sig = minhash(hit.text)
            candidates = {
                i
                for b in range(BANDS)
                for i in buckets.get((b, sig[b * rows : (b + 1) * rows]), [])
            }
            for i in sorted(candidates):
                if estimated_jaccard(sig, signatures[i]) >= threshold:
                    target = i
                    break
        if target is not None:
            absorbed.setdefault(target, []).append(
                {"chunk_id": hit.chunk_id, "doc_key": hit.doc_key, "source": hit.source}
            )
            continue
        idx = len(kept)
        kept.append(hit)
        fingerprints[fp] = idx
        signatures.append(sig or minhash(hit.text) if threshold < 1.0 else ())
        if threshold < 1.0:
            s = signatures[idx]
            for b in range(BANDS):
                buckets.setdefault((b, s[b * rows : (b + 1) * rows]), []).append(idx)
    out = []
    for i, hit in enumerate(kept):
        meta = dict(hit.metadata)
        if i in absorbed:
            meta["duplicates"] = absorbed[i]
        out.append(replace(hit, rank=i + 1, metadata=meta))
    return out
