"""Hybrid search: the BM25 and vector legs in parallel, fused with RRF.

Both legs run inside the database with the caller's permission filter; the query is
embedded while the BM25 leg runs. The result carries each leg's ranked candidates and
per-stage timings, the material of a query trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..core.errors import ConfigError
from ..core.filters import Filters
from ..core.protocols import Retriever
from ..core.types import Hit, Principal
from ..store.filters import validate_principal
from ..store.search import BM25Params, bm25_search, hydrate, to_hits, vector_search
from .dedup import collapse_duplicates
from .fusion import RRF_DEPTH, RRF_K, reciprocal_rank_fusion
from .identifiers import promote_identifiers

Mode = Literal["bm25", "vector", "hybrid", "rerank"]
MODES: tuple[str, ...] = ("bm25", "vector", "hybrid", "rerank")
MODE_LEGS: dict[str, tuple[str, ...]] = {
    "bm25": ("bm25",),
    "vector": ("vector",),
    "hybrid": ("bm25", "vector"),
}
"""The legs each mode runs (rerank reorders a hybrid search)."""


@dataclass(frozen=True)
class SearchResult:
    query: str
    mode: str
    hits: tuple[Hit, ...]
    legs: Mapping[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    plan: Any = None  # the QueryPlan (rewriting, multi-query, …) when techniques ran
    fused: tuple[tuple[int, float], ...] = ()
    """The RRF order (chunk id, fused score) before hydration, rerank and the cut to k."""
    trace_id: str | None = None
    bm25_query: Mapping[str, Any] = field(default_factory=dict)
    """What the BM25 leg searched for: ``{"languages": [...], "terms": [...]}``."""
    notes: tuple[str, ...] = ()
    """Why nothing could be searched (``ragline.core.trace.NOTHING_INGESTED``)."""


@dataclass(frozen=True)
class SearchParams:
    depth: int = RRF_DEPTH
    rrf_k: int = RRF_K
    ef_search: int = 100
    bm25: BM25Params = BM25Params()
    include_history: bool = False
    dedup_threshold: float | None = 0.85
    filters: Filters | None = None
    """Collapse (near-)duplicate hits at this estimated Jaccard similarity; None: keep all."""
    promote_identifiers: bool = True
    """Hybrid: hits holding the query's exact identifiers (``ERR_4021``) go first."""
    query_languages: str = "detected"
    """BM25: analyze the query in the languages it is detected to be in, or ``"all"``."""


def one_per_parent(hits: Sequence[Hit]) -> list[Hit]:
    """Keep the best child of each parent passage (hits carry the parent's text), so each
    parent reaches the context once; ranks are renumbered."""
    seen: set[tuple[int, int]] = set()
    out: list[Hit] = []
    for h in hits:
        if h.parent is not None:
            key = (h.document_id, h.parent)
            if key in seen:
                continue
            seen.add(key)
        out.append(replace(h, rank=len(out) + 1) if h.rank != len(out) + 1 else h)
    return out


@dataclass(frozen=True)
class LegResult:
    """One leg's candidates, best first, with its timings and what it searched for."""

    ranked: list[tuple[int, float]]
    timings_ms: dict[str, float]
    info: Mapping[str, Any] = field(default_factory=dict)


class BM25Leg:
    """Exact BM25 over the caller's ACL classes (``store/bm25.py``), in the query's languages."""

    name = "bm25"

    def __init__(
        self,
        db: Any,
        collection: Any,
        analyzer: Any,
        languages: Callable[[Principal, bool], tuple[str, ...]],
    ) -> None:
        self.db, self.collection, self.analyzer, self.languages = (
            db,
            collection,
            analyzer,
            languages,
        )

    def candidates(self, query: str, principal: Principal, n: int, p: SearchParams) -> LegResult:
        t = time.perf_counter()
        terms, languages = self.analyzer.query_analysis(
            query,
            self.languages(principal, p.include_history),
            detect=p.query_languages == "detected",
        )
        res = bm25_search(
            self.db,
            self.collection,
            terms,
            principal,
            n,
            p.bm25,
            include_history=p.include_history,
            filters=p.filters,
        )
        ms = (time.perf_counter() - t) * 1000
        return LegResult(res, {"bm25": ms}, {"languages": languages, "terms": terms})


