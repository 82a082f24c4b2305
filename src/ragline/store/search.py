"""The two retrieval legs, over the permission-filtered chunks of a collection.

BM25 (Okapi, Lucene's form): for each distinct query term t,
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score += idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))
with N, avgdl and df summed over the ACL classes the caller may read (so scores never
depend on a document the caller cannot see), dl = the chunk's number of terms, k1 = 1.2
and b = 0.75 by default. This is the formula of Lucene >= 8 and of bm25s' "lucene"
method; ``ts_rank`` is not used anywhere. The exact top k is found without reading every
posting (:mod:`ragline.store.bm25_topk`, over the blocks of :mod:`ragline.store.bm25`).

Vector: cosine distance on the collection's partial HNSW index with
``hnsw.iterative_scan = relaxed_order`` (so a filtered query still returns k rows) and a
per-query ``hnsw.ef_search`` (grown with the graph's size and the caller's share of it);
when the permitted rows are few, an exact scan instead.
The vector leg applies :func:`ragline.store.filters.acl_sql` inside its WHERE clause.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.filters import Filters
from ..core.types import Hit, Principal
from .collections import GRAPH_FROM, Collection
from .db import Database
from .filters import acl_sql

if TYPE_CHECKING:
    import numpy as np

K1 = 1.2
B = 0.75
EXACT_SCAN_BELOW = GRAPH_FROM
"""Filters permitting fewer chunks than this use an exact scan instead of HNSW (so a
collection this small needs no graph, and gets none: :data:`GRAPH_FROM`)."""
EXACT_VISIT_RATIO = 10
"""Without metadata filters, an exact scan also when permitted rows x their share of the
index is below this many times k: the graph walk would visit more than it saves."""
HNSW_EF_CAP = 1000
"""pgvector's largest ``hnsw.ef_search``."""
CAPPED_OVERFETCH = 1.5
"""Rows a graph walk brings per row asked, when the beam its share of the graph needs is
past :data:`HNSW_EF_CAP` (a caller who may read a small part of a big collection)."""
EF_SCALE_FROM = 15_625
"""Graph size from which ``ef_search`` grows with the square root of the collection's
chunks: a bigger graph needs a wider beam for the same recall (8x at 1M chunks). On the
scale corpus at 1M (bench/README, stop 31; halfvec graph, m=32, ef_construction=128)
ef 400 / 600 / 700 / 800 reached recall@10 0.925 / 0.941 / 0.956 / 0.961, p50 4.1 / 6.6 /
6.5 / 6.7 ms with the server's shared buffers holding the graph; 100k chunks: 253."""


def scaled_ef_search(ef_search: int, chunks: int) -> int:
    """The beam for a graph of ``chunks`` vectors: ``ef_search`` up to
    :data:`EF_SCALE_FROM` chunks, times sqrt(chunks / EF_SCALE_FROM) above it (8x at 1M)."""
    return max(ef_search, math.ceil(ef_search * math.sqrt(max(chunks, 0) / EF_SCALE_FROM)))


@dataclass(frozen=True)
class BM25Params:
    k1: float = K1
    b: float = B


def bm25_search(
    db: Database,
    collection: Collection,
    terms: Sequence[str],
    principal: Principal,
    k: int,
    params: BM25Params = BM25Params(),
    *,
    include_history: bool = False,
    filters: Filters | None = None,
    work: Any = None,
) -> list[tuple[int, float]]:
    """(chunk id, BM25 score) of the top ``k`` permitted chunks, best first.

    With ``include_history`` old versions are searched too, and N/avgdl/df cover them.
    ``work`` (a :class:`~ragline.store.bm25_topk.Work`) receives what the query read.
    """
    from .bm25 import search

    return search(
        db,
        collection,
        terms,
        principal,
        k,
        k1=params.k1,
        b=params.b,
        include_history=include_history,
        filters=filters,
        work=work,
    )


