"""Retrieval evaluation on a BEIR-format dataset, through the real store and legs.

The corpus goes into a collection of its own (``beir-<name>``); ingest is incremental,
so a second run reuses it (zero embedding calls). A BM25-only run stores chunks without
vectors; a vector or hybrid run embeds whatever is missing first. Chunk hits are mapped
to documents (a document ranks at its best chunk), then scored with
:mod:`ragline.evaluate.metrics`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .beir import load_beir
from .metrics import DEFAULT_METRICS, evaluate_run

EVAL_METRICS = (*DEFAULT_METRICS, "recall@1000")
DOC_PREFIX = "beir:"


def beir_collection_name(dataset_name: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "_.-" else "-" for ch in dataset_name)
    return f"beir-{safe}"[:64]


def ingest_beir(
    index: Any, path: Path, *, embed: bool, on_progress: Callable[[str, int], None] | None = None
) -> Any:
    """Ingest (incrementally) every corpus document of a BEIR folder into ``index``."""
    from ..ingest.sources import text_source
    from .beir import iter_corpus

    sources = (
        text_source(f"{DOC_PREFIX}{d.doc_id}", d.title, d.text, metadata={"beir_id": d.doc_id})
        for d in iter_corpus(path)
    )
    return index.ingest_sources(sources, on_progress=on_progress, embed=embed)


def evaluate_beir(
    index: Any,
    path: Path,
    *,
    split: str = "test",
    mode: str = "hybrid",
    k: int = 10,
    depth: int = 100,
    limit: int | None = None,
    on_progress: Callable[[str, int], None] | None = None,
) -> dict[str, Any]:
    """Ingest (if needed) and evaluate; returns one flat dict of metrics and timings."""
    from ..ingest.pipeline import backfill_embeddings
    from ..retrieve.search import SearchParams

    data = load_beir(path, split)
    t0 = time.perf_counter()
    report = ingest_beir(index, path, embed=mode != "bm25", on_progress=on_progress)
    ingest_s = time.perf_counter() - t0
    backfilled = 0
    if mode != "bm25":
        backfilled = backfill_embeddings(index.db, index.collection, index.embedder)
    qids = sorted(data.qrels)
    if limit:
        qids = qids[:limit]
    n_chunks = max(1000, k)
    params = SearchParams(
        depth=depth,
        rrf_k=index.settings.rrf_k,
        ef_search=max(index.settings.ef_search, 200),
        dedup_threshold=None,  # retrieval metrics judge the legs, not result presentation
    )
    run: dict[str, list[str]] = {}
    latencies: list[float] = []
    for qid in qids:
        t = time.perf_counter()
        res = index.searcher.search(
            data.queries[qid],
            _eval_principal(),
            k={"hybrid": 2 * depth, "rerank": index.settings.rerank_depth}.get(mode, n_chunks),
            mode=mode,
            params=params,
        )
        latencies.append((time.perf_counter() - t) * 1000)
        docs: list[str] = []
        seen: set[str] = set()
        for h in res.hits:
            d = h.doc_key[len(DOC_PREFIX) :] if h.doc_key.startswith(DOC_PREFIX) else h.doc_key
            if d not in seen:
                seen.add(d)
                docs.append(d)
        run[qid] = docs
    sub_qrels = {q: data.qrels[q] for q in qids}
    metrics = evaluate_run(run, sub_qrels, EVAL_METRICS)
    lat = sorted(latencies)
    return {
        "dataset": data.name,
        "split": split,
        "mode": mode,
        "k": k,
        **{m: round(v, 4) if isinstance(v, float) else v for m, v in metrics.items()},
        "rrf_k": index.settings.rrf_k,
        "rrf_depth": depth if mode == "hybrid" else None,
        "collection": index.collection.name,
        "embedder": index.collection.embedder,
        "chunker": index.collection.chunker,
        "documents_added": len(report.added),
        "documents_unchanged": len(report.unchanged),
        "documents_failed": len(report.failed),
        "chunks_embedded": report.embedded + backfilled,
        "ingest_s": round(ingest_s, 2),
        "search_p50_ms": round(statistics.median(lat), 2) if lat else None,
        "search_p95_ms": round(lat[int(0.95 * (len(lat) - 1))], 2) if lat else None,
    }


def _eval_principal() -> Any:
    from ..core.types import Principal

    return Principal(tenant="default", groups=())
