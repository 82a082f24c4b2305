"""``ragline eval … --explain``: which stage lost each missed gold item.

Every evaluated query leaves a trace (:mod:`ragline.core.trace`); the functions here read
a trace and the gold items of its query and blame the first stage that lost each item
the metric counts as missed:

* ``not-chunked`` — no current chunk of the index holds the item (a parse or chunking
  failure: the BEIR document has no chunks, the golden quote is in no chunk, the QA
  answer is in no chunk of its gold passage);
* ``not-retrieved`` — chunked, but none of its chunks is a candidate of any retrieval
  stage of the trace (each leg's list, the fused and reranked lists, the hits);
* ``ranked-out`` — a candidate, but not in the metric's top k (retrieval), or not in
  the packed context (QA);
* ``ignored-by-generator`` (QA) — in the packed context, yet the answer is wrong or an
  abstention.

The classifier is pure (trace dicts and gold chunk sets in, categories out); recording
and reading the traces is :func:`record_search_trace` and :func:`read_traces`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

NOT_CHUNKED = "not-chunked"
NOT_RETRIEVED = "not-retrieved"
RANKED_OUT = "ranked-out"
IGNORED = "ignored-by-generator"
CATEGORIES: tuple[str, ...] = (NOT_CHUNKED, NOT_RETRIEVED, RANKED_OUT, IGNORED)
EXAMPLES = 5
"""Example misses kept per category."""


@dataclass(frozen=True)
class GoldItem:
    """One relevant item of a query: a BEIR document, a golden quote, a QA gold passage."""

    id: str
    chunks: frozenset[int] = frozenset()
    """The current chunks that hold the item; empty: the item is in no chunk."""
    doc_key: str | None = None
    """Ranked as a document (BEIR): the item is found when this key is in the top k."""


@dataclass(frozen=True)
class Miss:
    """A missed gold item and the stage blamed for it."""

    query_id: str
    item: str
    category: str
    trace_id: str | None = None
    ranks: Mapping[str, int] = field(default_factory=dict)
    """Best rank of the item's chunks in each candidate list of the trace (legs, fused)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query_id,
            "item": self.item,
            "trace_id": self.trace_id,
            "ranks": dict(self.ranks),
        }


