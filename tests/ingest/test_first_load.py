"""A first load into an empty collection builds the vector index once at the end (files,
texts and folder syncs as well as precomputed vectors); later loads update it row by row.
Either way the index exists afterwards and vector search uses it, also after a failure.

A collection smaller than ``GRAPH_FROM`` chunks gets no graph (every search of it scans
exactly); the load that brings it to that size builds it at its end. Most tests here are
about the graph itself, so they lower ``GRAPH_FROM`` to 0 (``graph_always``)."""

from __future__ import annotations

import numpy as np
import pytest

from ragline.ingest.sources import text_source
from ragline.store.collections import vector_index_state


def _texts(prefix: str, n: int):
    return [
        text_source(
            f"{prefix}{i}", f"Doc {i}", f"Pump {prefix}{i} hums at {i} hertz in hall {i % 7}."
        )
        for i in range(n)
    ]


def test_a_first_ingest_builds_the_index_at_the_end(fake_index, graph_always):
    seen: list[bool] = []

    def during(_name, _chunks, _pages=0):
        seen.append(vector_index_state(fake_index.db, fake_index.collection) == "ready")

    first = fake_index.ingest_sources(_texts("a", 30), on_progress=during)
    col = fake_index.collection
    assert seen and not any(seen)  # no row-by-row inserts into a graph during the load
    assert vector_index_state(fake_index.db, col) == "ready" and first.vector_index_seconds > 0
    seen.clear()
    later = fake_index.ingest_sources(_texts("b", 5), on_progress=during)
    assert seen and all(seen) and later.vector_index_seconds == 0
    hits = fake_index.search("Pump b3 hums", mode="vector", k=3)
    assert hits and all(h.doc_key.startswith(("a", "b")) for h in hits)


def test_a_failed_first_ingest_still_leaves_the_index(fake_index, graph_always, monkeypatch):
    import ragline.ingest.pipeline as pipeline

    def broken(*_a, **_k):
        raise RuntimeError("disk on fire")

    fake_index.ingest_sources(_texts("x", 1))  # binds the collection
    monkeypatch.setattr(pipeline.Ingestor, "ingest", broken)
    with fake_index.db.connection() as conn:
        conn.execute("DELETE FROM chunks WHERE collection_id = %s", (fake_index.collection.id,))
    with pytest.raises(RuntimeError, match="disk on fire"):
        fake_index.ingest_sources(_texts("y", 3))
    assert vector_index_state(fake_index.db, fake_index.collection) == "ready"


def test_a_first_sync_builds_the_index_at_the_end(fake_index, graph_always, tmp_path):
    for i in range(12):
        (tmp_path / f"n{i}.md").write_text(f"# Note {i}\n\nThe valve {i} opens at dawn.\n")
    report = fake_index.sync(tmp_path)
    assert len(report.added) == 12 and report.vector_index_seconds > 0
    assert vector_index_state(fake_index.db, fake_index.collection) == "ready"
    (tmp_path / "n12.md").write_text("# Note 12\n\nThe valve 12 closes at dusk.\n")
    again = fake_index.sync(tmp_path)
    assert again.added == ["n12.md"] or len(again.added) == 1
    assert again.vector_index_seconds == 0


def test_an_index_a_killed_load_left_invalid_or_missing_is_rebuilt(fake_index, graph_always):
    """A process killed inside ``CREATE INDEX CONCURRENTLY`` leaves an invalid index
    (``IF NOT EXISTS`` would keep it forever: never used, always updated); one killed
    before the build leaves none. ``status`` says so and the next ingest, even of
    nothing new, builds it."""
    fake_index.ingest_sources(_texts("k", 6))
    col = fake_index.collection
    assert fake_index.status()["vector_index"] == "ready"
    assert "vector_index_warning" not in fake_index.status()
    for damage, state in (
        (
            f"UPDATE pg_index SET indisvalid = false WHERE indexrelid = '{col.hnsw_index}'::regclass",
            "invalid",
        ),
        (f"DROP INDEX {col.hnsw_index}", "missing"),
    ):
        with fake_index.db.connection() as conn:
            conn.execute(damage)
        st = fake_index.status()
        assert st["vector_index"] == state and state in st["vector_index_warning"]
        report = fake_index.ingest_sources(_texts("k", 6))  # all unchanged
        assert len(report.unchanged) == 6 and report.vector_index_seconds > 0
        assert fake_index.status()["vector_index"] == "ready"
        with fake_index.db.connection() as conn:
            valid = conn.execute(
                "SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass",
                (col.hnsw_index,),
            ).fetchone()[0]
        assert valid


def test_a_build_running_elsewhere_is_left_to_finish(fake_index, graph_always):
    """An index another process is building reads as invalid in the catalog; the end of
    a load must not drop or rebuild it."""
    import threading
    import time

    from ragline.store.collections import build_vector_index, deferred_vector_index

    fake_index.ingest_sources(_texts("r", 4))
    db, col = fake_index.db, fake_index.collection
    with db.connection() as conn:
        conn.execute(f"DROP INDEX {col.hnsw_index}")
    with db.connection() as writer:  # a writer in flight: the concurrent build waits for it
        writer.execute("LOCK TABLE chunks IN ROW EXCLUSIVE MODE")
        builder = threading.Thread(target=build_vector_index, args=(db, col))
        builder.start()
        deadline = time.monotonic() + 20
        while vector_index_state(db, col) != "building" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert vector_index_state(db, col) == "building"
        with deferred_vector_index(db, col) as build:
            pass
        assert build["seconds"] == 0 and vector_index_state(db, col) == "building"
        writer.rollback()
    builder.join(timeout=30)
    assert not builder.is_alive() and vector_index_state(db, col) == "ready"


