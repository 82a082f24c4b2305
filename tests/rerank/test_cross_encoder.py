"""CrossEncoderReranker on a tiny real ONNX cross-encoder the tests build (see
``build_tiny_cross_encoder``): its scores are checked against a numpy implementation of
the same graph, and its order against query-word overlap."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import FrozenInstanceError

import numpy as np
import pytest

from ragline.core.errors import ConfigError, MissingDependencyError
from ragline.core.protocols import Reranker
from ragline.rerank import CrossEncoderReranker, rank_by_scores
from ragline.rerank.cross_encoder import positive_label

from . import SEED, build_tiny_cross_encoder, make_hits, overlap, reference_scores

# passages of similar length: the model scores the *share* of query words (mean pooling)
CASES = [
    (
        "how do cats sleep at night",
        [
            "dogs bark loudly at the mailman",
            "cats sleep at night in warm beds",
            "cats eat fresh fish every day",
            "the weather is nice today here",
        ],
    ),
    (
        "postgresql vector index hnsw",
        [
            "bananas are yellow and taste sweet when ripe",
            "an index of old books sits on the shelf",
            "vector graphics editors draw lines and curves",
            "the hnsw index in postgresql stores vector data",
        ],
    ),
    (
        "who wrote the declaration of independence",
        [
            "the constitution was signed some years later on",
            "independence day fireworks light the summer sky",
            "thomas jefferson wrote the declaration of independence",
            "who is there knocking at the old door",
        ],
    ),
    (
        "python list comprehension syntax",
        [
            "snakes such as the python live in warm",
            "python list comprehension syntax is concise",
            "my grocery list has eggs and milk",
            "syntax errors stop the program from running",
        ],
    ),
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"))


@pytest.fixture(scope="module")
def seeded_dir(tmp_path_factory):
    """A model directory per seed, built once."""
    built: dict[int, object] = {}

    def get(seed: int):
        if seed not in built:
            built[seed] = build_tiny_cross_encoder(
                tmp_path_factory.mktemp(f"tiny-ce-{seed}"), seed=seed
            )
        return built[seed]

    return get


@pytest.fixture()
def reranker(model_dir):
    return CrossEncoderReranker(model_dir)


# -- scores -----------------------------------------------------------------------------
def test_protocol_and_light_constructor(reranker):
    assert isinstance(reranker, Reranker)
    assert reranker._session is None  # nothing loaded yet
    reranker.warm_up()
    session = reranker._session
    reranker.warm_up()
    assert reranker._session is session  # idempotent
    assert reranker.num_labels == 1


def test_scores_match_numpy_reference(reranker):
    for query, passages in CASES:
        passages = [*passages, "x", "a much longer passage " * 12]  # padding inside a batch
        got = reranker.score(query, passages)
        np.testing.assert_allclose(got, reference_scores(query, passages), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("seed", [SEED, 7])
@pytest.mark.parametrize("query,passages", CASES, ids=[c[0][:20] for c in CASES])
def test_passage_with_most_query_words_first(seeded_dir, seed, query, passages):
    out = CrossEncoderReranker(seeded_dir(seed)).rerank(
        query, make_hits(passages), top_k=len(passages)
    )
    best = max(passages, key=lambda p: overlap(query, p))
    assert out[0].text == best
    assert sorted(h.chunk_id for h in out) == [100 + i for i in range(len(passages))]


def test_top_k_scores_and_ranks_recorded(reranker):
    query, passages = CASES[1]
    hits = make_hits(passages)
    out = reranker.rerank(query, hits, top_k=2)
    assert len(out) == 2 and reranker.last_scored == 4
    assert out[0].text == passages[3]
    ref = reference_scores(query, passages)
    expected = sorted(range(4), key=lambda i: -ref[i])[:2]
    assert [h.chunk_id for h in out] == [100 + i for i in expected]
    for pos, h in enumerate(out, start=1):
        assert h.rank == pos and h.ranks["rerank"] == pos
        assert h.score == h.scores["rerank"]
        assert h.scores["rerank"] == pytest.approx(ref[h.chunk_id - 100], rel=1e-4, abs=1e-5)
        assert h.scores["rrf"] == hits[h.chunk_id - 100].scores["rrf"]  # earlier stages kept
        assert h.ranks["rrf"] == h.chunk_id - 100 + 1
    assert out[0].scores["rerank"] >= out[1].scores["rerank"]
    # the input hits are untouched
    assert all("rerank" not in h.scores and "rerank" not in h.ranks for h in hits)
    assert [h.rank for h in hits] == [1, 2, 3, 4]
    with pytest.raises(FrozenInstanceError):
        out[0].score = 0.0  # type: ignore[misc]
    assert len(reranker.rerank(query, hits, top_k=99)) == 4
    assert reranker.rerank(query, hits, top_k=0) == []
    with pytest.raises(ConfigError, match="top_k"):
        reranker.rerank(query, hits, top_k=-1)


def test_ties_keep_input_order(model_dir):
    a, b = "cats sleep at night", "the weather is nice"
    hits = make_hits([b, a, b, a, a, b])
    for bs in (1, 2, 16):
        out = CrossEncoderReranker(model_dir, batch_size=bs).rerank(
            "do cats sleep at night", hits, top_k=6
        )
        assert [h.chunk_id for h in out] == [101, 103, 104, 100, 102, 105]
        assert out[0].score == out[1].score == out[2].score


def test_empty_input_loads_nothing(reranker):
    assert reranker.rerank("anything", [], top_k=5) == []
    assert reranker._session is None and reranker.last_scored == 0
    assert reranker.score("anything", []) == []


def test_batch_size_does_not_change_results(model_dir):
    query = "postgresql vector index hnsw cats night"
    passages = [p for _, ps in CASES for p in ps] + ["short", "a much longer passage " * 20]
    hits = make_hits(passages)
    results = [
        CrossEncoderReranker(model_dir, batch_size=bs).rerank(query, hits, top_k=len(hits))
        for bs in (1, 3, 16)
    ]
    for other in results[1:]:
        assert [h.chunk_id for h in other] == [h.chunk_id for h in results[0]]
        np.testing.assert_allclose(
            [h.score for h in other], [h.score for h in results[0]], rtol=1e-5, atol=1e-6
        )


# -- latency budget ---------------------------------------------------------------------
def test_zero_budget_scores_only_the_first_batch(model_dir):
    query = "how do cats sleep at night"
    passages = [
        "the weather is nice today here",
        "cats sleep at night in warm beds",  # the best of the first batch
        "dogs bark loudly at the mailman",
        "cats sleep at night",  # the best overall, in the second batch
        "cats eat fresh fish every day",
    ]
    hits = make_hits(passages)
    ce = CrossEncoderReranker(model_dir, batch_size=2, latency_budget_ms=0)
    ce.warm_up()  # loading is not part of the budget
    out = ce.rerank(query, hits, top_k=5)
    assert ce.last_scored == 2
    assert [h.chunk_id for h in out] == [101, 100, 102, 103, 104]
    assert [h.rank for h in out] == [1, 2, 3, 4, 5]
    assert all("rerank" in h.scores for h in out[:2])
    for h in out[2:]:  # unscored: first-stage score kept, rank set
        assert "rerank" not in h.scores and h.ranks["rerank"] == h.rank
        assert h.score == hits[h.chunk_id - 100].score
    assert [h.chunk_id for h in ce.rerank(query, hits, top_k=3)] == [101, 100, 102]

    generous = CrossEncoderReranker(model_dir, batch_size=2, latency_budget_ms=60_000)
    out = generous.rerank(query, hits, top_k=5)
    assert generous.last_scored == 5 and all("rerank" in h.scores for h in out)
    assert [h.chunk_id for h in out[:2]] == [103, 101]


def test_invalid_settings(model_dir):
    with pytest.raises(ConfigError, match="latency_budget_ms"):
        CrossEncoderReranker(model_dir, latency_budget_ms=-1)
    with pytest.raises(ConfigError, match="batch_size"):
        CrossEncoderReranker(model_dir, batch_size=0)
    with pytest.raises(ConfigError, match="max_length"):
        CrossEncoderReranker(model_dir, max_length=2)


# -- truncation -------------------------------------------------------------------------
def test_only_the_passage_is_truncated(model_dir):
    query = "cats sleep at night"
    filler = "the weather is nice today and the market sells bread " * 10
    front = make_hits([filler + "cats sleep at night", "cats sleep at night " + filler])
    ce = CrossEncoderReranker(model_dir, max_length=24)
    out = ce.rerank(query, front, top_k=2)
    # the tail of the first passage is cut, so only the second still shows the query words
    assert out[0].chunk_id == 101
    assert ce.score(query, [filler * 20])[0] == pytest.approx(
        ce.score(query, [filler * 40])[0], rel=1e-6
    )


def test_long_query_leaves_room_for_the_passage(model_dir):
    query = "cats sleep at night " + "and many more words about nothing " * 50
    ce = CrossEncoderReranker(model_dir, max_length=32)
    out = ce.rerank(query, make_hits(["the weather is nice", "cats sleep at night"]), top_k=2)
    assert out[0].chunk_id == 101  # the passage was scored: it shares the query's head


def test_max_length_capped_by_config(tmp_path):
    d = build_tiny_cross_encoder(tmp_path / "m", config={"max_position_embeddings": 64})
    assert CrossEncoderReranker(d).max_length == 64
    (d / "config.json").write_text(
        json.dumps({"max_position_embeddings": 514, "model_type": "xlm-roberta"})
    )
    assert CrossEncoderReranker(d).max_length == 512


# -- labels ----------------------------------------------------------------------------
def test_two_label_model_uses_positive_softmax(tmp_path, model_dir):
    d = build_tiny_cross_encoder(
        tmp_path / "two",
        num_labels=2,
        config={"num_labels": 2, "id2label": {"0": "LABEL_0", "1": "LABEL_1"}},
    )
    query, passages = CASES[0]
    two = CrossEncoderReranker(d)
    assert (two.num_labels, two.positive) == (2, 1)
    got = two.score(query, passages)
    logits = np.asarray(reference_scores(query, passages))
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-2 * logits)), rtol=1e-4)  # softmax([-x, x])[1]
    one = CrossEncoderReranker(model_dir).rerank(query, make_hits(passages), top_k=4)
    assert [h.chunk_id for h in two.rerank(query, make_hits(passages), top_k=4)] == [
        h.chunk_id for h in one
    ]
    # the label count is learnt from the model when config.json does not give it
    (d / "config.json").unlink()
    learnt = CrossEncoderReranker(d)
    learnt.warm_up()
    assert (learnt.num_labels, learnt.positive) == (2, 1)


def test_label_config_checks(tmp_path):
    d = build_tiny_cross_encoder(tmp_path / "m", config={"num_labels": 2})
    with pytest.raises(
        ConfigError, match="outputs 1 logits per pair but config.json says num_labels=2"
    ):
        CrossEncoderReranker(d).warm_up()
    assert positive_label(2, {"0": "irrelevant", "1": "relevant"}) == 1
    assert positive_label(2, {"0": "Relevant", "1": "other"}) == 0
    assert positive_label(3, {"0": "contradiction", "1": "entailment", "2": "neutral"}) == 1
    (d / "config.json").write_text(json.dumps({"id2label": {"0": "a", "1": "b", "2": "c"}}))
    with pytest.raises(ConfigError, match="which of the 3 labels"):
        CrossEncoderReranker(d)


# -- errors -----------------------------------------------------------------------------
def test_missing_files_are_named(tmp_path):
    with pytest.raises(ConfigError, match="directory not found"):
        CrossEncoderReranker(tmp_path / "nope")
    d = build_tiny_cross_encoder(tmp_path / "m")
    (d / "tokenizer.json").unlink()
    with pytest.raises(ConfigError, match=r"missing .*tokenizer\.json"):
        CrossEncoderReranker(d)
    (d / "model.onnx").unlink()
    with pytest.raises(ConfigError, match=r"model\.onnx or onnx/model\.onnx"):
        CrossEncoderReranker(d)


def test_nested_onnx_layout(tmp_path, model_dir):
    d = build_tiny_cross_encoder(tmp_path / "nested", nested=True)
    assert not (d / "model.onnx").exists()
    query, passages = CASES[2]
    np.testing.assert_allclose(
        CrossEncoderReranker(d).score(query, passages),
        CrossEncoderReranker(model_dir).score(query, passages),
    )


def test_broken_model_file_is_reported(tmp_path):
    d = build_tiny_cross_encoder(tmp_path / "m")
    (d / "model.onnx").write_bytes(b"not an onnx model")
    ce = CrossEncoderReranker(d)  # the constructor does not read the weights
    with pytest.raises(ConfigError, match=r"cannot load .*model\.onnx"):
        ce.rerank("q", make_hits(["p"]), top_k=1)


def test_missing_onnxruntime_names_the_package(reranker, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime → ImportError
    with pytest.raises(MissingDependencyError, match="pip install onnxruntime tokenizers"):
        reranker.warm_up()


def test_import_stays_light():
    code = (
        "import sys, ragline.rerank as r; r.CrossEncoderReranker; r.HttpReranker; "
        "heavy = {'onnxruntime', 'tokenizers', 'numpy', 'httpx'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the pure ordering function ----------------------------------------------------------
def test_rank_by_scores():
    hits = make_hits(["a", "b", "c", "d"])
    out = rank_by_scores(hits, [0.5, None, 0.9, 0.5], top_k=4)
    assert [h.chunk_id for h in out] == [102, 100, 103, 101]
    assert [h.rank for h in out] == [1, 2, 3, 4]
    assert out[3].score == hits[1].score and "rerank" not in out[3].scores
    assert rank_by_scores(hits, [None] * 4, top_k=2) == [
        h.__class__(**{**h.__dict__, "ranks": {**h.ranks, "rerank": h.rank}}) for h in hits[:2]
    ]
    with pytest.raises(ValueError, match="NaN"):
        rank_by_scores(hits, [float("nan"), 1.0, 1.0, 1.0], top_k=1)
    with pytest.raises(ValueError, match="3 scores for 4 hits"):
        rank_by_scores(hits, [1.0, 1.0, 1.0], top_k=1)
