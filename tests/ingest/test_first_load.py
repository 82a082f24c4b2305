"""A first load into an empty collection builds the vector index once at the end (files,
texts and folder syncs as well as precomputed vectors); later loads update it row by row.
Either way the index exists afterwards and vector search uses it, also after a failure."""

from __future__ import annotations

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


def test_a_first_ingest_builds_the_index_at_the_end(fake_index):
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
    assert vector_index_state(fake_index.db, fake_index.collection) == "ready"


def test_a_first_sync_builds_the_index_at_the_end(fake_index, tmp_path):
    for i in range(12):
        (tmp_path / f"n{i}.md").write_text(f"# Note {i}\n\nThe valve {i} opens at dawn.\n")
    report = fake_index.sync(tmp_path)
    assert len(report.added) == 12 and report.vector_index_seconds > 0
    assert vector_index_state(fake_index.db, fake_index.collection) == "ready"
    (tmp_path / "n12.md").write_text("# Note 12\n\nThe valve 12 closes at dusk.\n")
    again = fake_index.sync(tmp_path)
    assert again.added == ["n12.md"] or len(again.added) == 1
    assert again.vector_index_seconds == 0


def test_an_index_a_killed_load_left_invalid_or_missing_is_rebuilt(fake_index):
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


def test_a_build_running_elsewhere_is_left_to_finish(fake_index):
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


def test_the_build_leaves_no_setting_on_its_pooled_connection(fake_index):
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
