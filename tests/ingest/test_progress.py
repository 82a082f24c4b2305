"""Ingest progress moves per document parsed and per slice embedded, not per batch."""

from __future__ import annotations

from ragline.ingest.pipeline import EMBED_PROGRESS_SLICE
from ragline.ingest.sources import text_source


def _sources(n: int):
    return [
        text_source(f"d{i}", f"Doc {i}", f"Document {i} says the pump number {i} hums quietly.")
        for i in range(n)
    ]


def test_stages_are_reported_as_they_happen(fake_index):
    events: list[tuple[str, int]] = []
    n = EMBED_PROGRESS_SLICE + 36  # one batch of 256 chunks, two embedding slices
    fake_index.ingest_sources(
        _sources(n),
        on_progress=lambda name, chunks, pages=0: events.append(("written", chunks)),
        on_stage=lambda stage, k: events.append((stage, k)),
    )
    parsed = [k for s, k in events if s == "parsed"]
    embedded = [k for s, k in events if s == "embedded" and k]
    chunks = sum(k for s, k in events if s == "chunks")
    assert parsed == [1] * n and chunks == n
    assert embedded == [EMBED_PROGRESS_SLICE, 36]  # moves inside the batch
    first_write = next(i for i, (s, _) in enumerate(events) if s == "written")
    assert first_write > max(i for i, (s, k) in enumerate(events) if s == "embedded")
    assert [k for s, k in events if s == "written"] == [1] * n
    # the second time every vector comes from the cache: counted at once
    events.clear()
    fake_index.ingest_sources(
        [text_source("again", "Again", "Document 0 says the pump number 0 hums quietly.")],
        on_stage=lambda stage, k: events.append((stage, k)),
    )
    assert ("embedded", 1) in events


def test_an_upload_job_shows_the_counts(fake_index):
    from ragline.serve.jobs import JobProgress
    from ragline.store.jobs import create_job, get_job

    job = create_job(fake_index.db, "default", "upload", 3)
    progress = JobProgress(fake_index.admin, job["id"])
    fake_index.ingest_sources(_sources(3), on_progress=progress, on_stage=progress.stage)
    progress.flush()
    got = get_job(fake_index.db, job["id"], "default")
    assert got["done"] == 3
    assert got["progress"] == {
        "parsed": 3,
        "chunks": 3,
        "embedded": 3,
        "written": 3,
        "done": 3,
    }


def test_the_last_batch_is_written_slice_by_slice(fake_index):
    """Nothing is embedded after the last batch, so it is written in slices, each while
    the next slice embeds; a full batch is still written whole (one block per list)."""
    events: list[tuple[str, str | int]] = []
    full, rest = 256, 2 * EMBED_PROGRESS_SLICE + 10  # one full batch, then the last one
    fake_index.ingest_sources(
        _sources(full + rest),
        on_progress=lambda name, chunks, pages=0: events.append(("written", name)),
        on_stage=lambda stage, k: events.append((stage, k)),
    )
    embedded = [i for i, (s, k) in enumerate(events) if s == "embedded" and k]
    written = [i for i, (s, _) in enumerate(events) if s == "written"]
    assert len(embedded) == 4 + 3 and len(written) == full + rest
    # the full batch: all four slices embedded before its first document is written
    assert embedded[3] < written[0] and written[full - 1] < embedded[5]
    # the last batch: its first slice is written before its last slice embeds
    first_slice_written = written[full + EMBED_PROGRESS_SLICE - 1]
    assert embedded[5] < first_slice_written < embedded[6]
    assert fake_index.status()["chunks"] == full + rest


def test_an_embedder_that_reports_its_batches_gets_a_batch_in_one_call(pg_url, schema):
    """An embedder taking ``progress`` (the local ones) embeds a full batch in one call (no
    call ends mid-batch, where one core waits for the other) and progress still moves in
    its own batches, each counted once."""
    from tests.conftest import make_index
    from tests.fakes import FakeEmbedder

    class Reporting(FakeEmbedder):
        sizes: list[int] = []

        def embed_documents(self, texts, *, progress=None):
            self.sizes.append(len(texts))
            out = super().embed_documents(texts)
            for i in range(0, len(texts), 10):
                if progress is not None:
                    progress(len(texts[i : i + 10]))
            return out

    embedder = Reporting()
    idx = make_index(pg_url, schema, embedder=embedder)
    try:
        events: list[int] = []
        full, rest = 256, EMBED_PROGRESS_SLICE + 20
        idx.ingest_sources(
            _sources(full + rest),
            on_stage=lambda stage, k: events.append(k) if stage == "embedded" and k else None,
        )
        # the full batch in one call; the last one in runs of >= 64 chunks (written
        # while the next run embeds)
        assert embedder.sizes == [full, EMBED_PROGRESS_SLICE, 20]
        assert events == [10] * 25 + [6] + [10] * 6 + [4] + [10, 10]
        assert sum(events) == full + rest == idx.status()["chunks"]
    finally:
        idx.close()