# ------------------------------------------------------------------ trace reading
def _ordered(entries: Iterable[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    """Entries best first: by their ``rank`` where they carry one, else as listed
    (a stable sort: equal scores keep the order the pipeline gave them)."""
    items = list(entries or ())
    return sorted(items, key=lambda e: e.get("rank") or 0) if items else []


def candidate_lists(trace: Mapping[str, Any]) -> dict[str, list[int]]:
    """Every ranked candidate list of a trace as chunk ids, best first: each leg, then
    ``fused`` and ``reranked`` where present."""
    out = {
        name: [int(e["chunk_id"]) for e in _ordered(entries)]
        for name, entries in (trace.get("legs") or {}).items()
    }
    for name in ("fused", "reranked"):
        if trace.get(name):
            out[name] = [int(e["chunk_id"]) for e in _ordered(trace[name])]
    return out


def retrieved_chunks(trace: Mapping[str, Any]) -> set[int]:
    """Chunk ids any retrieval stage of the trace saw: leg candidates, fused, reranked,
    final hits."""
    out = {cid for ids in candidate_lists(trace).values() for cid in ids}
    out |= {int(h["chunk_id"]) for h in trace.get("hits") or ()}
    return out


def context_chunks(trace: Mapping[str, Any]) -> set[int]:
    """Chunk ids the generator read: each packed passage and the neighbours merged into it."""
    out: set[int] = set()
    for p in (trace.get("context") or {}).get("passages") or ():
        out.add(int(p["chunk_id"]))
        out.update(int(c) for c in p.get("merged_chunks") or ())
    return out


def best_ranks(trace: Mapping[str, Any], chunks: Collection[int]) -> dict[str, int]:
    """The best (1-based) rank of any of ``chunks`` in each candidate list of the trace."""
    out: dict[str, int] = {}
    for name, ids in candidate_lists(trace).items():
        rank = next((i for i, cid in enumerate(ids, 1) if cid in chunks), None)
        if rank is not None:
            out[name] = rank
    return out


def found_in_top_k(
    trace: Mapping[str, Any], gold: Sequence[GoldItem], k: int, *, unit: str = "document"
) -> set[str]:
    """Ids of the gold items the metric finds in the top ``k`` of the trace's hits.

    Mirrors :mod:`ragline.evaluate.metrics`, which looks at the first ``k`` distinct ids
    of a ranking: with ``unit="document"`` (BEIR) the ranking is the hits' document keys;
    with ``unit="chunk"`` (golden) each hit counts for the first gold item whose chunks
    include it, else for itself, as :func:`ragline.evaluate.golden._judge` labels it."""
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if unit not in ("document", "chunk"):
        raise ValueError(f"unit must be 'document' or 'chunk', got {unit!r}")
    labels: list[str] = []
    seen: set[str] = set()
    for h in _ordered(trace.get("hits")):
        if unit == "document":
            label = f"doc:{h.get('doc_key')}"
        else:
            cid = int(h["chunk_id"])
            label = next((f"gold:{g.id}" for g in gold if cid in g.chunks), f"chunk:{cid}")
        if label not in seen:
            seen.add(label)
            labels.append(label)
            if len(labels) == k:
                break
    if unit == "document":
        return {g.id for g in gold if f"doc:{g.doc_key}" in seen}
    return {g.id for g in gold if f"gold:{g.id}" in seen}


# ------------------------------------------------------------------ classification
def classify(
    trace: Mapping[str, Any], chunks: Collection[int], *, answered_correctly: bool | None = None
) -> str:
    """The stage that lost a missed gold item held by ``chunks``.

    Without ``answered_correctly`` (retrieval) the item is known to be outside the top k:
    ``not-chunked``, ``not-retrieved`` or ``ranked-out``. With it (QA, the answer judged
    wrong, so False), a gold chunk in the packed context makes it ``ignored-by-generator``
    and a retrieved one outside the context ``ranked-out``."""
    gold = set(chunks)
    if not gold:
        return NOT_CHUNKED
    if answered_correctly is not None and gold & context_chunks(trace):
        return IGNORED
    if gold & retrieved_chunks(trace):
        return RANKED_OUT
    return NOT_RETRIEVED


def explain_retrieval(
    query_id: str,
    trace: Mapping[str, Any],
    gold: Sequence[GoldItem],
    k: int,
    *,
    unit: str = "document",
    trace_id: str | None = None,
) -> list[Miss]:
    """The gold items of one query missing from the top ``k``, each with its stage."""
    found = found_in_top_k(trace, gold, k, unit=unit)
    return [
        Miss(
            query_id,
            g.id,
            classify(trace, g.chunks),
            trace_id or trace.get("id"),
            best_ranks(trace, g.chunks),
        )
        for g in gold
        if g.id not in found
    ]


def explain_answer(
    query_id: str,
    trace: Mapping[str, Any],
    gold: GoldItem,
    *,
    correct: bool,
    trace_id: str | None = None,
) -> Miss | None:
    """The stage that lost an answerable question's answer; None when it was right."""
    if correct:
        return None
    return Miss(
        query_id,
        gold.id,
        classify(trace, gold.chunks, answered_correctly=False),
        trace_id or trace.get("id"),
        best_ranks(trace, gold.chunks),
    )


def summarize(
    misses: Iterable[Miss], *, gold_items: int, k: int | None = None, examples: int = EXAMPLES
) -> dict[str, Any]:
    """Counts per category, their share of the misses, and a few examples of each (the
    ``"explain"`` object of ``eval --json``)."""
    misses = list(misses)
    counts = {c: sum(m.category == c for m in misses) for c in CATEGORIES}
    unknown = {m.category for m in misses} - set(CATEGORIES)
    if unknown:
        raise ValueError(f"unknown categories {sorted(unknown)}; expected one of {CATEGORIES}")
    return {
        "k": k,
        "gold_items": gold_items,
        "missed": len(misses),
        **counts,
        "share": {c: round(n / len(misses), 4) if misses else 0.0 for c, n in counts.items()},
        "examples": {
            c: [m.to_dict() for m in misses if m.category == c][:examples] for c in CATEGORIES
        },
    }


def render_summary(
    per_stage: Mapping[str, Mapping[str, Any]], *, headline: str | None = None
) -> str:
    """A small table ``stage → count (share)``, one column per evaluated mode, then
    example queries per category of the ``headline`` mode (default: the last)."""
    if not per_stage:
        return ""
    names = list(per_stage)
    head = per_stage[headline or names[-1]]
    cats = [c for c in CATEGORIES if c != IGNORED or any(s[IGNORED] for s in per_stage.values())]
    if any(s.get("k") is None for s in per_stage.values()):
        what = "answerable questions answered wrongly, by the stage that lost the answer"
    else:
        what = f"gold items not in the top {head['k']}, by the stage that lost them"
    width = 16
    lines = [
        f"explain: {what}",
        "  " + "stage".ljust(22) + "".join(n.rjust(width) for n in names),
    ]
    for c in cats:
        cells = "".join(
            f"{s[c]} ({100 * s['share'][c]:.1f}%)".rjust(width) for s in per_stage.values()
        )
        lines.append("  " + c.ljust(22) + cells)
    lines.append(
        "  "
        + "missed / gold".ljust(22)
        + "".join(f"{s['missed']} / {s['gold_items']}".rjust(width) for s in per_stage.values())
    )
    for c in cats:
        ex = head["examples"].get(c) or []
        if ex:
            shown = ", ".join(
                e["query"] if e["item"] == e["query"] else f"{e['query']} ({e['item']})" for e in ex
            )
            lines.append(f"  e.g. {c}: {shown}")
    return "\n".join(lines)


# ------------------------------------------------------------------ recording (I/O)
def record_search_trace(
    index: Any,
    result: Any,
    principal: Any,
    *,
    question: str,
    query_id: str,
    leg_depth: int,
    keep_hits: int | None = None,
) -> str:
    """Store the trace of an evaluation search and return its id.

    The eval path calls the searcher directly (its own depth and k, no dedup), so the
    trace is built here from the result it already has: each leg's candidates to
    ``leg_depth`` (what fusion saw, not the default trace depth), the first ``keep_hits``
    hits (enough for the metric's top k; all when None)."""
    from ..core.trace import search_trace

    record = search_trace(
        result,
        principal,
        question=question,
        collection=index.collection.name,
        leg_depth=leg_depth,
        fused_depth=len(result.fused),
    )
    if keep_hits is not None:
        record["hits"] = record["hits"][:keep_hits]
        if record.get("reranked"):
            record["reranked"] = record["reranked"][:keep_hits]
    record["eval"] = {
        "query_id": query_id,
        "leg_depth": leg_depth,
        "hits_total": len(result.hits),
    }
    return str(index.recorder.save(principal, record))


def read_traces(index: Any, ids: Mapping[str, str], *, tenant: str = "default") -> dict[str, Any]:
    """The stored traces by query id (``ids``: query id → trace id), read back from the
    store so an explanation uses only what a trace holds."""
    from ..core.errors import NotFoundError

    out: dict[str, Any] = {}
    for qid, tid in ids.items():
        trace = index.trace(tid, tenant=tenant, admin=True)
        if trace is None:
            raise NotFoundError(
                f"the trace {tid} of query {qid} is not in the store; was it expired or purged "
                "while the evaluation ran? (trace_retention_days)"
            )
        out[qid] = trace
    return out
