"""Metrics: hand-computed cases, then random runs checked against pytrec_eval,
ir_measures and the peer benchmark's reference ``evaluate``."""

from __future__ import annotations

import importlib.util
import math
import random
from pathlib import Path

import pytest

from ragline.evaluate.metrics import (
    DEFAULT_METRICS,
    average_precision_at_k,
    evaluate_run,
    hit_rate_at_k,
    ndcg_at_k,
    parse_metric,
    per_query,
    precision_at_k,
    recall_at_k,
    reciprocal_rank_at_k,
)

PEERS_COMMON = Path(__file__).resolve().parents[2] / ".." / "shared" / "bench-peers" / "common.py"
L2 = math.log2

GRADED = {"d1": 3, "d2": 2, "d3": 1, "d4": 0}
GRADED_RANKING = ["d4", "d1", "d5", "d3"]


# --------------------------------------------------------------- hand-computed
def test_graded_relevance_cut_at_3() -> None:
    idcg = 3 + 2 / L2(3) + 1 / L2(4)
    assert ndcg_at_k(GRADED_RANKING, GRADED, 3) == pytest.approx((3 / L2(3)) / idcg, abs=1e-12)
    assert recall_at_k(GRADED_RANKING, GRADED, 3) == pytest.approx(1 / 3)
    assert precision_at_k(GRADED_RANKING, GRADED, 3) == pytest.approx(1 / 3)
    assert reciprocal_rank_at_k(GRADED_RANKING, GRADED, 3) == 0.5
    assert average_precision_at_k(GRADED_RANKING, GRADED, 3) == pytest.approx((1 / 2) / 3)
    assert hit_rate_at_k(GRADED_RANKING, GRADED, 3) == 1.0
    assert hit_rate_at_k(GRADED_RANKING, GRADED, 1) == 0.0  # d4 has grade 0


def test_graded_relevance_cut_at_10_has_fewer_results_than_k() -> None:
    idcg = 3 + 2 / L2(3) + 1 / L2(4)
    dcg = 3 / L2(3) + 1 / L2(5)
    assert ndcg_at_k(GRADED_RANKING, GRADED, 10) == pytest.approx(dcg / idcg, abs=1e-12)
    assert recall_at_k(GRADED_RANKING, GRADED, 10) == pytest.approx(2 / 3)
    assert precision_at_k(GRADED_RANKING, GRADED, 10) == pytest.approx(2 / 10)  # denominator k
    assert average_precision_at_k(GRADED_RANKING, GRADED, 10) == pytest.approx((1 / 2 + 2 / 4) / 3)


def test_gain_is_linear_not_exponential() -> None:
    rels = {"a": 1, "b": 3}
    # [a, b]: DCG = 1 + 3/log2(3); ideal [b, a]: 3 + 1/log2(3)
    want = (1 + 3 / L2(3)) / (3 + 1 / L2(3))
    assert ndcg_at_k(["a", "b"], rels, 10) == pytest.approx(want, abs=1e-12)


def test_ideal_uses_all_judged_relevant_docs_even_unretrieved() -> None:
    rels = {"a": 1, "b": 1, "c": 1}
    assert ndcg_at_k(["a"], rels, 10) == pytest.approx(1 / (1 + 1 / L2(3) + 1 / L2(4)))
    # ... but only the top k of them
    assert ndcg_at_k(["a"], rels, 1) == 1.0


def test_fewer_results_than_k() -> None:
    rels = {"d1": 1, "d2": 1}
    assert precision_at_k(["d1"], rels, 5) == pytest.approx(1 / 5)
    assert recall_at_k(["d1"], rels, 5) == 0.5
    assert ndcg_at_k(["d1"], rels, 5) == pytest.approx(1 / (1 + 1 / L2(3)))
    assert average_precision_at_k(["d1"], rels, 5) == 0.5
    assert reciprocal_rank_at_k(["d1"], rels, 5) == 1.0


