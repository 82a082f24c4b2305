"""Read replicas: a streaming standby of a server made with the wheel's own binaries
(pg_basebackup -R writes standby.signal); searches and asks read from it, writes go to the
primary, and the read-your-writes gap is visible (status) and avoidable (read_from_primary)."""

from __future__ import annotations

import shutil

import pytest

from ragline.ingest.sources import text_source
from tests.cluster.nodes import single_node, streaming_standby
from tests.conftest import make_index
from tests.fakes import FakeEmbedder


@pytest.fixture(scope="module")
def replicated():
    primary = single_node()
    try:
        standby = streaming_standby(primary.coordinator, primary.base)
    except BaseException:
        primary.stop()
        raise
    yield primary.coordinator, standby
    standby.stop("immediate")
    primary.stop()
    shutil.rmtree(primary.base, ignore_errors=True)


def _keys(hits):
    return [(h.doc_key, round(h.score, 6)) for h in hits]


def test_reads_from_replica_and_reports_lag(replicated):
    primary, standby = replicated
    writer = make_index(primary.url, "r1", embedder=FakeEmbedder(), read_database_url=standby.url)
    fresh = make_index(
        primary.url,
        "r1",
        embedder=FakeEmbedder(),
        read_database_url=standby.url,
        read_from_primary=True,
    )
    try:
        for i in range(20):
            writer.ingest_sources(
                [text_source(f"d{i}", f"Doc {i}", f"battery charging note {i} vpn {i % 3}")]
            )
        writer.read_db.wait_until_caught_up()
        with writer.read_db.connection() as conn:  # the read path is the standby
            assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]
            assert conn.info.port == standby.port
        for mode in ("bm25", "vector", "hybrid"):
            assert _keys(writer.search("battery vpn", k=10, mode=mode)) == _keys(
                fresh.search("battery vpn", k=10, mode=mode)
            )
        a = writer.ask("battery charging note 3")
        assert not a.abstained and a.citations
        writer.read_db.wait_until_caught_up()  # the ask wrote its trace on the primary
        lag = writer.status(check_sources=False)["replicas"]
        assert lag[0]["standby"] and lag[0]["lag_bytes"] == 0

        # the gap: replay paused, a new document is on the primary only
        standby.sql("SELECT pg_wal_replay_pause()")
        try:
            writer.ingest_sources([text_source("new", "New", "zeppelin maintenance schedule")])
            assert writer.search("zeppelin", mode="bm25") == []  # not replayed yet
            assert [h.doc_key for h in fresh.search("zeppelin", mode="bm25")] == ["new"]
            lag = writer.status(check_sources=False)["replicas"]
            assert lag[0]["lag_bytes"] > 0, lag
            assert fresh.status(check_sources=False)["replicas"]["reads_from"].startswith("primary")
        finally:
            standby.sql("SELECT pg_wal_replay_resume()")
        writer.read_db.wait_until_caught_up()
        assert [h.doc_key for h in writer.search("zeppelin", mode="bm25")] == ["new"]
    finally:
        writer.close()
        fresh.close()


def test_a_stopped_replica_falls_back_to_the_primary(replicated):
    primary, standby = replicated
    idx = make_index(primary.url, "r2", embedder=FakeEmbedder(), read_database_url=standby.url)
    try:
        idx.ingest_sources([text_source("a", "A", "battery charging")])
        idx.read_db.wait_until_caught_up()
        standby.stop("fast")
        try:
            assert [h.doc_key for h in idx.search("battery", mode="bm25")] == ["a"]
            assert "error" in idx.status(check_sources=False)["replicas"][0]
        finally:
            standby.start()
    finally:
        idx.close()
