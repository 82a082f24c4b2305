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


def eval_params(index: Any, depth: int) -> Any:
    """Search settings of every evaluation: RRF over ``depth`` per leg, a wide HNSW beam,
    no duplicate collapsing (the metrics judge the legs, not result presentation)."""
    from ..retrieve.search import SearchParams

    return SearchParams(
        depth=depth,
        rrf_k=index.settings.rrf_k,
        ef_search=max(index.settings.ef_search, 200),
        dedup_threshold=None,
        query_languages=index.settings.query_languages,
    )


def doc_ranking(hits: Any) -> list[str]:
    """The BEIR document ids of ``hits``, each once, in rank order (chunks → documents)."""
    docs: list[str] = []
    seen: set[str] = set()
    for h in hits:
        d = h.doc_key[len(DOC_PREFIX) :] if h.doc_key.startswith(DOC_PREFIX) else h.doc_key
        if d not in seen:
            seen.add(d)
            docs.append(d)
    return docs


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
    explain_k: int | None = None,
) -> dict[str, Any]:
    """Ingest (if needed) and evaluate; returns one flat dict of metrics and timings.

    With ``explain_k``, every query also stores a trace, and ``"explain"`` blames each
    relevant document missing from the top ``explain_k`` on a stage
    (:mod:`ragline.evaluate.explain`); the metrics are the same either way."""
    from ..ingest.pipeline import backfill_embeddings

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
    params = eval_params(index, depth)
    run: dict[str, list[str]] = {}
    latencies: list[float] = []
    trace_ids: dict[str, str] = {}
    principal = _eval_principal()
    for qid in qids:
        t = time.perf_counter()
        res = index.searcher.search(
            data.queries[qid],
            principal,
            k={"hybrid": 2 * depth, "rerank": index.settings.rerank_depth}.get(mode, n_chunks),
            mode=mode,
            params=params,
        )
        latencies.append((time.perf_counter() - t) * 1000)
        run[qid] = doc_ranking(res.hits)
        if explain_k is not None:
            from .explain import record_search_trace

            trace_ids[qid] = record_search_trace(
                index,
                res,
                principal,
                question=data.queries[qid],
                query_id=qid,
                leg_depth=depth,
                keep_hits=_hits_covering(res.hits, explain_k),
            )
    sub_qrels = {q: data.qrels[q] for q in qids}
    metrics = evaluate_run(run, sub_qrels, EVAL_METRICS)
    explained = (
        {"explain": _explain(index, trace_ids, sub_qrels, explain_k, principal.tenant)}
        if explain_k is not None
        else {}
    )
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
        **explained,
    }


def _hits_covering(hits: Any, k: int) -> int:
    """How many hits hold the first ``k`` distinct documents (what the top k needs)."""
    seen: set[str] = set()
    for i, h in enumerate(hits, 1):
        seen.add(h.doc_key)
        if len(seen) == k:
            return i
    return len(hits)


def _explain(
    index: Any, trace_ids: dict[str, str], qrels: dict[str, dict[str, int]], k: int, tenant: str
) -> dict[str, Any]:
    """Read the traces back and blame each relevant document outside the top ``k``."""
    from .explain import GoldItem, explain_retrieval, read_traces, summarize

    keys = sorted({DOC_PREFIX + d for rels in qrels.values() for d, g in rels.items() if g > 0})
    chunks: dict[str, set[int]] = {}
    with index.db.connection() as conn:
        for key, cid in conn.execute(
            "SELECT d.doc_key, c.id FROM chunks c "
            "JOIN documents d ON d.tenant = c.tenant AND d.id = c.document_id "
            "WHERE c.collection_id = %s AND c.is_current AND c.tenant = %s "
            "AND d.doc_key = ANY(%s)",
            (index.collection.id, tenant, keys),
        ):
            chunks.setdefault(key, set()).add(int(cid))
    traces = read_traces(index, trace_ids, tenant=tenant)
    misses = []
    gold_items = 0
    for qid, trace in traces.items():
        gold = [
            GoldItem(d, frozenset(chunks.get(DOC_PREFIX + d, ())), DOC_PREFIX + d)
            for d, g in sorted(qrels[qid].items())
            if g > 0
        ]
        gold_items += len(gold)
        misses += explain_retrieval(qid, trace, gold, k, unit="document", trace_id=trace_ids[qid])
    return summarize(misses, gold_items=gold_items, k=k)


def _eval_principal() -> Any:
    from ..core.types import Principal

    return Principal(tenant="default", groups=())
