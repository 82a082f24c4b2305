"""Erasure on the cluster: after a purge, a document's canary is in no file of any node.

The rows of a tenant live in a worker's shards, and that worker's WAL holds them too. The
same purge as on one server (``Index.purge``: rows deleted, tables rewritten, WAL moved on)
must leave the canary in no file of the coordinator or of either worker: tables, indexes,
TOAST and WAL. Before the purge the same scan finds it on the worker holding the tenant (so
the scan can see into the files). Text columns of the shards are stored uncompressed for
the test, as on one server (``tests/security/test_erasure.py``)."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from ragline.ingest.sources import text_source
from tests.conftest import make_index
from tests.fakes import FakeEmbedder
from tests.security.test_erasure import UNCOMPRESSED, files_holding

pytestmark = pytest.mark.slow


def _checkpoint_all(cluster) -> None:
    for node in cluster.nodes:
        node.sql("CHECKPOINT")


def _uncompressed(conn: psycopg.Connection, schema: str) -> None:
    for table, cols in UNCOMPRESSED.items():
        for col in cols:  # Citus does not propagate SET STORAGE: run it on every shard
            conn.execute(
                "SELECT run_command_on_shards(%s, %s)",
                (f"{schema}.{table}", f"ALTER TABLE %s ALTER COLUMN {col} SET STORAGE EXTERNAL"),
            )


def test_a_purged_documents_canary_is_in_no_file_of_any_node(citus, citus_schema) -> None:
    from ragline.store.distribution import shard_placement

    idx = make_index(citus.url, citus_schema, embedder=FakeEmbedder())
    try:
        with idx.db.connection() as conn:
            _uncompressed(conn, citus_schema)
            conn.commit()
        filler = [
            text_source(f"filler-{i}", f"Filler {i}", f"Routine note {i} about the weekly rota.")
            for i in range(60)
        ]
        for tenant in ("acme", "globex", "initech"):
            assert not idx.ingest_sources(filler, tenant=tenant).failed
        word = "zq" + uuid.uuid4().hex[:14]
        doc = text_source(f"vault-{word}", f"Canary {word}", f"The vault code is {word}. Shh.")
        assert not idx.ingest_sources([doc], tenant="acme").failed
        answer = idx.ask(f"What is the vault code {word}?", tenant="acme")
        assert word in answer.text  # a trace now quotes it too
        with idx.db.connection() as conn:
            _host, port = shard_placement(conn, citus_schema, "acme")
        holder = next(w for w in citus.workers if w.port == port)
        _checkpoint_all(citus)
        assert any(p.startswith("base/") for p in files_holding(holder.pgdata, word))

        out = idx.purge(f"vault-{word}", tenant="acme")
        assert out["versions"] == 1 and out["traces"] >= 1, out
        assert out["erasure"]["wal"] == "removed", out["erasure"]
        assert {"documents", "chunks", "bm25_blocks", "bm25_terms", "traces"} <= set(
            out["erasure"]["rewritten"]
        )
        _checkpoint_all(citus)
        assert {n.name: files_holding(n.pgdata, word) for n in citus.nodes} == {
            n.name: [] for n in citus.nodes
        }
        # the other tenants' documents are all still there
        for tenant in ("acme", "globex", "initech"):
            assert len(idx.documents(tenant=tenant)) == 60
    finally:
        idx.close()


def test_a_worker_that_keeps_wal_is_named(citus, citus_schema) -> None:
    """A worker whose settings keep old segments (here a replication slot) is named in the
    result, not reported as erased."""
    from ragline.store.erasure import erase_dead_rows

    idx = make_index(citus.url, citus_schema, embedder=FakeEmbedder())
    worker = citus.workers[0]
    slot = f"s_{uuid.uuid4().hex[:8]}"
    worker.sql("SELECT pg_create_physical_replication_slot(%s, true)", (slot,))
    try:
        wal = erase_dead_rows(idx.db)["wal"]
        assert wal.startswith("kept: "), wal
        assert f"worker 127.0.0.1:{worker.port}: 1 replication slot(s)" in wal, wal
        assert str(citus.workers[1].port) not in wal, wal
    finally:
        worker.sql("SELECT pg_drop_replication_slot(%s)", (slot,))
        idx.close()
