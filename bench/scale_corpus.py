"""Corpora for bench/scale.py: SciFact, grown to any size with its own statistics.

The base is SciFact as ragline chunks it (section chunker, MiniLM limits: 5,183 abstracts →
~10k chunks) with the real MiniLM embedding of every chunk and of the 300 test queries,
computed once and cached (``bench/.cache/``; ~20 min on two cores). A synthetic corpus of
N chunks takes base document ``j mod B`` for its document ``j``, keeps ~70 % of each
chunk's words and resamples the rest from the corpus vocabulary by frequency (so the df
distribution stays Zipfian and every chunk differs), and perturbs the chunk's embedding
(``v + σ·g``, renormalized, cosine ≈ 0.89 to the original) so vector neighbourhoods stay
meaningful. Documents carry one of three groups so one load serves three visibility mixes:
``p1`` (1 % of documents), ``p30`` (29 %), ``p100`` (70 %) — a reader with ``p1`` sees ~1 %,
with ``p1,p30`` ~30 %, with all three everything.

Deterministic: the same N and seed give the same corpus.
"""

from __future__ import annotations

import json
import re
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "bench" / ".cache"
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)
READERS = {"1%": ("p1",), "30%": ("p1", "p30"), "all": ("p1", "p30", "p100")}


@dataclass
class Base:
    doc_chunks: list[list[int]]  # base document → its chunk indexes
    titles: list[str]
    headers: list[str]
    texts: list[str]
    vectors: np.ndarray  # chunk embeddings (float32, unit)
    queries: list[str]
    query_ids: list[str]
    query_vectors: np.ndarray
    qrels: dict[str, dict[str, int]]
    doc_ids: list[str]


def _embedder():
    from ragline.embed.minilm import MiniLMEmbedder

    e = MiniLMEmbedder(threads=2)
    e.warm_up()
    return e


def build_base(cache: Path = CACHE, scifact: Path = SCIFACT, log=print) -> Base:
    """The chunked SciFact corpus with real embeddings (cached after the first run)."""
    cache.mkdir(parents=True, exist_ok=True)
    meta_f, vec_f, qvec_f = (
        cache / "scifact-base.json",
        cache / "scifact-chunks.npy",
        cache / "scifact-queries.npy",
    )
    from ragline.evaluate.beir import load_beir

    data = load_beir(scifact, "test")
    query_ids = sorted(data.qrels)
    if meta_f.exists() and vec_f.exists() and qvec_f.exists():
        meta = json.loads(meta_f.read_text())
        return Base(
            meta["doc_chunks"],
            meta["titles"],
            meta["headers"],
            meta["texts"],
            np.load(vec_f),
            [data.queries[q] for q in query_ids],
            query_ids,
            np.load(qvec_f),
            {q: dict(data.qrels[q]) for q in query_ids},
            meta["doc_ids"],
        )
    from ragline.chunk import make_chunker
    from ragline.ingest.sources import text_source

    emb = _embedder()
    chunker = make_chunker(
        "section", max_tokens=emb.max_tokens - 2, overlap_tokens=32, count_tokens=emb.count_tokens
    )
    doc_chunks, titles, headers, texts, doc_ids = [], [], [], [], []
    for doc_id in sorted(data.corpus):
        d = data.corpus[doc_id]
        parsed = text_source(doc_id, d.title, d.text).load()
        idx = []
        for c in chunker.chunk(parsed):
            idx.append(len(texts))
            headers.append(c.header)
            texts.append(c.text)
        doc_chunks.append(idx)
        titles.append(d.title)
        doc_ids.append(doc_id)
    log(
        f"base: {len(doc_ids)} documents, {len(texts)} chunks; embedding them once (cached in {cache})"
    )
    indexed = [f"{h}\n\n{t}" if h else t for h, t in zip(headers, texts)]
    parts = []
    for start in range(0, len(indexed), 256):
        parts.append(
            np.asarray(emb.embed_documents(indexed[start : start + 256]), dtype=np.float32)
        )
        log(f"  embedded {min(start + 256, len(indexed))}/{len(indexed)}")
    vectors = np.vstack(parts)
    qvec = np.vstack([emb.embed_query(data.queries[q]) for q in query_ids]).astype(np.float32)
    np.save(vec_f, vectors)
    np.save(qvec_f, qvec)
    meta_f.write_text(
        json.dumps(
            {
                "doc_chunks": doc_chunks,
                "titles": titles,
                "headers": headers,
                "texts": texts,
                "doc_ids": doc_ids,
            }
        )
    )
    return build_base(cache, scifact, log)


