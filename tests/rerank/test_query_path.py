"""The reranker in the query path: mode 'rerank' reorders the fused candidates."""

from __future__ import annotations

import pytest

from ragline.core.errors import ConfigError
from ragline.ingest.sources import text_source
from tests.conftest import make_index
from tests.fakes import FakeEmbedder
from tests.rerank import build_tiny_cross_encoder


def test_rerank_mode_reorders_fused_hits(pg_url, schema, tmp_path):
    model = build_tiny_cross_encoder(tmp_path / "ce")
    idx = make_index(
        pg_url, schema, embedder=FakeEmbedder(), reranker=f"onnx:{model}", rerank_depth=20
    )
    texts = [
        "battery charging dock cleaning weekly schedule",
        "the battery lasts ten hours on a full charge",
        "charging dock contacts need isopropyl alcohol",
        "warehouse shelves hold pallets of boxes",
        "ten hours battery full charge lasts robot",
    ]
    idx.ingest_sources([text_source(f"d{i}", f"Doc {i}", t) for i, t in enumerate(texts)])
    res = idx.search_result("how many hours does the battery last on a full charge", k=3)
    assert res.mode == "rerank" and "rerank" in res.timings_ms
    hits = res.hits
    assert len(hits) == 3 and all("rerank" in h.scores for h in hits)
    scores = [h.scores["rerank"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert {hits[0].doc_key, hits[1].doc_key} == {"d1", "d4"}
    hybrid = idx.search("how many hours does the battery last on a full charge", k=3, mode="hybrid")
    assert all("rerank" not in h.scores for h in hybrid)
    idx.close()


def test_rerank_mode_without_reranker_is_explained(fake_index):
    fake_index.ingest_sources([text_source("x", "X", "text")])
    with pytest.raises(ConfigError, match="needs a reranker"):
        fake_index.search("text", mode="rerank")
