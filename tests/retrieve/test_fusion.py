"""RRF is a pure function: checked by hand and against a brute-force restatement."""

from __future__ import annotations

import random

import pytest

from ragline.retrieve.fusion import RRF_DEPTH, RRF_K, reciprocal_rank_fusion


def test_defaults_are_the_documented_ones():
    assert RRF_K == 60 and RRF_DEPTH == 50


def test_hand_computed():
    fused = dict(reciprocal_rank_fusion({"bm25": ["a", "b", "c"], "vector": ["c", "a"]}, k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["b"] == pytest.approx(1 / 62)
    order = [x for x, _ in reciprocal_rank_fusion({"bm25": ["a", "b", "c"], "vector": ["c", "a"]})]
    assert order == ["a", "c", "b"]


def test_depth_limits_each_leg_and_duplicates_count_once():
    fused = dict(reciprocal_rank_fusion({"x": ["a", "a", "b", "c"]}, k=0, depth=2))
    assert fused == {"a": 1.0, "b": 0.5}


def test_weights_and_validation():
    fused = dict(reciprocal_rank_fusion({"x": ["a"], "y": ["b"]}, k=1, weights={"x": 2.0}))
    assert fused["a"] == pytest.approx(1.0) and fused["b"] == pytest.approx(0.5)
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"x": ["a"]}, k=-1)
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"x": ["a"]}, depth=0)


def test_matches_brute_force_on_random_rankings():
    rng = random.Random(5)
    for _ in range(200):
        pool = list(range(40))
        legs = {f"l{i}": rng.sample(pool, rng.randint(0, 30)) for i in range(rng.randint(1, 3))}
        k, depth = rng.randint(0, 80), rng.randint(1, 35)
        fused = reciprocal_rank_fusion(legs, k=k, depth=depth)
        expected: dict[int, float] = {}
        for ranking in legs.values():
            for rank, item in enumerate(ranking[:depth], start=1):
                expected[item] = expected.get(item, 0.0) + 1.0 / (k + rank)
        assert {i: pytest.approx(s) for i, s in fused} == expected
        scores = [s for _, s in fused]
        assert scores == sorted(scores, reverse=True)
        assert fused == reciprocal_rank_fusion(legs, k=k, depth=depth)  # deterministic
