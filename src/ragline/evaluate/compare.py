"""Compare two index versions on the same labelled queries, with a paired test.

Each version is searched with the same queries and the same evaluation settings; the
per-query metric values are paired, and a two-sided paired randomization (sign-flip)
test over queries gives the p-value of the mean difference (B − A).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .metrics import Qrels, Run, per_query

COMPARE_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")


def paired_randomization_p(
    a: Sequence[float], b: Sequence[float], *, rounds: int = 10000, seed: int = 0
) -> float:
    """Two-sided p-value of mean(b - a) under random sign flips of the paired differences
    (exact enough: ``rounds`` samples plus the observed assignment)."""
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    diffs = [y - x for x, y in zip(a, b)]
    n = len(diffs)
    if n == 0:
        return 1.0
    observed = abs(sum(diffs))
    if observed == 0:
        return 1.0
    rnd = random.Random(seed)
    hits = 0
    for _ in range(rounds):
        total = sum(d if rnd.random() < 0.5 else -d for d in diffs)
        if abs(total) >= observed - 1e-12:
            hits += 1
    return (hits + 1) / (rounds + 1)


def compare_runs(
    run_a: Run, run_b: Run, qrels: Qrels, metrics: Sequence[str] = COMPARE_METRICS
) -> dict[str, Any]:
    """Per metric: mean of A, mean of B, difference, p-value (paired over queries)."""
    out: dict[str, Any] = {}
    for m in metrics:
        pa, pb = per_query(run_a, qrels, m), per_query(run_b, qrels, m)
        qs = sorted(pa)
        a, b = [pa[q] for q in qs], [pb[q] for q in qs]
        mean_a, mean_b = sum(a) / len(a), sum(b) / len(b)
        out[m] = {
            "a": round(mean_a, 4),
            "b": round(mean_b, 4),
            "diff": round(mean_b - mean_a, 4),
            "p_value": round(paired_randomization_p(a, b), 4),
            "queries": len(qs),
        }
    return out


def beir_run(
    index: Any, beir_dir: Path, *, depth: int = 100, limit: int | None = None
) -> tuple[Run, Qrels]:
    """Document rankings of ``index`` (hybrid, RRF over 50 per leg) for the test queries of
    a BEIR dataset."""
    from ..core.types import Principal
    from .beir import load_beir
    from .retrieval import doc_ranking, eval_params

    data = load_beir(beir_dir, "test")
    qids = sorted(data.qrels)[:limit] if limit else sorted(data.qrels)
    params = eval_params(index, 50)
    run = {
        qid: doc_ranking(
            index.searcher.search(
                data.queries[qid], Principal(), k=depth, mode="hybrid", params=params
            ).hits
        )
        for qid in qids
    }
    return run, {q: data.qrels[q] for q in qids}


def golden_run(index: Any, questions: Path, *, depth: int = 100) -> tuple[Run, Qrels]:
    """Rankings of quote items (``quote<i>``) for the answerable golden questions."""
    from ..core.types import Principal
    from .golden import _judge, load_questions
    from .retrieval import eval_params

    qs = [q for q in load_questions(questions) if q.answerable]
    params = eval_params(index, depth)
    run = {
        q.id: _judge(
            index.searcher.search(
                q.question, Principal(), k=depth, mode="hybrid", params=params
            ).hits,
            q,
        )
        for q in qs
    }
    qrels: Qrels = {q.id: {f"quote{i}": 1 for i in range(len(q.relevant))} for q in qs}
    return run, qrels


def render_comparison(result: Mapping[str, Any], a: int, b: int) -> str:
    lines = [f"{'metric':<12}{'v' + str(a):>10}{'v' + str(b):>10}{'diff':>10}{'p-value':>10}"]
    for m, r in result.items():
        sig = " *" if r["p_value"] < 0.05 else ""
        lines.append(
            f"{m:<12}{r['a']:>10.4f}{r['b']:>10.4f}{r['diff']:>+10.4f}{r['p_value']:>10.4f}{sig}"
        )
    lines.append("paired randomization test over queries (10,000 sign flips); * p < 0.05")
    return "\n".join(lines)