def test_the_build_leaves_no_setting_on_its_pooled_connection(fake_index, graph_always):
    """The build sizes its session (work memory, parallel workers, no minimum table size
    for them); the connection returns to the pool, and a query planned on it later must
    see the server's own settings again."""
    names = (
        "maintenance_work_mem",
        "max_parallel_maintenance_workers",
        "min_parallel_table_scan_size",
    )

    def shown() -> list[list[str]]:
        # every connection the pool holds (it is single-threaded here: one at a time)
        out = []
        for _ in range(fake_index.db.pool.get_stats().get("pool_size", 1)):
            with fake_index.db.connection() as conn:
                out.append([conn.execute(f"SHOW {n}").fetchone()[0] for n in names])
        return out

    before = shown()
    first = fake_index.ingest_sources(_texts("s", 4))
    assert first.vector_index_seconds > 0
    assert shown() == before


def _nearest(index, query: str, k: int) -> list[tuple[str, float]]:
    """The k nearest chunks by brute force over every stored vector (numpy, float64)."""
    q = np.asarray(index.embedder.embed_query(query), dtype=np.float64)
    with index.db.connection() as conn:
        rows = conn.execute(
            "SELECT d.doc_key, c.embedding FROM chunks c JOIN documents d "
            "ON d.tenant = c.tenant AND d.id = c.document_id WHERE c.collection_id = %s",
            (index.collection.id,),
        ).fetchall()
    keys = [r[0] for r in rows]
    vecs = np.array([r[1].to_numpy() for r in rows], dtype=np.float64)
    sims = vecs @ q / (np.linalg.norm(vecs, axis=1) * np.linalg.norm(q))
    order = np.lexsort((keys, -sims))[:k]
    return [(keys[i], float(sims[i])) for i in order]


def test_a_small_collection_gets_no_graph_and_is_searched_exactly(fake_index):
    """Under GRAPH_FROM chunks a load builds nothing at its end; status says the search is
    exact, with no warning; vector search returns the exact nearest chunks."""
    from ragline.store.collections import GRAPH_FROM

    assert GRAPH_FROM == 2000
    seen: list[str] = []
    report = fake_index.ingest_sources(
        _texts("e", 40),
        on_progress=lambda *_: seen.append(
            vector_index_state(fake_index.db, fake_index.collection)
        ),
    )
    assert report.vector_index_seconds == 0 and seen and set(seen) == {"exact"}
    st = fake_index.status()
    assert st["vector_index"] == "exact" and "vector_index_warning" not in st
    assert "under 2,000 chunks" in st["vector_index_note"]
    with fake_index.db.connection() as conn:
        n = conn.execute(
            "SELECT count(*) FROM pg_indexes WHERE indexname = %s",
            (fake_index.collection.hnsw_index,),
        ).fetchone()[0]
    assert n == 0
    hits = fake_index.search("Pump e17 hums at 17 hertz", mode="vector", k=8)
    want = _nearest(fake_index, "Pump e17 hums at 17 hertz", 8)
    assert [h.doc_key for h in hits] == [k for k, _ in want]
    assert all(abs(h.score - s) < 1e-5 for h, (_, s) in zip(hits, want))


def test_the_load_that_reaches_graph_from_builds_the_graph_at_its_end(fake_index, monkeypatch):
    """A collection without a graph gets it once a load leaves it at GRAPH_FROM chunks or
    more: built once at the end of that load (no row-by-row inserts during it), then kept
    and updated row by row, also when deletes shrink the collection again."""
    monkeypatch.setattr("ragline.store.collections.GRAPH_FROM", 40)
    first = fake_index.ingest_sources(_texts("a", 30))
    col = fake_index.collection
    assert first.vector_index_seconds == 0 and vector_index_state(fake_index.db, col) == "exact"
    seen: list[str] = []

    def during(*_a):
        seen.append(vector_index_state(fake_index.db, col))

    second = fake_index.ingest_sources(_texts("b", 15), on_progress=during)
    assert seen and "ready" not in seen  # the rows went in without a graph
    assert second.vector_index_seconds > 0 and vector_index_state(fake_index.db, col) == "ready"
    seen.clear()
    third = fake_index.ingest_sources(_texts("c", 3), on_progress=during)
    assert third.vector_index_seconds == 0 and seen and set(seen) == {"ready"}
    for i in range(30):
        fake_index.delete(f"a{i}")
    assert vector_index_state(fake_index.db, col) == "ready"
    hits = fake_index.search("Pump b3 hums", mode="vector", k=3)
    assert hits and all(h.doc_key.startswith(("b", "c")) for h in hits)
