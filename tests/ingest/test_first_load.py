"""A first load into an empty collection builds the vector index once at the end (files,
texts and folder syncs as well as precomputed vectors); later loads update it row by row.
Either way the index exists afterwards and vector search uses it, also after a failure."""

from __future__ import annotations

import pytest

from ragline.ingest.sources import text_source
from ragline.store.collections import has_vector_index


def _texts(prefix: str, n: int):
    return [
        text_source(
            f"{prefix}{i}", f"Doc {i}", f"Pump {prefix}{i} hums at {i} hertz in hall {i % 7}."
        )
        for i in range(n)
    ]


def test_a_first_ingest_builds_the_index_at_the_end(fake_index):
    seen: list[bool] = []

    def during(_name, _chunks, _pages=0):
        seen.append(has_vector_index(fake_index.db, fake_index.collection))

    first = fake_index.ingest_sources(_texts("a", 30), on_progress=during)
    col = fake_index.collection
    assert seen and not any(seen)  # no row-by-row inserts into a graph during the load
    assert has_vector_index(fake_index.db, col) and first.vector_index_seconds > 0
    seen.clear()
    later = fake_index.ingest_sources(_texts("b", 5), on_progress=during)
    assert seen and all(seen) and later.vector_index_seconds == 0
    hits = fake_index.search("Pump b3 hums", mode="vector", k=3)
    assert hits and all(h.doc_key.startswith(("a", "b")) for h in hits)


def test_a_failed_first_ingest_still_leaves_the_index(fake_index, monkeypatch):
    import ragline.ingest.pipeline as pipeline

    def broken(*_a, **_k):
        raise RuntimeError("disk on fire")

    fake_index.ingest_sources(_texts("x", 1))  # binds the collection
    monkeypatch.setattr(pipeline.Ingestor, "ingest", broken)
    with fake_index.db.connection() as conn:
        conn.execute("DELETE FROM chunks WHERE collection_id = %s", (fake_index.collection.id,))
    with pytest.raises(RuntimeError, match="disk on fire"):
        fake_index.ingest_sources(_texts("y", 3))
    assert has_vector_index(fake_index.db, fake_index.collection)


def test_a_first_sync_builds_the_index_at_the_end(fake_index, tmp_path):
    for i in range(12):
        (tmp_path / f"n{i}.md").write_text(f"# Note {i}\n\nThe valve {i} opens at dawn.\n")
    report = fake_index.sync(tmp_path)
    assert len(report.added) == 12 and report.vector_index_seconds > 0
    assert has_vector_index(fake_index.db, fake_index.collection)
    (tmp_path / "n12.md").write_text("# Note 12\n\nThe valve 12 closes at dusk.\n")
    again = fake_index.sync(tmp_path)
    assert again.added == ["n12.md"] or len(again.added) == 1
    assert again.vector_index_seconds == 0
