"""Retrieval metrics as pure functions, with trec_eval semantics.

A *ranking* is the list of doc ids a system returned for one query, best first.
*Relevance* comes from qrels: doc id -> graded judgement, where a grade <= 0
(or no judgement) means not relevant. Every per-query function takes
``(ranking, rels, k)`` and looks only at the first ``k`` distinct doc ids.

The numbers match trec_eval (via pytrec_eval) and ir_measures to 1e-9; the
test suite checks this on random runs:

=================  =======================  ==================
ragline            trec_eval                ir_measures
=================  =======================  ==================
``ndcg@k``         ``ndcg_cut.k``           ``nDCG@k``
``recall@k``       ``recall.k``             ``R@k``
``precision@k``    ``P.k``                  ``P@k``
``mrr@k``          ``recip_rank`` on top k  ``RR@k``
``map@k``          ``map_cut.k``            ``AP@k``
``hit@k``          ``success.k``            ``Success@k``
=================  =======================  ==================

nDCG uses linear gain (the grade itself, not ``2**grade - 1``) and a
``log2(rank + 1)`` discount, the ideal ranking being built from every judged
relevant doc, as trec_eval's ``ndcg_cut`` does and as BEIR reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "DEFAULT_METRICS",
    "METRICS",
    "Qrels",
    "Run",
    "average_precision_at_k",
    "evaluate_run",
    "hit_rate_at_k",
    "ndcg_at_k",
    "parse_metric",
    "per_query",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank_at_k",
]

Run = Mapping[str, Sequence[str]]
"""Query id -> doc ids in ranked order, best first."""

Qrels = Mapping[str, Mapping[str, int]]
"""Query id -> doc id -> graded relevance (<= 0 means not relevant)."""

Rels = Mapping[str, int]
MetricFn = Callable[[Sequence[str], Rels, int], float]

DEFAULT_METRICS: tuple[str, ...] = (
    "ndcg@10",
    "recall@5",
    "recall@10",
    "recall@100",
    "precision@5",
    "mrr@10",
    "map@100",
)


# ----------------------------------------------------------------------- helpers
def _top_k(ranking: Sequence[str], k: int) -> list[str]:
    """The first ``k`` distinct doc ids; a repeated id keeps its first rank only."""
    if isinstance(ranking, str):
        raise TypeError(
            "a ranking must be a sequence of doc ids, not a single string "
            f"(got {ranking!r}); wrap it in a list"
        )
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    seen: set[str] = set()
    out: list[str] = []
    for doc_id in ranking:
        if doc_id in seen:
            continue
        seen.add(doc_id)
        out.append(doc_id)
        if len(out) == k:
            break
    return out


def _relevant(rels: Rels) -> dict[str, int]:
    return {d: g for d, g in rels.items() if g > 0}


# ----------------------------------------------------------------- per query
def ndcg_at_k(ranking: Sequence[str], rels: Rels, k: int) -> float:
    """nDCG@k with linear gain and log2 discount (trec_eval ``ndcg_cut.k``).

    0.0 when the query has no relevant doc.
    """
    positive = _relevant(rels)
    top = _top_k(ranking, k)
    if not positive:
        return 0.0
    dcg = sum(positive.get(d, 0) / math.log2(i + 2) for i, d in enumerate(top))
    ideal = sorted(positive.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg


def recall_at_k(ranking: Sequence[str], rels: Rels, k: int) -> float:
    """Share of the relevant docs found in the top k (trec_eval ``recall.k``).

    0.0 when the query has no relevant doc.
    """
    positive = _relevant(rels)
    top = _top_k(ranking, k)
    if not positive:
        return 0.0
    return sum(1 for d in top if d in positive) / len(positive)


def precision_at_k(ranking: Sequence[str], rels: Rels, k: int) -> float:
    """Relevant docs in the top k divided by k, even if fewer than k were returned
    (trec_eval ``P.k``)."""
    positive = _relevant(rels)
    top = _top_k(ranking, k)
    return sum(1 for d in top if d in positive) / k


def reciprocal_rank_at_k(ranking: Sequence[str], rels: Rels, k: int) -> float:
    """1 / rank of the first relevant doc within the top k, else 0.0 (MRR@k)."""
    positive = _relevant(rels)
    for i, d in enumerate(_top_k(ranking, k)):
        if d in positive:
            return 1.0 / (i + 1)
    return 0.0


def average_precision_at_k(ranking: Sequence[str], rels: Rels, k: int) -> float:
    """Sum of precision at each relevant rank within the top k, divided by the
    number of relevant docs in qrels (trec_eval ``map_cut.k``).

    0.0 when the query has no relevant doc.
    """
    positive = _relevant(rels)
    top = _top_k(ranking, k)
    if not positive:
        return 0.0
    found = 0
    total = 0.0
    for i, d in enumerate(top):
        if d in positive:
            found += 1
            total += found / (i + 1)
    return total / len(positive)


def hit_rate_at_k(ranking: Sequence[str], rels: Rels, k: int) -> float:
    """1.0 if any relevant doc is in the top k, else 0.0 (trec_eval ``success.k``)."""
    positive = _relevant(rels)
    return 1.0 if any(d in positive for d in _top_k(ranking, k)) else 0.0


METRICS: dict[str, MetricFn] = {
    "ndcg": ndcg_at_k,
    "recall": recall_at_k,
    "precision": precision_at_k,
    "mrr": reciprocal_rank_at_k,
    "map": average_precision_at_k,
    "hit": hit_rate_at_k,
}
"""Metric family name -> per-query function; a metric name is ``family@k``."""


# ----------------------------------------------------------------- aggregates
def parse_metric(name: str) -> tuple[str, MetricFn, int]:
    """Split ``"ndcg@10"`` into its canonical name, function and cutoff.

    Names are case-insensitive. Raises ``ValueError`` naming the valid choices.
    """
    valid = ", ".join(f"{fam}@k" for fam in METRICS)
    family, sep, cutoff = name.strip().lower().partition("@")
    if family not in METRICS or not sep:
        raise ValueError(
            f"unknown metric {name!r}: valid metrics are {valid} "
            "(k a positive integer, e.g. 'ndcg@10')"
        )
    if not cutoff.isdigit() or int(cutoff) < 1:
        raise ValueError(
            f"metric {name!r} needs a positive integer cutoff after '@', e.g. '{family}@10'"
        )
    k = int(cutoff)
    return f"{family}@{k}", METRICS[family], k


def _judged_queries(qrels: Qrels) -> list[str]:
    """Queries with at least one relevant doc: the ones that are averaged."""
    return [q for q, rels in qrels.items() if any(g > 0 for g in rels.values())]


def per_query(run: Run, qrels: Qrels, metric: str) -> dict[str, float]:
    """One metric's score for every query that has a relevant doc in ``qrels``.

    A query missing from ``run`` scores 0; run queries absent from ``qrels`` are
    ignored. The keys are the same for every system evaluated on the same
    qrels, which is what paired significance tests need.
    """
    _, fn, k = parse_metric(metric)
    return {q: fn(run.get(q, ()), qrels[q], k) for q in _judged_queries(qrels)}


def evaluate_run(
    run: Run, qrels: Qrels, metrics: Sequence[str] = DEFAULT_METRICS
) -> dict[str, float]:
    """Mean of each metric over the queries with at least one relevant doc.

    This is BEIR's / trec_eval's averaging: a query missing from ``run`` counts
    as 0, run queries without judgements are ignored. Keys are the canonical
    (lower-case) metric names plus ``"queries"``, the number of queries
    averaged. Raises ``ValueError`` for an unknown metric name or when no query
    in ``qrels`` has a relevant doc.
    """
    if isinstance(metrics, str):
        metrics = (metrics,)
    parsed = [parse_metric(m) for m in metrics]  # validate names before any work
    queries = _judged_queries(qrels)
    if not queries:
        raise ValueError(
            f"nothing to average: none of the {len(qrels)} queries in qrels has a relevant "
            "doc (grade > 0); check that the qrels file and split are the right ones"
        )
    out: dict[str, float] = {}
    for canonical, fn, k in parsed:
        total = math.fsum(fn(run.get(q, ()), qrels[q], k) for q in queries)
        out[canonical] = total / len(queries)
    out["queries"] = len(queries)
    return out
