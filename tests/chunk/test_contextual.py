"""Contextual retrieval: a generator-written sentence in every chunk header."""

from __future__ import annotations

import pytest

from ragline.core.errors import ConfigError
from ragline.ingest.sources import text_source
from tests.conftest import make_index
from tests.fakes import FakeChatServer, FakeEmbedder

DOC = "\n\n".join(
    f"Step {i}: tighten bolt {i} to the torque in the table and check the seal." for i in range(40)
)


def _reply(messages):
    user = messages[-1]["content"]
    assert "<document>" in user and "<chunk>" in user
    assert "https://" not in user  # the document is neutralized like any prompt source
    return "This chunk is from the Zephyr pump reassembly procedure. See https://evil.example/x"


def test_context_sentence_goes_into_headers_and_the_index(pg_url, schema):
    with FakeChatServer(_reply) as srv:
        idx = make_index(
            pg_url,
            schema,
            embedder=FakeEmbedder(),
            generator=f"openai:tiny@{srv.root}",
            contextual_retrieval=True,
            chunk_max_tokens=64,
        )
        idx.ingest_sources([text_source("pump", "Pump manual", DOC + " https://evil.example/y")])
        assert idx.status()["chunker"].endswith(":ctx")
        with idx.db.connection() as conn:
            rows = conn.execute("SELECT header, text, token_count FROM chunks").fetchall()
        assert len(rows) > 3 and len(srv.requests) == len(rows)  # one call per chunk
        for header, text, tokens in rows:
            assert "Zephyr pump reassembly" in header and "evil" not in header
            assert "Zephyr" not in text  # the chunk's own text is untouched
            assert tokens <= 64
        # the context makes chunks findable by words only the context has
        hits = idx.search("Zephyr reassembly", mode="bm25", k=3)
        assert hits and hits[0].doc_key == "pump"
        idx.close()
    # reopened without a generator: search works, ingesting says what is missing
    again = make_index(pg_url, schema, embedder=FakeEmbedder())
    assert again.search("Zephyr reassembly", mode="bm25", k=1)
    report = again.ingest_sources([text_source("new", "New", "Some new text here.")])
    assert report.failed and "needs a generator" in report.failed[0].reason
    again.close()


def test_context_is_cut_to_the_token_limit(pg_url, schema):
    long = "word " * 500
    with FakeChatServer(lambda m: long) as srv:
        idx = make_index(
            pg_url,
            schema,
            embedder=FakeEmbedder(),
            generator=f"openai:tiny@{srv.root}",
            contextual_retrieval=True,
            chunk_max_tokens=48,
        )
        idx.ingest_sources([text_source("pump", "Pump manual", DOC)])
        with idx.db.connection() as conn:
            tokens = [r[0] for r in conn.execute("SELECT token_count FROM chunks")]
        assert tokens and max(tokens) <= 48
        idx.close()


def test_without_a_generator_new_contextual_collections_fail_clearly(pg_url, schema):
    idx = make_index(pg_url, schema, embedder=FakeEmbedder(), contextual_retrieval=True)
    report = idx.ingest_sources([text_source("a", "A", "Some text.")])
    assert report.failed and "needs a generator" in report.failed[0].reason
    with pytest.raises(ConfigError):
        idx.chunker.chunk(None)  # type: ignore[arg-type]
    idx.close()