def vector_search(
    db: Database,
    collection: Collection,
    query_vector: np.ndarray,
    principal: Principal,
    k: int,
    *,
    ef_search: int = 100,
    exact_below: int = EXACT_SCAN_BELOW,
    include_history: bool = False,
    filters: Filters | None = None,
) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) of the ``k`` nearest permitted chunks, best first.
    Fewer than ``exact_below`` permitted rows, or few enough that a graph walk would visit
    far more (:data:`EXACT_VISIT_RATIO`), are scanned exactly; ``exact_below=0`` always
    walks the graph."""
    acl, acl_params = acl_sql(principal, "c", include_history=include_history, filters=filters)
    if k <= 0:
        return []
    params = {
        "cid": collection.id,
        "q": query_vector,
        "k": k,
        "fetch": None,
        "cap": exact_below,
        **acl_params,
    }
    with db.connection() as conn:
        # The ACL classes know how many chunks the caller may read, and the graph's size.
        # On Citus both are of the tenant's own chunks: counting every tenant's would send
        # each search to every worker (a tenant's search routes to one).
        scope = " AND tenant = %(acl_tenant)s" if db.distributed else ""
        permitted, total = conn.execute(
            "SELECT coalesce(sum(n_chunks) FILTER (WHERE tenant = %(acl_tenant)s AND "
            "(groups = '{}'::text[] OR groups && %(acl_groups)s::text[])"
            + ("" if include_history else " AND is_current")
            + "), 0), coalesce(sum(n_chunks), 0) FROM bm25_classes "
            "WHERE collection_id = %(cid)s" + scope,
            params,
        ).fetchone()
        permitted, total = int(permitted), int(total)  # sum() is numeric on Citus
        share = permitted / total if total else 1.0  # of the index's rows the caller may read
        if filters is not None:  # metadata filters: count the rows they leave, up to the cap
            # (the ACL share stays the widening: an upper bound of the filtered share)
            permitted = conn.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM chunks c WHERE c.collection_id = %(cid)s AND {acl} "
                "LIMIT %(cap)s) s",
                params,
            ).fetchone()[0]
        # A filtered graph walk visits ~k / share candidates before it has k permitted
        # ones; an exact scan reads the permitted rows. At 1M chunks and 1 % visibility
        # (10k rows) the exact scan took p50 47 / 54 ms for k = 10 / 50 against the walk's
        # 51 / 415 ms (p95 63 / 62 vs 217 / 2,566) on the same, cold-ish server.
        sparse = filters is None and permitted * share < EXACT_VISIT_RATIO * k
        if permitted < exact_below or (sparse and exact_below > 0):
            # Few rows: an exact scan is both faster and perfectly accurate. The expression
            # does not match the HNSW index's, so the planner cannot pick the index.
            sql = f"""
            SELECT c.id, c.embedding <=> %(q)s::vector AS dist FROM chunks c
            WHERE c.collection_id = %(cid)s AND {acl}
            ORDER BY dist, c.id LIMIT %(k)s"""
        else:
            # A filtered walk of the graph keeps only the permitted share of what it visits:
            # widen the candidate list by it, so ~ef_search permitted candidates are compared
            # (recall@10 at 30 % visibility: 0.941 at a flat ef_search of 100), after
            # scaling it to the graph's size. pgvector caps ef_search at 1000; iterative
            # scan still returns k rows beyond it.
            ef = scaled_ef_search(ef_search, total)
            wanted = max(math.ceil(ef / max(share, 1e-3)), k)
            ef = min(wanted, HNSW_EF_CAP)
            conn.execute(f"SET LOCAL hnsw.ef_search = {ef}")
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            sql = hnsw_sql(collection, acl)
            if wanted > HNSW_EF_CAP:
                # past the cap the walk compares fewer permitted candidates than asked:
                # the iterative scan brings half as many rows more, and the k nearest of
                # them by the stored vectors are kept (1 % visible at 1M chunks: recall@10
                # 0.940 -> 0.961, p50 15 -> 18 ms; bench/README, stop 34)
                params["fetch"] = math.ceil(k * CAPPED_OVERFETCH)
        rows = conn.execute(sql, params).fetchall()
    return [(int(r[0]), 1.0 - float(r[1])) for r in rows]


def hnsw_sql(collection: Collection, acl: str) -> str:
    """The graph walk: ordered by the expression of the collection's HNSW index (halfvec
    for new collections), the ``fetch`` (default k) found scored and ordered on the stored
    float32 vectors, the k nearest kept."""
    dim = collection.dim
    indexed = f"{collection.as_indexed('c.embedding')} <=> {collection.as_indexed('%(q)s')}"
    return f"""
            SELECT id, dist FROM (
                SELECT c.id, c.embedding::vector({dim}) <=> %(q)s::vector({dim}) AS dist FROM chunks c
                WHERE c.collection_id = %(cid)s AND {acl}
                ORDER BY {indexed} LIMIT coalesce(%(fetch)s, %(k)s)
            ) s ORDER BY dist, id LIMIT %(k)s"""


_HIT_SQL = """
SELECT c.id, c.document_id, d.doc_key, d.title, d.source_uri, c.text, c.heading_path, c.page,
       c.ordinal, d.metadata, d.version, d.ingested_at, d.media_type, d.is_current, d.modified_at, d.language,
       p.ordinal, p.text, p.heading_path, p.page, d.source_mtime
