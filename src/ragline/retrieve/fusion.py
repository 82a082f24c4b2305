"""Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009).

    rrf(d) = Σ_legs  weight_leg / (k + rank_leg(d))      (rank from 1)

k = 60 is the value of the paper and of most engines; ``depth`` limits how many
candidates of each leg take part (the top 50 by default). Ties are broken by the best
single-leg rank, then by id, so the output is deterministic.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

RRF_K = 60
RRF_DEPTH = 50

T = TypeVar("T", bound=Hashable)


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[T]],
    *,
    k: int = RRF_K,
    depth: int = RRF_DEPTH,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[T, float]]:
    """Fuse ranked lists of ids (best first) into one list of (id, rrf score), best first.

    ``rankings`` maps a leg name to its ranking; duplicates inside a ranking count once
    (at their best rank). ``weights`` defaults to 1.0 per leg.
    """
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    if depth <= 0:
        raise ValueError(f"RRF depth must be > 0, got {depth}")
    scores: dict[T, float] = {}
    best_rank: dict[T, int] = {}
    for leg, ranking in rankings.items():
        w = 1.0 if weights is None else float(weights.get(leg, 1.0))
        seen: set[T] = set()
        rank = 0
        for item in ranking:
            if item in seen:
                continue
            seen.add(item)
            rank += 1
            if rank > depth:
                break
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
            best_rank[item] = min(best_rank.get(item, rank), rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best_rank[kv[0]], repr(kv[0])))