class VectorLeg:
    """pgvector HNSW search with the caller's permissions inside (``store/search.py``)."""

    name = "vector"

    def __init__(self, db: Any, collection: Any, embedder: Any) -> None:
        self.db, self.collection, self.embedder = db, collection, embedder

    def candidates(self, query: str, principal: Principal, n: int, p: SearchParams) -> LegResult:
        t = time.perf_counter()
        q = self.embedder.embed_query(query)
        t1 = time.perf_counter()
        res = vector_search(
            self.db,
            self.collection,
            q,
            principal,
            n,
            ef_search=p.ef_search,
            include_history=p.include_history,
            filters=p.filters,
        )
        t2 = time.perf_counter()
        return LegResult(res, {"embed_query": (t1 - t) * 1000, "vector": (t2 - t1) * 1000})


class HybridSearcher:
    """Runs one collection's legs for a principal; holds no per-query state."""

    def __init__(
        self,
        db: Any,
        collection: Any,
        embedder: Any,
        analyzer: Any,
        reranker: Any = None,
        rerank_depth: int = 50,
        fusion: Callable[..., list[tuple[int, float]]] = reciprocal_rank_fusion,
    ) -> None:
        self.fusion = fusion
        """Fuses the legs' rankings (``{leg: [chunk ids]}``, ``k``, ``depth``) into one."""
        self.reranker = reranker
        self.rerank_depth = rerank_depth
        self.db = db
        self.collection = collection
        self.embedder = embedder
        self.analyzer = analyzer
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ragline-leg")
        self._lang_cache: dict[tuple[Any, ...], tuple[float, tuple[str, ...]]] = {}
        self.legs: dict[str, Retriever] = {
            "bm25": BM25Leg(db, collection, analyzer, self._languages),
            "vector": VectorLeg(db, collection, embedder),
        }
        """The retrieval legs by name (each a :class:`~ragline.core.protocols.Retriever`);
        a mode runs the legs :data:`MODE_LEGS` names and fuses them."""

    @property
    def has_parents(self) -> bool:
        """Whether the collection is chunked parent–child (hits carry their parents)."""
        from ..chunk import strategy_of

        return strategy_of(str(self.collection.chunker)) == "parent-child"

    def close(self) -> None:
        self._pool.shutdown(wait=False)

    def forget(self) -> None:
        """Drop what is cached about the collection's contents: a write went through this
        process, and its searches must see it now (other processes' writes within ~10 s)."""
        self._lang_cache.clear()

    def _languages(self, principal: Principal, include_history: bool) -> tuple[str, ...]:
        """Languages of the documents the caller may read (cached ~10 s): a query is
        analyzed in each, so documents the caller cannot read never change its terms."""
        from ..store.bm25 import visible_languages

        now = time.monotonic()
        key = (principal.tenant, tuple(sorted(principal.groups)), include_history)
        hit = self._lang_cache.get(key)
        if hit and now - hit[0] < 10.0:
            return hit[1]
        langs = visible_languages(self.db, self.collection, principal, include_history)
        self._lang_cache[key] = (now, langs)
        return langs

    def _reranked(
        self,
        query: str,
        principal: Principal,
        k: int,
        params: SearchParams,
        vector_text: str | None = None,
    ) -> SearchResult:
        """Hybrid top ``rerank_depth``, reordered by the reranker, cut to ``k``."""
        if self.reranker is None:
            raise ConfigError(
                "mode 'rerank' needs a reranker: set reranker = onnx:DIR, tei:URL or cohere:MODEL@URL "
                "(settings file or RAGLINE_RERANKER)"
            )
        fused = self.search(
            query,
            principal,
            k=max(k, self.rerank_depth),
            mode="hybrid",
            params=params,
            vector_text=vector_text,
        )
        t = time.perf_counter()
        hits = self.reranker.rerank(query, list(fused.hits), top_k=k)
        timings = {**fused.timings_ms, "rerank": (time.perf_counter() - t) * 1000}
        timings["total"] = fused.timings_ms.get("total", 0.0) + timings["rerank"]
        return SearchResult(
            query=query,
            mode="rerank",
            hits=tuple(hits),
            legs=fused.legs,
            timings_ms=timings,
            fused=fused.fused,
            bm25_query=fused.bm25_query,
        )

    def search(
        self,
        query: str,
        principal: Principal,
        *,
        k: int = 10,
        mode: str = "hybrid",
        params: SearchParams = SearchParams(),
        vector_text: str | None = None,
    ) -> SearchResult:
        """Top ``k`` permitted chunks for ``query``; the vector leg embeds
        ``vector_text`` instead when given (HyDE)."""
        validate_principal(principal)
        if mode not in MODES:
            raise ConfigError(f"unknown search mode {mode!r}; choose one of: {', '.join(MODES)}")
        if k <= 0:
            raise ConfigError(f"k must be a positive number of results, got {k}")
        if mode == "rerank":
            return self._reranked(query, principal, k, params, vector_text)
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        legs: dict[str, list[tuple[int, float]]] = {}
        bm25_query: dict[str, Any] = {}
        # with duplicate collapsing, look a little deeper so k distinct hits remain
        want = k if params.dedup_threshold is None else max(2 * k, k + 10)
        if self.has_parents:  # several children of one parent collapse into one hit
            want = max(want, 3 * k)
        n = max(want, params.depth) if mode == "hybrid" else want
        names = MODE_LEGS[mode]
        text = {"vector": vector_text or query}  # HyDE: the vector leg embeds another text
        # every leg but the last runs in the pool, the last in this thread
        pending = {
            name: self._pool.submit(
                self.legs[name].candidates, text.get(name, query), principal, n, params
            )
            for name in names[:-1]
        }
        done = {
            names[-1]: self.legs[names[-1]].candidates(
                text.get(names[-1], query), principal, n, params
            )
        }
        done.update({name: f.result() for name, f in pending.items()})
        for name, r in done.items():
            legs[name] = r.ranked
            timings.update(r.timings_ms)
        bm25_query = dict(done["bm25"].info) if "bm25" in done else {}
        t_fuse = time.perf_counter()
        if mode == "hybrid":
            ranked = self.fusion(
                {name: [cid for cid, _ in res] for name, res in legs.items()},
                k=params.rrf_k,
                depth=params.depth,
            )[:want]
            stage = "rrf"
        else:
            ranked = legs[mode][:want]
            stage = mode
        timings["fuse"] = (time.perf_counter() - t_fuse) * 1000
        t_h = time.perf_counter()
        rows = hydrate(
            self.db, [cid for cid, _ in ranked], principal, include_history=params.include_history
        )
        leg_scores = {name: dict(res) for name, res in legs.items()}
        leg_ranks = {
            name: {cid: i for i, (cid, _) in enumerate(res, 1)} for name, res in legs.items()
        }
        hits = to_hits(ranked, rows, stage=stage, leg_scores=leg_scores, leg_ranks=leg_ranks)
        if self.has_parents:
            hits = one_per_parent(hits)
        if mode == "hybrid" and params.promote_identifiers:
            hits = promote_identifiers(query, hits)
        if params.dedup_threshold is not None:
            hits = collapse_duplicates(hits, threshold=params.dedup_threshold, limit=k)
        hits = hits[:k]
        timings["hydrate"] = (time.perf_counter() - t_h) * 1000
        timings["total"] = (time.perf_counter() - t0) * 1000
        return SearchResult(
            query=query,
            mode=mode,
            hits=tuple(hits),
            legs={name: tuple(res) for name, res in legs.items()},
            timings_ms=timings,
            fused=tuple(ranked) if mode == "hybrid" else (),
            bm25_query=bm25_query,
        )