FROM chunks c JOIN documents d ON d.tenant = c.tenant AND d.id = c.document_id
LEFT JOIN chunk_parents p
  ON p.tenant = c.tenant AND p.document_id = c.document_id AND p.ordinal = c.parent_ordinal
WHERE c.id = ANY(%(ids)s) AND {acl}
"""


def hydrate(
    db: Database, ids: Sequence[int], principal: Principal, *, include_history: bool = False
) -> dict[int, dict[str, Any]]:
    """Chunk and document fields for ``ids`` — re-checked against the permission filter.

    A child chunk (parent–child chunking) comes back with its parent's text, heading path
    and page, the parent's ordinal in ``parent`` and its own text in
    ``metadata["matched_text"]``.
    """
    acl, acl_params = acl_sql(principal, "c", include_history=include_history)
    if not ids:
        return {}
    with db.connection() as conn:
        rows = conn.execute(_HIT_SQL.format(acl=acl), {"ids": list(ids), **acl_params}).fetchall()
    out: dict[int, dict[str, Any]] = {}
    for r in rows:
        out[int(r[0])] = {
            "chunk_id": int(r[0]),
            "document_id": int(r[1]),
            "doc_key": r[2],
            "title": r[3],
            "source": r[4],
            "text": r[5],
            "heading_path": tuple(r[6] or ()),
            "page": r[7],
            "ordinal": r[8],
            "metadata": {
                **(r[9] or {}),
                "version": r[10],
                "ingested_at": r[11].isoformat(),
                "media_type": r[12],
                "is_current": r[13],
                "modified_at": r[14].isoformat() if r[14] else None,
                "language": r[15],
                "source_mtime": r[20].isoformat() if r[20] else None,
            },
        }
        if r[16] is not None:
            row = out[int(r[0])]
            row["metadata"]["matched_text"] = row["text"]
            row.update(parent=int(r[16]), text=r[17], heading_path=tuple(r[18] or ()), page=r[19])
    return out


def to_hits(
    ranked: Sequence[tuple[int, float]],
    rows: dict[int, dict[str, Any]],
    *,
    stage: str,
    leg_scores: dict[str, dict[int, float]] | None = None,
    leg_ranks: dict[str, dict[int, int]] | None = None,
) -> list[Hit]:
    hits: list[Hit] = []
    for rank, (cid, score) in enumerate(ranked, start=1):
        row = rows.get(cid)
        if row is None:  # vanished (deleted concurrently) or not permitted: never shown
            continue
        scores = {name: s[cid] for name, s in (leg_scores or {}).items() if cid in s}
        ranks = {name: r[cid] for name, r in (leg_ranks or {}).items() if cid in r}
        scores[stage] = score
        ranks[stage] = rank
        hits.append(Hit(score=score, rank=len(hits) + 1, scores=scores, ranks=ranks, **row))
    return hits


def neighbor_chunks(
    db: Database, principal: Principal, spots: Sequence[tuple[int, int]], window: int
) -> dict[int, list[tuple[int, int, int, int, str]]]:
    """For (document id, ordinal) spots, the permitted chunks within ±``window`` ordinals.

    Returns document id → sorted ``(ordinal, chunk id, char_start, char_end, text)``.
    """
    acl, acl_params = acl_sql(principal, "c")
    if not spots or window < 0:
        return {}
    docs = sorted({d for d, _ in spots})
    lo = {d: min(o for dd, o in spots if dd == d) - window for d in docs}
    hi = {d: max(o for dd, o in spots if dd == d) + window for d in docs}
    with db.connection() as conn:
        rows = conn.execute(
            f"""SELECT c.document_id, c.ordinal, c.id, c.char_start, c.char_end, c.text
            FROM chunks c JOIN unnest(%(docs)s::bigint[], %(lo)s::int[], %(hi)s::int[]) AS w(doc, lo, hi)
              ON c.document_id = w.doc AND c.ordinal BETWEEN w.lo AND w.hi
            WHERE {acl} ORDER BY c.document_id, c.ordinal""",
            {"docs": docs, "lo": [lo[d] for d in docs], "hi": [hi[d] for d in docs], **acl_params},
        ).fetchall()
    out: dict[int, list[tuple[int, int, int, int, str]]] = {}
    for doc, ordinal, cid, start, end, text in rows:
        out.setdefault(int(doc), []).append((ordinal, int(cid), start, end, text))
    return out