def group_of(j: int) -> str:
    """The group of synthetic document ``j`` (1 % / 29 % / 70 %)."""
    h = zlib.crc32(f"doc{j}".encode()) % 100
    return "p1" if h < 1 else "p30" if h < 30 else "p100"


@dataclass
class Synthetic:
    """A synthetic corpus: documents in order, each (key, group, base doc, chunk ranges)."""

    base: Base
    n_chunks: int
    seed: int = 7
    keep: float = 0.7
    sigma: float = 0.5

    def __post_init__(self) -> None:
        b = self.base
        self.tokens = [WORD.findall(t) for t in b.texts]
        counts = Counter(w for toks in self.tokens for w in toks if w[0].isalnum())
        # per base chunk once: its tokens as an array and which of them are words
        self._arrays = [np.array(toks, dtype=object) for toks in self.tokens]
        self._words = [np.array([t[0].isalnum() for t in toks], dtype=bool) for toks in self.tokens]
        self.vocab = np.array(list(counts), dtype=object)
        freq = np.array([counts[w] for w in self.vocab], dtype=np.float64)
        self.cdf = np.cumsum(freq / freq.sum())
        # documents until n_chunks is reached
        self.docs: list[tuple[int, int, int]] = []  # (doc j, base doc, first synthetic chunk)
        n = j = 0
        while n < self.n_chunks:
            bd = j % len(b.doc_chunks)
            self.docs.append((j, bd, n))
            n += len(b.doc_chunks[bd])
            j += 1
        self.total = n

    def chunk_base(self) -> np.ndarray:
        """For each synthetic chunk, its base chunk."""
        out = np.empty(self.total, dtype=np.int64)
        for _j, bd, first in self.docs:
            idx = self.base.doc_chunks[bd]
            out[first : first + len(idx)] = idx
        return out

    def vectors(self) -> np.ndarray:
        """All synthetic chunk vectors (float32, unit), deterministic."""
        rng = np.random.default_rng(self.seed)
        base = self.chunk_base()
        dim = self.base.vectors.shape[1]
        out = np.empty((self.total, dim), dtype=np.float32)
        step = 65536
        for s in range(0, self.total, step):
            e = min(self.total, s + step)
            v = self.base.vectors[base[s:e]] + rng.normal(
                0, self.sigma / np.sqrt(dim), (e - s, dim)
            ).astype(np.float32)
            out[s:e] = v / np.linalg.norm(v, axis=1, keepdims=True)
        return out

    def _text(self, rng: np.random.Generator, base_chunk: int) -> str:
        toks = self.tokens[base_chunk]
        if not toks:
            return self.base.texts[base_chunk]
        arr = self._arrays[base_chunk].copy()
        swap = self._words[base_chunk] & (rng.random(len(toks)) > self.keep)
        if swap.any():
            arr[swap] = self.vocab[np.searchsorted(self.cdf, rng.random(int(swap.sum())))]
        return " ".join(arr.tolist())

    def records(self, vectors: np.ndarray) -> Iterator[dict]:
        """Documents as ``Index.ingest_vectors`` records, with their group."""
        rng = np.random.default_rng(self.seed + 1)
        b = self.base
        for j, bd, first in self.docs:
            idx = b.doc_chunks[bd]
            yield {
                "key": f"s{j}",
                "groups": [group_of(j)],
                "title": b.titles[bd],
                "language": "en",
                "metadata": {"base": b.doc_ids[bd]},
                "chunks": [
                    {
                        "text": self._text(rng, c),
                        "header": b.headers[c],
                        "vector": vectors[first + i],
                    }
                    for i, c in enumerate(idx)
                ],
            }