def fuse_results(results: Sequence[SearchResult], k: int, rrf_k: int = RRF_K) -> SearchResult:
    """One result from the searches of several queries (multi-query, sub-questions): hits
    fused by RRF over the per-query rankings, each chunk once; timings summed."""
    if len(results) == 1:
        return results[0]
    ranked = reciprocal_rank_fusion(
        {str(i): [h.chunk_id for h in r.hits] for i, r in enumerate(results)}, k=rrf_k
    )
    by_id: dict[int, Hit] = {}
    for r in results:
        for h in r.hits:
            by_id.setdefault(h.chunk_id, h)
    hits: list[Hit] = []
    for cid, score in ranked[:k]:
        h = by_id[cid]
        hits.append(
            replace(
                h,
                score=score,
                rank=len(hits) + 1,
                scores={**h.scores, "queries": score},
                ranks={**h.ranks, "queries": len(hits) + 1},
            )
        )
    timings: dict[str, float] = {}
    for r in results:
        for name, ms in r.timings_ms.items():
            timings[name] = timings.get(name, 0.0) + ms
    return SearchResult(
        query=results[0].query,
        mode=results[0].mode,
        hits=tuple(hits),
        legs=results[0].legs,
        timings_ms=timings,
        fused=results[0].fused,
        bm25_query=results[0].bm25_query,
    )