def test_no_relevant_retrieved() -> None:
    rels = {"d1": 2, "d2": 0}
    ranking = ["x", "d2", "y"]
    for fn in (
        ndcg_at_k,
        recall_at_k,
        precision_at_k,
        reciprocal_rank_at_k,
        average_precision_at_k,
        hit_rate_at_k,
    ):
        assert fn(ranking, rels, 10) == 0.0, fn.__name__


def test_relevant_only_beyond_cutoff_scores_zero() -> None:
    ranking = [f"n{i}" for i in range(10)] + ["hit"]
    rels = {"hit": 1}
    assert reciprocal_rank_at_k(ranking, rels, 10) == 0.0
    assert reciprocal_rank_at_k(ranking, rels, 11) == pytest.approx(1 / 11)
    assert ndcg_at_k(ranking, rels, 10) == 0.0
    assert recall_at_k(ranking, rels, 100) == 1.0


def test_empty_ranking_and_no_relevant_docs() -> None:
    for fn in (
        ndcg_at_k,
        recall_at_k,
        precision_at_k,
        reciprocal_rank_at_k,
        average_precision_at_k,
        hit_rate_at_k,
    ):
        assert fn([], {"a": 1}, 10) == 0.0
        assert fn(["a"], {}, 10) == 0.0
        assert fn(["a"], {"a": 0, "b": -1}, 10) == 0.0


def test_negative_grades_are_not_relevant() -> None:
    rels = {"a": -2, "b": 1}
    assert ndcg_at_k(["a", "b"], rels, 10) == pytest.approx(1 / L2(3))
    assert recall_at_k(["a", "b"], rels, 10) == 1.0
    assert reciprocal_rank_at_k(["a", "b"], rels, 10) == 0.5


def test_perfect_ranking_scores_one() -> None:
    rels = {"a": 3, "b": 2, "c": 1}
    ranking = ["a", "b", "c", "x"]
    for fn in (ndcg_at_k, recall_at_k, reciprocal_rank_at_k, average_precision_at_k, hit_rate_at_k):
        assert fn(ranking, rels, 10) == pytest.approx(1.0), fn.__name__
    assert precision_at_k(ranking, rels, 3) == 1.0


def test_duplicates_keep_first_occurrence() -> None:
    rels = {"a": 1, "b": 2}
    with_dups = ["x", "a", "x", "a", "b"]
    clean = ["x", "a", "b"]
    for fn in (
        ndcg_at_k,
        recall_at_k,
        precision_at_k,
        reciprocal_rank_at_k,
        average_precision_at_k,
    ):
        for k in (1, 2, 3, 10):
            assert fn(with_dups, rels, k) == fn(clean, rels, k), (fn.__name__, k)
    # a duplicate never counts twice
    assert recall_at_k(["a", "a", "a"], {"a": 1, "b": 1}, 10) == 0.5
    assert precision_at_k(["a", "a"], {"a": 1}, 2) == 0.5


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="single string"):
        ndcg_at_k("abc", {"a": 1}, 10)  # type: ignore[arg-type]
    for bad_k in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="positive integer"):
            recall_at_k(["a"], {"a": 1}, bad_k)  # type: ignore[arg-type]


