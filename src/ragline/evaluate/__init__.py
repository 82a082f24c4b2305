"""ragline.evaluate: retrieval metrics and benchmark dataset loading.

Only the standard library is imported here; metrics are pure functions.
"""

from ragline.evaluate.beir import (
    BeirDataset,
    BeirDoc,
    BeirFormatError,
    fingerprint,
    iter_corpus,
    load_beir,
)
from ragline.evaluate.metrics import (
    DEFAULT_METRICS,
    Qrels,
    Run,
    average_precision_at_k,
    evaluate_run,
    hit_rate_at_k,
    ndcg_at_k,
    per_query,
    precision_at_k,
    recall_at_k,
    reciprocal_rank_at_k,
)

__all__ = [
    "DEFAULT_METRICS",
    "BeirDataset",
    "BeirDoc",
    "BeirFormatError",
    "Qrels",
    "Run",
    "average_precision_at_k",
    "evaluate_run",
    "fingerprint",
    "hit_rate_at_k",
    "iter_corpus",
    "load_beir",
    "ndcg_at_k",
    "per_query",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank_at_k",
]
