"""Versions: re-indexing bumps the version; old versions are kept only when asked, and are
searched only with include_history."""

from __future__ import annotations

from ragline.store.documents import list_versions
from tests.conftest import make_index
from tests.fakes import FakeEmbedder


def test_history_kept_and_searchable_on_request(pg_url, schema, tmp_path):
    idx = make_index(pg_url, schema, embedder=FakeEmbedder(), keep_versions=1)
    f = tmp_path / "policy.md"
    for word in ("apricot", "blueberry", "cherry"):
        f.write_text(f"# Policy\n\nThe code word is {word}.\n")
        idx.ingest(f)
    versions = list_versions(idx.db, idx.collection, "default", idx.documents()[0].doc_key)
    assert [v.version for v in versions] == [3, 2]  # version 1 pruned: keep_versions=1
    assert not idx.search("blueberry", mode="bm25")
    assert not idx.search("blueberry", mode="vector", k=50) or all(
        "blueberry" not in h.text for h in idx.search("blueberry", mode="vector", k=50)
    )
    old = idx.search("blueberry", mode="bm25", include_history=True)
    assert (
        len(old) == 1 and old[0].metadata["version"] == 2 and old[0].metadata["is_current"] is False
    )
    assert not idx.search("apricot", mode="bm25", include_history=True)
    cur = idx.search("cherry", mode="hybrid")
    assert cur[0].metadata["version"] == 3 and cur[0].metadata["is_current"] is True
    # BM25 statistics of the current view ignore history: N counts current chunks only
    with idx.db.connection() as conn:
        n_cur, n_all = conn.execute(
            "SELECT sum(n_chunks) FILTER (WHERE is_current), sum(n_chunks) FROM bm25_classes"
        ).fetchone()
        from ragline.store.bm25 import check

        assert check(conn, idx.collection.id) == []
    assert 0 < n_cur < n_all
    # delete removes every version
    assert idx.delete(f) == 2
    assert not idx.search("blueberry", mode="bm25", include_history=True)
    idx.close()


def test_default_keeps_no_history(fake_index, tmp_path):
    f = tmp_path / "p.md"
    f.write_text("# P\n\nOne.\n")
    fake_index.ingest(f)
    f.write_text("# P\n\nTwo.\n")
    fake_index.ingest(f)
    key = fake_index.documents()[0].doc_key
    assert [
        v.version for v in list_versions(fake_index.db, fake_index.collection, "default", key)
    ] == [2]
