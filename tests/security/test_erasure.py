"""Erasure is real: after a purge, a document's canary is in no file of the data directory.

A server of its own (an embedded PostgreSQL in a fresh data directory, uploads under it,
as ``ragline serve`` runs) ingests a document holding a canary word (in its name, title
and text) among others, answers questions about it (traces), then purges it over the
API. After a CHECKPOINT every file under the data directory is read: tables, indexes,
TOAST, WAL, uploads, logs. Before the purge the same scan finds the canary (so it can see
into the files); after, nowhere. A plain delete erases the traces too (finding 9).

Text columns are stored uncompressed for the test (``SET STORAGE EXTERNAL``): compressed
values would hide the canary from a byte scan, so that the scan could miss a leftover.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.conftest import fresh_data_dir
from tests.fakes import FakeEmbedder
from tests.security.world import canary
from tests.serve.conftest import add_keys, wait_job
from tests.serve.harness import live_server

pytestmark = pytest.mark.slow
UNCOMPRESSED = {
    "documents": ("title", "metadata", "content", "doc_key", "source_uri"),
    "chunks": ("text", "header"),
    "chunk_parents": ("text",),
    "traces": ("payload", "question"),
    "ingest_jobs": ("detail",),
}


def files_holding(folder: Path, needle: str) -> list[str]:
    """Every file under ``folder`` whose bytes contain ``needle`` (paths relative)."""
    raw = needle.encode()
    out = []
    for p in sorted(folder.rglob("*")):
        try:
            if p.is_file() and not p.is_symlink() and raw in p.read_bytes():
                out.append(str(p.relative_to(folder)))
        except OSError:  # a file that went away while we read
            continue
    return out


@pytest.fixture(scope="module")
def own_server() -> Any:
    from ragline.core.settings import Settings
    from ragline.index import Index
    from ragline.ingest.sources import text_source
    from ragline.store.server import ensure_server, stop_server

    data = fresh_data_dir("ragline-erase-")
    url = ensure_server(data)
    idx = Index(Settings(database_url=url, db_schema="ragline"), embedder=FakeEmbedder())
    with idx.db.connection() as conn:
        for table, cols in UNCOMPRESSED.items():
            for col in cols:
                conn.execute(f"ALTER TABLE {table} ALTER COLUMN {col} SET STORAGE EXTERNAL")
    filler = [
        text_source(f"filler-{i}", f"Filler {i}", f"Routine note {i} about the weekly rota.")
        for i in range(150)
    ]
    assert not idx.ingest_sources(filler, tenant="acme").failed
    with live_server(idx, upload_dir=data / "uploads", rate_limit=10**6) as live:
        add_keys(live, {"admin": {"tenant": "acme", "admin": True}, "reader": {"tenant": "acme"}})
        yield {"live": live, "data": data, "url": url}
    idx.close()
    stop_server(data)
    shutil.rmtree(data, ignore_errors=True)


def _checkpoint(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def test_a_purged_documents_canary_is_in_no_file(own_server) -> None:
    live, data, url = own_server["live"], own_server["data"], own_server["url"]
    word = "zq" + uuid.uuid4().hex[:14]  # one analyzer term, unlike any other text
    h, hr = live.headers("admin"), live.headers("reader")
    doc = f"# Canary {word}\n\nThe vault combination is {word}. Tell no one.\n".encode()
    with httpx.Client(base_url=live.url, timeout=60) as c:
        r = c.post("/v1/documents", files=[("files", (f"{word}.md", doc))], headers=h)
        job = wait_job(c, r.json()["job"]["id"], h)
        assert job["status"] == "done" and job["failed"] == 0, job
        for q in (word, f"What is the vault combination {word}?"):
            assert word in c.post("/v1/search", json={"query": q}, headers=hr).text
            a = c.post("/v1/ask", json={"question": q}, headers=hr).json()
            assert word in a["answer"]
        chat = {"model": "ragline", "messages": [{"role": "user", "content": f"vault {word}?"}]}
        assert c.post("/v1/chat/completions", json=chat, headers=hr).status_code == 200
        _checkpoint(url)
        before = files_holding(data, word)
        assert any(p.startswith("pg/base/") for p in before), before  # the scan sees tables

        [d] = [
            x for x in c.get("/v1/documents", headers=h).json()["documents"] if word in x["title"]
        ]
        r = c.delete(f"/v1/documents/{d['id']}", params={"purge": "true"}, headers=h)
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["versions"] == 1 and out["traces"] >= 3, out
        assert out["erasure"]["wal"] == "removed", out["erasure"]
        assert {"documents", "chunks", "bm25_blocks", "bm25_terms", "traces"} <= set(
            out["erasure"]["rewritten"]
        )
        # the job that uploaded it no longer names it
        assert word not in c.get(f"/v1/jobs/{job['id']}", headers=h).text
    _checkpoint(url)
    assert files_holding(data, word) == []


def test_a_plain_delete_erases_the_traces_that_quote_the_document(own_server) -> None:
    """Finding 9: a trace holds the answer and citations (document text); it goes with the
    document, whether the document is deleted, purged, replaced or synced away."""
    live, url = own_server["live"], own_server["url"]
    word = canary("plain-delete", uuid.uuid4().hex)
    h, hr = live.headers("admin"), live.headers("reader")
    with httpx.Client(base_url=live.url, timeout=60) as c:
        r = c.post(
            "/v1/documents",
            files=[("files", ("del.md", f"# Del\n\nThe gate code is {word}.\n".encode()))],
            headers=h,
        )
        wait_job(c, r.json()["job"]["id"], h)
        a = c.post("/v1/ask", json={"question": f"What is the gate code {word}?"}, headers=hr)
        tid = a.json()["trace_id"]
        assert word in c.get(f"/v1/traces/{tid}", headers=hr).text
        [d] = [
            x for x in c.get("/v1/documents", headers=h).json()["documents"] if x["title"] == "Del"
        ]
        assert c.delete(f"/v1/documents/{d['id']}", headers=h).json()["versions"] == 1
        assert c.get(f"/v1/traces/{tid}", headers=hr).status_code == 404
        assert c.get(f"/v1/traces/{tid}", headers=h).status_code == 404
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET search_path = ragline")
        n = conn.execute(
            "SELECT count(*) FROM traces WHERE strpos(payload::text, %s) > 0", (word,)
        ).fetchone()[0]
    assert n == 0
    # a re-ingest that replaces a version takes the traces of the old one along
    idx = live.index
    from ragline.ingest.sources import text_source

    idx.ingest_sources([text_source("r", "R", f"Old text {word}x.")], tenant="acme")
    old = idx.ask(f"What is {word}x?", tenant="acme")
    assert idx.trace(old.trace_id, tenant="acme") is not None
    idx.ingest_sources([text_source("r", "R", "New text.")], tenant="acme")
    assert idx.trace(old.trace_id, tenant="acme") is None


def test_purge_without_rewrite_then_index_compact(own_server) -> None:
    """``purge_rewrite = false``: the purge only deletes (fast, queries never wait); the
    bytes stay in free space until ``ragline index compact`` rewrites the tables."""
    from ragline.core.settings import Settings
    from ragline.index import Index
    from ragline.ingest.sources import text_source
    from tests.conftest import cli_runner

    data, url = own_server["data"], own_server["url"]
    word = "zq" + uuid.uuid4().hex[:14]
    fast = Index(
        Settings(database_url=url, db_schema="ragline", purge_rewrite=False),
        embedder=FakeEmbedder(),
    )
    try:
        fast.ingest_sources([text_source("later", "Later", f"The tag is {word}.")], tenant="acme")
        out = fast.purge("later", tenant="acme")
        assert out["versions"] == 1 and "erasure" not in out
        _checkpoint(url)
        assert files_holding(data, word)  # deleted, not yet erased
        run = cli_runner({"RAGLINE_DATABASE_URL": url, "RAGLINE_DB_SCHEMA": "ragline"})
        res = run("index", "compact", "--json")
        assert '"wal": "removed"' in res.output
        _checkpoint(url)
        assert files_holding(data, word) == []
    finally:
        fast.close()
