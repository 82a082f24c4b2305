"""The trace of one search or ask: every stage's input, output, scores and timings.

Pure functions from the pipeline's results to a JSON-ready dict; storing it is
:mod:`ragline.store.traces`. A trace holds only what the caller could read: the hits and
candidates of a search that ran under the caller's permission filter, and the caller's
own tenant and groups.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from .types import Answer, Hit, Principal

LEG_DEPTH = 50
"""Candidates kept per leg in a trace (the RRF depth by default)."""


def new_trace_id() -> str:
    return "tr_" + secrets.token_hex(10)


def _ranked(pairs: Iterable[tuple[int, float]], depth: int = LEG_DEPTH) -> list[dict[str, Any]]:
    return [
        {"rank": i, "chunk_id": int(cid), "score": round(float(score), 6)}
        for i, (cid, score) in enumerate(pairs, 1)
        if i <= depth
    ]


def hit_dict(h: Hit, *, text: bool = True) -> dict[str, Any]:
    """A hit as JSON (the same shape in traces, the CLI and the HTTP API)."""
    out: dict[str, Any] = {
        "rank": h.rank,
        "score": round(float(h.score), 6),
        "chunk_id": h.chunk_id,
        "document_id": h.document_id,
        "doc_key": h.doc_key,
        "title": h.title,
        "source": h.source,
        "heading_path": list(h.heading_path),
        "page": h.page,
        "scores": {k: round(float(v), 6) for k, v in h.scores.items()},
        "ranks": dict(h.ranks),
        "version": h.metadata.get("version"),
        "is_current": h.metadata.get("is_current"),
        "modified_at": _iso(h.metadata.get("modified_at")),
    }
    if text:
        out["text"] = h.text
    return out


def _iso(v: Any) -> Any:
    return v.isoformat() if isinstance(v, datetime) else v


def search_dict(
    query: str, result: Any = None, *, mode: str = "hybrid", timings: bool = True
) -> dict[str, Any]:
    """A search result as JSON (the same in the CLI, the HTTP API and MCP); ``result``
    None: nothing was searched because nothing has been ingested."""
    if result is None:
        return {"query": query, "mode": mode, "hits": [], "trace_id": None}
    out: dict[str, Any] = {
        "query": query,
        "mode": result.mode,
        "hits": [hit_dict(h) for h in result.hits],
        "trace_id": result.trace_id,
    }
    if timings:
        out["timings_ms"] = {k: round(v, 3) for k, v in result.timings_ms.items()}
    return out


def nothing_ingested(question: str) -> Answer:
    """The answer of an index nobody has ingested into yet."""
    return Answer.abstention(question, notes=(NOTHING_INGESTED,))


NOTHING_INGESTED = "nothing has been ingested yet"


def plan_dict(plan: Any) -> dict[str, Any] | None:
    if plan is None:
        return None
    return {
        "question": plan.question,
        "queries": list(plan.queries),
        "hyde": plan.hyde,
        "notes": list(plan.notes),
        "techniques": dict(plan.techniques),
    }


def answer_dict(a: Answer) -> dict[str, Any]:
    """An answer as JSON: text with [n] markers, citations, claim checks, notes."""
    return {
        "question": a.question,
        "answer": a.text,
        "abstained": a.abstained,
        "evidence": a.evidence,
        "generator": a.generator,
        "grounded_ratio": a.grounded_ratio,
        "prompt_tokens": a.prompt_tokens,
        "notes": list(a.notes),
        "claims": [
            {"text": c.text, "cited": list(c.cited), "support": c.support, "supported": c.supported}
            for c in a.claims
        ],
        "citations": [citation_dict(c, a.hits) for c in a.citations],
        "trace_id": a.trace_id,
        **({"agent": dict(a.agent)} if a.agent is not None else {}),
    }


def citation_dict(c: Any, hits: Sequence[Hit] = ()) -> dict[str, Any]:
    hit = next((h for h in hits if h.chunk_id == c.chunk_id), None)
    return {
        "number": c.number,
        "title": c.title,
        "heading_path": list(c.heading_path),
        "source": c.source,
        "page": c.page,
        "chunk_id": c.chunk_id,
        "doc_key": c.doc_key,
        "quote": c.quote,
        "text": hit.text if hit else None,
        "score": round(float(hit.score), 6) if hit else None,
        "modified_at": _iso(hit.metadata.get("modified_at")) if hit else None,
        "valid": hit is not None,
    }


def search_trace(
    result: Any,
    principal: Principal,
    *,
    question: str,
    collection: str,
    filters: Any = None,
    kind: str = "search",
    leg_depth: int = LEG_DEPTH,
    fused_depth: int = LEG_DEPTH,
) -> dict[str, Any]:
    """The retrieval part of a trace: plan, each leg's candidates (the first
    ``leg_depth``), fused (the first ``fused_depth``), reranked, hits."""
    out: dict[str, Any] = {
        "kind": kind,
        "created_at": datetime.now(UTC).isoformat(),
        "question": question,
        "collection": collection,
        "permission": {"tenant": principal.tenant, "groups": list(principal.groups)},
        "filters": _filters_dict(filters),
        "mode": result.mode,
        "plan": plan_dict(result.plan),
        "legs": {name: _ranked(pairs, leg_depth) for name, pairs in result.legs.items()},
        "bm25_query": dict(result.bm25_query) or None,
        "fused": _ranked(result.fused, fused_depth),
        "reranked": [
            {"rank": h.rank, "chunk_id": h.chunk_id, "score": round(float(h.score), 6)}
            for h in result.hits
        ]
        if result.mode == "rerank"
        else None,
        "hits": [hit_dict(h, text=False) for h in result.hits],
        "timings_ms": {k: round(v, 3) for k, v in result.timings_ms.items()},
    }
    return out


def add_answer(
    trace: dict[str, Any],
    context: Any,
    answer: Answer,
    *,
    generate_ms: float,
    count_tokens: Any = None,
) -> dict[str, Any]:
    """The generation part: the packed context, the answer and its checks, timings."""
    passages = []
    for h in context.passages:
        passages.append(
            {
                "chunk_id": h.chunk_id,
                "document_id": h.document_id,
                "doc_key": h.doc_key,
                "tokens": count_tokens(h.text) if count_tokens else None,
                "merged_chunks": list(context.expanded.get(h.chunk_id, ())),
            }
        )
    trace["kind"] = "ask"
    trace["context"] = {
        "passages": passages,
        "tokens": context.tokens,
        "budget": context.budget,
        "dropped": list(context.dropped),
    }
    cited = {c.chunk_id for c in answer.citations}
    trace["generation"] = {
        **answer_dict(answer),
        "abstention": {
            "abstained": answer.abstained,
            "evidence": answer.evidence,
            "reason": next(iter(answer.notes), None) if answer.abstained else None,
        },
        "citations_valid": all(any(h.chunk_id == cid for h in context.passages) for cid in cited),
    }
    timings = dict(trace.get("timings_ms", {}))
    timings["generate"] = round(generate_ms, 3)
    trace["timings_ms"] = timings
    return trace


def _filters_dict(filters: Any) -> dict[str, Any] | None:
    if filters is None:
        return None
    if isinstance(filters, Mapping):
        return {str(k): v for k, v in filters.items()}
    out: dict[str, Any] = {}
    for name in ("languages", "media_types", "source_prefixes"):
        v = getattr(filters, name, ())
        if v:
            out[name] = list(v)
    dates = getattr(filters, "dates", {}) or {}
    out.update({k: _iso(v) for k, v in dates.items()})
    meta = getattr(filters, "metadata", {}) or {}
    out.update({k: list(v) for k, v in meta.items()})
    return out


def document_ids(trace: Mapping[str, Any]) -> list[int]:
    """Every document a trace mentions (hits, context, citations): purged with them."""
    ids = {h["document_id"] for h in trace.get("hits", ()) if h.get("document_id") is not None}
    ids |= {p["document_id"] for p in (trace.get("context") or {}).get("passages", ())}
    for step in (trace.get("agent") or {}).get("steps", ()):  # evidence kept and dropped
        ids |= {h["document_id"] for h in (*step.get("kept", ()), *step.get("dropped", ()))}
    return sorted(int(i) for i in ids)