# ------------------------------------------------------------------- aggregate
def test_evaluate_run_averages_over_queries_with_relevant_docs() -> None:
    qrels = {
        "q1": {"a": 1},
        "q2": {"b": 1, "c": 0},
        "q3": {"z": 0},  # no relevant doc: not averaged
        "q4": {},  # no judgement: not averaged
        "q5": {"e": 2},  # missing from the run: counts as 0
    }
    run = {"q1": ["a"], "q2": ["c", "b"], "q3": ["z"], "extra": ["a"]}
    out = evaluate_run(run, qrels, ["mrr@10", "recall@1", "precision@1"])
    assert out["queries"] == 3
    assert out["mrr@10"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert out["recall@1"] == pytest.approx(1 / 3)
    assert out["precision@1"] == pytest.approx(1 / 3)
    assert set(out) == {"mrr@10", "recall@1", "precision@1", "queries"}


def test_evaluate_run_empty_run_scores_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    out = evaluate_run({"q1": []}, qrels)
    assert out == {**{m: 0.0 for m in DEFAULT_METRICS}, "queries": 2}


def test_evaluate_run_default_metrics_and_canonical_names() -> None:
    out = evaluate_run({"q": ["a"]}, {"q": {"a": 1}})
    assert list(out) == [*DEFAULT_METRICS, "queries"]
    assert out["ndcg@10"] == 1.0 and out["precision@5"] == pytest.approx(0.2)
    out = evaluate_run({"q": ["a"]}, {"q": {"a": 1}}, ["nDCG@10", " MRR@010 ", "hit@3"])
    assert set(out) == {"ndcg@10", "mrr@10", "hit@3", "queries"}
    assert evaluate_run({"q": ["a"]}, {"q": {"a": 1}}, "map@5") == {"map@5": 1.0, "queries": 1}


@pytest.mark.parametrize("name", ["foo@10", "ndcg", "ndcg@", "ndcg@0", "ndcg@x", "ndcg@-3", "@10"])
def test_unknown_metric_names_are_rejected_with_choices(name: str) -> None:
    with pytest.raises(ValueError) as err:
        evaluate_run({"q": ["a"]}, {"q": {"a": 1}}, ["ndcg@10", name])
    msg = str(err.value)
    assert repr(name) in msg
    if not name.startswith("ndcg"):
        for family in ("ndcg@k", "recall@k", "precision@k", "mrr@k", "map@k", "hit@k"):
            assert family in msg


def test_evaluate_run_refuses_qrels_without_relevant_docs() -> None:
    with pytest.raises(ValueError, match="no.*relevant|none of the"):
        evaluate_run({"q": ["a"]}, {"q": {"a": 0}})
    with pytest.raises(ValueError):
        evaluate_run({}, {})


def test_per_query() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}}
    run = {"q1": ["x", "a"], "other": ["b"]}
    assert per_query(run, qrels, "mrr@10") == {"q1": 0.5, "q2": 0.0}
    scores = per_query(run, qrels, "ndcg@10")
    assert sum(scores.values()) / len(scores) == evaluate_run(run, qrels, ["ndcg@10"])["ndcg@10"]
    with pytest.raises(ValueError):
        per_query(run, qrels, "bleu@4")


def test_parse_metric() -> None:
    name, fn, k = parse_metric("Recall@100")
    assert (name, fn, k) == ("recall@100", recall_at_k, 100)


# --------------------------------------------------------- reference checks
N_QUERIES = 200


