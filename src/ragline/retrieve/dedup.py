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

import numpy as np

from ..core.types import Hit

NUM_PERM = 64
BANDS = 16  # 16 bands × 4 rows: pairs with Jaccard ≳ 0.5 become candidates
SHINGLE = 3
_WORD = re.compile(r"\w+", re.UNICODE)


def normalize(text: str) -> str:
    """Case-, width- and punctuation-insensitive form of ``text``."""
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def text_fingerprint(text: str) -> str:
    """Hash of the normalized text: equal for exact duplicates up to case/spacing/punctuation."""
    return _fingerprint(normalize(text).encode())


def _fingerprint(normalized: bytes) -> str:
    return hashlib.blake2b(normalized, digest_size=16).hexdigest()


def _coefficients() -> tuple[np.ndarray, np.ndarray]:
    aa, bb = [], []
    for i in range(NUM_PERM):
        h = hashlib.blake2b(f"minhash-{i}".encode(), digest_size=16).digest()
        aa.append(int.from_bytes(h[:8], "little") | 1)  # odd multipliers
        bb.append(int.from_bytes(h[8:], "little"))
    return (
        np.asarray(aa, dtype=np.uint64)[:, None],
        np.asarray(bb, dtype=np.uint64)[:, None],
    )


# Multiply-shift hashing (Dietzfelbinger et al.): (a·x + b) mod 2**64, top 32 bits, with
# a odd. uint64 arithmetic wraps, so there is no integer division on the search path.
_A, _B = _coefficients()
_K1, _K2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F)
_SHIFT = np.uint64(32)


def minhash(text: str) -> tuple[int, ...]:
    """MinHash signature (NUM_PERM values) of the word 3-gram shingles of ``text``.

    A shingle's hash combines its words' CRC-32s, vectorized: the search path runs this
    on every hit, so it must cost well under a millisecond per passage."""
    return tuple(_minhash(normalize(text).encode()).tolist())


def _minhash(normalized: bytes) -> np.ndarray:
    """:func:`minhash` of an already normalized text, as an array (UTF-8: a space is one
    byte that no other character's encoding contains, so splitting the bytes splits the
    words)."""
    words = normalized.split()
    if len(words) < SHINGLE:
        x = np.asarray([zlib.crc32(b" ".join(words))], dtype=np.uint64)
    else:
        w = np.fromiter(map(zlib.crc32, words), dtype=np.uint64, count=len(words))
        x = w[:-2] * _K1 + w[1:-1] * _K2 + w[2:]  # wraps mod 2**64
    return ((_A * x[None, :] + _B) >> _SHIFT).min(axis=1)


def estimated_jaccard(s1: Sequence[int] | np.ndarray, s2: Sequence[int] | np.ndarray) -> float:
    return float(np.count_nonzero(np.asarray(s1) == np.asarray(s2))) / len(s1)


def collapse_duplicates(
    hits: Sequence[Hit], *, threshold: float = 0.8, limit: int | None = None
) -> list[Hit]:
    """Keep the best-ranked hit of each group of (near-)duplicates; re-number ranks from 1.

    ``threshold`` is the estimated Jaccard similarity at which two hits count as near
    duplicates (1.0: exact duplicates only). With ``limit`` the walk stops once that many
    hits are kept (the search keeps only its top k): hits after the stop are not read,
    so they are not listed as anyone's duplicates either.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"duplicate threshold must be in (0, 1], got {threshold}")
    kept: list[Hit] = []
    absorbed: dict[int, list[dict[str, object]]] = {}
    fingerprints: dict[str, int] = {}
    signatures: list[np.ndarray] = []
    buckets: dict[tuple[int, bytes], list[int]] = {}
    width = NUM_PERM // BANDS * 8  # bytes of one band of a signature
    for hit in hits:
        if limit is not None and len(kept) >= limit:
            break
        normalized = normalize(hit.text).encode()
        fp = _fingerprint(normalized)
        target = fingerprints.get(fp)
        sig: np.ndarray | None = None
        if target is None and threshold < 1.0:
            sig = _minhash(normalized)
            raw = sig.tobytes()
            candidates = {
                i
                for b in range(BANDS)
                for i in buckets.get((b, raw[b * width : (b + 1) * width]), [])
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
        if threshold < 1.0:
            sig = _minhash(normalized) if sig is None else sig
            signatures.append(sig)
            raw = sig.tobytes()
            for b in range(BANDS):
                buckets.setdefault((b, raw[b * width : (b + 1) * width]), []).append(idx)
        else:
            signatures.append(np.empty(0, dtype=np.uint64))
    out = []
    for i, hit in enumerate(kept):
        meta = dict(hit.metadata)
        if i in absorbed:
            meta["duplicates"] = absorbed[i]
        out.append(replace(hit, rank=i + 1, metadata=meta))
    return out
