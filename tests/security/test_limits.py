"""Size limits (issue 14 #2, #3, #12): every request has a bounded size, refused with a
clear 413/422 that names the setting, before the work is done and with nothing written
(no trace, no job, no file left in the upload folder).

Settings (defaults): ``max_request_bytes`` (1 MiB), ``max_upload_bytes`` (100 MiB),
``max_upload_files`` (100), ``max_sync_files`` (10,000), ``max_query_chars`` (4,000),
``max_filter_chars`` (4,000), ``max_filter_values`` (100). This module's server runs with
small ones so the tests stay small.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragline.core.errors import LimitError
from ragline.core.settings import Settings
from tests.conftest import make_index
from tests.fakes import FakeEmbedder
from tests.serve.conftest import add_keys, own_schema, wait_job
from tests.serve.harness import live_server

LIMITS = {
    "max_request_bytes": 64 << 10,
    "max_upload_bytes": 1 << 20,
    "max_upload_files": 2,
    "max_sync_files": 3,
    "max_query_chars": 500,
    "max_filter_chars": 300,
    "max_filter_values": 5,
}


@pytest.fixture(scope="module")
def small(pg_url: str) -> Any:
    root = Path(tempfile.mkdtemp(prefix="ragline-lim-sync-"))
    (root / "acme").mkdir()
    with own_schema(pg_url) as schema:
        idx = make_index(pg_url, schema, embedder=FakeEmbedder(), **LIMITS)
        idx.ingest_sources([_doc()], tenant="acme")
        uploads = Path(tempfile.mkdtemp(prefix="ragline-lim-up-"))
        with live_server(idx, upload_dir=uploads, sync_roots=[root], rate_limit=10**6) as live:
            add_keys(
                live, {"admin": {"tenant": "acme", "admin": True}, "reader": {"tenant": "acme"}}
            )
            live.root = root  # type: ignore[attr-defined]
            yield live
        idx.close()


def _doc() -> Any:
    from ragline.ingest.sources import text_source

    return text_source("k", "Heron", "The heron bell rings at nine.")


def _counts(live: Any) -> tuple[int, int]:
    with live.index.db.connection() as conn:
        return (
            conn.execute("SELECT count(*) FROM traces").fetchone()[0],
            conn.execute("SELECT count(*) FROM ingest_jobs").fetchone()[0],
        )


def _files(live: Any) -> list[Path]:
    return [p for p in live.app.state.server.upload_dir.rglob("*") if p.is_file()]


def _error(r: httpx.Response, status: int, needle: str) -> str:
    assert r.status_code == status, r.text
    body = r.json()["error"]
    assert needle in body["message"] and body["code"] == status, body
    return str(body["message"])


def test_defaults_are_safe() -> None:
    s = Settings()
    assert s.max_request_bytes == 1 << 20 and s.max_upload_bytes == 100 << 20
    assert (s.max_upload_files, s.max_sync_files) == (100, 10_000)
    assert (s.max_query_chars, s.max_filter_chars, s.max_filter_values) == (4000, 4000, 100)


def test_an_oversized_body_is_refused_before_it_is_read(small) -> None:
    h = small.headers("reader")
    before = _counts(small)
    huge = {"query": "heron", "filters": {"dept": "x" * (60 << 20)}}  # the review's 60 MB
    data = json.dumps(huge).encode()
    with httpx.Client(base_url=small.url, timeout=60) as c:
        t = time.monotonic()
        r = c.post("/v1/search", content=data, headers={**h, "content-type": "application/json"})
        _error(r, 413, "max_request_bytes")
        assert time.monotonic() - t < 10
        assert r.headers["x-content-type-options"] == "nosniff"  # refusals get the headers too

        def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"query": "heron", "filters": {"dept": "'
            for _ in range(200):
                yield b"y" * (64 << 10)
            yield b'"}}'

        r = c.post(
            "/v1/search", content=chunked(), headers={**h, "content-type": "application/json"}
        )
        _error(r, 413, "max_request_bytes")
    assert _counts(small) == before  # no trace of either


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"query": "h" * 501}, "max_query_chars"),
        ({"query": "heron", "filters": {"dept": "x" * 301}}, "max_filter_chars"),
        ({"query": "heron", "filters": {"dept": [str(i) for i in range(6)]}}, "max_filter_values"),
        ({"query": "heron", "filters": {f"k{i}": "v" for i in range(6)}}, "max_filter_values"),
    ],
)
def test_query_and_filter_sizes_are_limited_at_every_entry_point(small, body, needle) -> None:
    before = _counts(small)
    with httpx.Client(base_url=small.url, timeout=60) as c:
        h = small.headers("reader")
        _error(c.post("/v1/search", json=body, headers=h), 422, needle)
        ask = {"question": body["query"], "filters": body.get("filters", {})}
        _error(c.post("/v1/ask", json=ask, headers=h), 422, needle)
        _error(c.post("/v1/ask", json={**ask, "stream": True}, headers=h), 422, needle)
        if "filters" not in body:
            chat = {"model": "ragline", "messages": [{"role": "user", "content": body["query"]}]}
            _error(c.post("/v1/chat/completions", json=chat, headers=h), 422, needle)
    from ragline.serve.mcp_server import RaglineTools

    tools = RaglineTools(small.index, small.keys["reader"])
    with pytest.raises(LimitError, match=needle):
        tools.search(body["query"], 5, body.get("filters"))
    with pytest.raises(LimitError, match=needle):
        small.index.search(body["query"], tenant="acme", filters=body.get("filters"))
    assert _counts(small) == before


def test_an_oversized_upload_is_refused_early_and_leaves_nothing(small) -> None:
    h = small.headers("admin")
    before = _counts(small)
    big = b"x" * (3 << 20)
    with httpx.Client(base_url=small.url, timeout=60) as c:
        r = c.post("/v1/documents", files=[("files", ("big.txt", big))], headers=h)
        _error(r, 413, "max_upload_bytes")
        # streamed without a length: refused once past the limit, not read to the end
        pulled = 0

        def body() -> Iterator[bytes]:
            nonlocal pulled
            yield b'--b\r\nContent-Disposition: form-data; name="files"; filename="s.txt"\r\n\r\n'
            for _ in range(400):  # up to 100 MB
                pulled += 256 << 10
                yield b"z" * (256 << 10)
            yield b"\r\n--b--\r\n"

        try:
            r = c.post(
                "/v1/documents",
                content=body(),
                headers={**h, "content-type": "multipart/form-data; boundary=b"},
            )
            _error(r, 413, "max_upload_bytes")
        except httpx.HTTPError:
            pass  # the server closed the connection on the rest of the body: also refused
        assert pulled < 40 << 20, f"{pulled >> 20} MB sent before the refusal"
    assert _counts(small) == before and _files(small) == []


def test_files_per_upload_names_and_files_per_sync_are_limited(small) -> None:
    h = small.headers("admin")
    before = _counts(small)
    with httpx.Client(base_url=small.url, timeout=60) as c:
        three = [("files", (f"f{i}.txt", b"some text")) for i in range(3)]
        _error(c.post("/v1/documents", files=three, headers=h), 422, "max_upload_files")
        long = [("files", ("n" * 300 + ".txt", b"some text"))]
        msg = _error(c.post("/v1/documents", files=long, headers=h), 422, "file name")
        assert "255" in msg
        twice = [("files", ("same.txt", b"a")), ("files", ("same.txt", b"b"))]
        _error(c.post("/v1/documents", files=twice, headers=h), 422, "more than once")
        folder = small.root / "acme" / "many"
        folder.mkdir()
        for i in range(4):
            (folder / f"n{i}.md").write_text(f"# N{i}\n\ntext {i}\n")
        r = c.post("/v1/sync", json={"path": str(folder)}, headers=h)
        _error(r, 422, "max_sync_files")
    assert _counts(small) == before and _files(small) == []


def test_uploads_are_erased_once_ingested(small) -> None:
    """Finding 3: nothing of an upload stays in the upload folder (done or failed)."""
    h = small.headers("admin")
    with httpx.Client(base_url=small.url, timeout=60) as c:
        files = [
            ("files", ("ok.md", b"# Ok\n\nThe otter rule.\n")),
            ("files", ("bad.pdf", b"nope")),
        ]
        r = c.post("/v1/documents", files=files, headers=h)
        assert r.status_code == 202, r.text
        job = wait_job(c, r.json()["job"]["id"], h)
        assert job["failed"] == 1 and job["report"]["added"] == ["upload:ok.md"]
        # the failure names the upload, never the server path it was saved under
        assert job["report"]["failed"][0]["source"] == "upload:bad.pdf"
        assert str(small.app.state.server.upload_dir) not in json.dumps(job)
    assert _files(small) == []
    assert not list(small.app.state.server.upload_dir.iterdir())


def test_a_stopped_servers_uploads_are_swept_at_start(tmp_path) -> None:
    from ragline.serve.folders import JOB_MARKER, Uploads

    up = Uploads(tmp_path)
    done, running, stale, fresh = (tmp_path / "t" / n for n in ("a", "b", "c", "d"))
    for d in (done, running, stale, fresh):
        d.mkdir(parents=True)
        (d / "x.md").write_text("x")
    (done / JOB_MARKER).write_text('{"job": 1, "tenant": "t"}')
    (running / JOB_MARKER).write_text('{"job": 2, "tenant": "t"}')
    import os

    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    status = {1: "done", 2: "running"}
    assert up.sweep(lambda job, _t: status.get(job)) == 2
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["b", "d"]