def _random_case(seed: int = 1234) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
    """Graded qrels (every query has a relevant doc) and runs of 0..150 docs,
    some queries missing from the run, some with relevant docs never retrieved."""
    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(400)]
    run: dict[str, list[str]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for i in range(N_QUERIES):
        qid = f"q{i}"
        judged = rng.sample(pool, rng.randint(1, 40))
        rels = {d: rng.choice([-1, 0, 0, 1, 1, 2, 3]) for d in judged}
        rels[judged[0]] = rng.randint(1, 3)
        qrels[qid] = rels
        if i % 17 == 0:
            continue  # missing from the run
        # bias the run towards judged docs so that ranks matter
        candidates = judged + rng.sample(pool, 150)
        rng.shuffle(candidates)
        ranking = list(dict.fromkeys(candidates))[: rng.choice([0, 3, 10, 50, 100, 150])]
        run[qid] = ranking
    return run, qrels


def _scored(run: dict[str, list[str]], depth: int | None = None) -> dict[str, dict[str, float]]:
    """Strictly decreasing scores, so that re-sorting by score keeps our order."""
    return {q: {d: 1000.0 - r for r, d in enumerate(docs[:depth])} for q, docs in run.items()}


def test_random_runs_match_pytrec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run, qrels = _random_case()
    measures = {
        "ndcg_cut.10": ("ndcg@10", "ndcg_cut_10"),
        "recall.100": ("recall@100", "recall_100"),
        "recall.5": ("recall@5", "recall_5"),
        "recall.10": ("recall@10", "recall_10"),
        "P.5": ("precision@5", "P_5"),
        "P.10": ("precision@10", "P_10"),
        "map_cut.100": ("map@100", "map_cut_100"),
        "map_cut.10": ("map@10", "map_cut_10"),
        "success.5": ("hit@5", "success_5"),
    }
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(_scored(run))
    # trec_eval's recip_rank has no cutoff: give it the run truncated at 10
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(_scored(run, 10))
    checked = 0
    for ours, key in [*measures.values(), ("mrr@10", "recip_rank")]:
        source = rr if key == "recip_rank" else ref
        got = per_query(run, qrels, ours)
        assert set(got) == set(qrels)
        for q, value in got.items():
            want = source.get(q, {}).get(key, 0.0)  # trec_eval omits unretrieved queries
            assert value == pytest.approx(want, abs=1e-9), (ours, q)
            checked += 1
        mean = evaluate_run(run, qrels, [ours])[ours]
        want_mean = sum(source.get(q, {}).get(key, 0.0) for q in qrels) / len(qrels)
        assert mean == pytest.approx(want_mean, abs=1e-9), ours
    assert checked == 10 * N_QUERIES
    assert any(v > 0 for v in per_query(run, qrels, "ndcg@10").values())


def test_random_runs_match_ir_measures() -> None:
    ir_measures = pytest.importorskip("ir_measures")
    run, qrels = _random_case(seed=99)
    pairs = {
        ir_measures.nDCG @ 10: "ndcg@10",
        ir_measures.R @ 100: "recall@100",
        ir_measures.R @ 5: "recall@5",
        ir_measures.P @ 5: "precision@5",
        ir_measures.RR @ 10: "mrr@10",
        ir_measures.AP @ 100: "map@100",
        ir_measures.Success @ 10: "hit@10",
    }
    ref: dict[str, dict[str, float]] = {}
    for m in ir_measures.iter_calc(list(pairs), qrels, _scored(run)):
        ref.setdefault(pairs[m.measure], {})[m.query_id] = m.value
    for ours in pairs.values():
        got = per_query(run, qrels, ours)
        for q, value in got.items():
            assert value == pytest.approx(ref[ours].get(q, 0.0), abs=1e-9), (ours, q)
        want_mean = sum(ref[ours].get(q, 0.0) for q in qrels) / len(qrels)
        assert evaluate_run(run, qrels, [ours])[ours] == pytest.approx(want_mean, abs=1e-9)


def _load_peers_common():  # type: ignore[no-untyped-def]
    if not PEERS_COMMON.is_file():
        pytest.skip(f"peer benchmark reference not found at {PEERS_COMMON.resolve()}")
    spec = importlib.util.spec_from_file_location("_peers_common", PEERS_COMMON)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_random_runs_match_peer_benchmark_reference() -> None:
    common = _load_peers_common()
    run, qrels = _random_case(seed=7)
    ref = common.evaluate(
        {q: [(d, 1000.0 - r) for r, d in enumerate(docs)] for q, docs in run.items()},
        qrels,
        per_query=True,
    )
    ours = evaluate_run(run, qrels, ["ndcg@10", "recall@100", "mrr@10"])
    assert ours["queries"] == ref["queries"] == N_QUERIES
    for metric in ("ndcg@10", "recall@100", "mrr@10"):
        assert ours[metric] == pytest.approx(ref[metric], abs=1e-9), metric
        got = per_query(run, qrels, metric)
        for q, value in got.items():
            assert value == pytest.approx(ref["per_query"][q][metric], abs=1e-9), (metric, q)
