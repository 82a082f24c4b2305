"""Chunking strategies through the index: parent–child search hands over each parent once,
strategies are fixed per collection, and semantic chunking ingests end to end."""

from __future__ import annotations

import pytest

from ragline.core.errors import ConfigError
from ragline.ingest.sources import text_source
from tests.conftest import make_index
from tests.fakes import FakeEmbedder

TOPICS = {
    "billing": "Invoices are issued monthly and payable within thirty days of the invoice date.",
    "security": "Passwords are hashed with scrypt and sessions expire after fifteen minutes idle.",
    "backups": "Snapshots are taken nightly and kept for ninety days in a second region.",
    "support": "Tickets are answered within four business hours by the on-call engineer.",
}


def _doc(name: str) -> str:
    # one long section per topic: several children per parent
    sections = []
    for topic, sentence in TOPICS.items():
        filler = " ".join(f"{topic} note {i} for {name} covers routine detail." for i in range(40))
        sections.append(f"{sentence} {filler} {sentence}")
    return "\n\n".join(sections)


@pytest.fixture()
def pc_index(pg_url, schema):
    idx = make_index(pg_url, schema, embedder=FakeEmbedder(), chunking="parent-child")
    idx.ingest_sources([text_source(f"doc-{n}", f"Handbook {n}", _doc(n)) for n in "ab"])
    yield idx
    idx.close()


def test_children_are_searched_and_each_parent_is_returned_once(pc_index):
    st = pc_index.status()
    assert st["chunker"].startswith("parent-child-v1:128:16:1024")
    with pc_index.db.connection() as conn:
        n_parents = conn.execute("SELECT count(*) FROM chunk_parents").fetchone()[0]
        n_children = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert 2 <= n_parents < n_children
    for mode in ("bm25", "vector", "hybrid"):
        hits = pc_index.search("how long are snapshots kept in a second region", k=10, mode=mode)
        keys = [(h.document_id, h.parent) for h in hits]
        assert all(h.parent is not None for h in hits)
        assert len(keys) == len(set(keys)), mode  # each parent once
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        if mode == "vector":  # the fake embedder's ranking is noise; structure only
            continue
        top = hits[0]
        assert "ninety days" in top.text
        matched = top.metadata["matched_text"]
        assert matched in top.text and len(matched) < len(top.text)  # child inside its parent
        assert top.text.count("note") > matched.count("note")


def test_context_uses_parents_without_neighbour_expansion(pc_index):
    ctx = pc_index.context("how quickly are tickets answered by the on-call engineer", k=5)
    assert ctx.passages and ctx.tokens <= ctx.budget
    assert not ctx.expanded  # the parent already is the expansion
    keys = [(p.document_id, p.parent) for p in ctx.passages]
    assert len(keys) == len(set(keys))


def test_strategy_is_fixed_per_collection(pc_index, pg_url, schema):
    # opened without a strategy, the collection keeps its own
    again = make_index(pg_url, schema, embedder=FakeEmbedder())
    again.ingest_sources([text_source("doc-c", "Handbook c", _doc("c"))])
    assert again.chunker.name == pc_index.chunker.name
    with again.db.connection() as conn:
        orphans = conn.execute(
            "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE d.doc_key = 'doc-c' AND c.parent_ordinal IS NULL"
        ).fetchone()[0]
    assert orphans == 0
    again.close()
    with pytest.raises(ConfigError, match="cannot switch"):
        make_index(pg_url, schema, embedder=FakeEmbedder(), chunking="semantic")


def test_delete_removes_parents(pc_index):
    pc_index.delete("doc-a")
    with pc_index.db.connection() as conn:
        left = conn.execute(
            "SELECT count(*) FROM chunk_parents p LEFT JOIN documents d ON d.id = p.document_id "
            "WHERE d.id IS NULL OR d.doc_key = 'doc-a'"
        ).fetchone()[0]
    assert left == 0


@pytest.mark.parametrize("strategy", ["fixed", "recursive", "semantic"])
def test_other_strategies_ingest_and_search(pg_url, schema, strategy):
    emb = FakeEmbedder()
    idx = make_index(pg_url, schema, embedder=emb, chunking=strategy)
    report = idx.ingest_sources([text_source(f"doc-{n}", f"Handbook {n}", _doc(n)) for n in "ab"])
    assert len(report.added) == 2 and not report.failed
    assert idx.status()["chunker"].startswith(
        {"fixed": "fixed-v1", "recursive": "recursive-v1", "semantic": "semantic-v1"}[strategy]
    )
    hits = idx.search("how long are snapshots kept in a second region", k=5)
    assert any("ninety days" in h.text for h in hits[:3])
    assert all(h.parent is None for h in hits)
    idx.close()
