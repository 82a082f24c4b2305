"""One test per finding of the adversarial review (issue 14) that the randomized worlds do
not pin down on their own: each failed before its fix. (Findings 1 and 7:
test_filesystem.py; 2, 3 and the long names of 12: test_limits.py; 9 and erasure:
test_erasure.py; 6: test_history_and_scores.py; 8 is handled by job leases, issue 16.)
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragline.ingest.sources import text_source
from tests.conftest import make_index
from tests.fakes import FakeEmbedder
from tests.security.world import canary
from tests.serve.conftest import add_keys, own_schema, wait_job
from tests.serve.harness import live_server


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Any:
    root = Path(tempfile.mkdtemp(prefix="ragline-find-sync-"))
    (root / "acme").mkdir()
    with own_schema(pg_url) as schema:
        idx = make_index(pg_url, schema, embedder=FakeEmbedder(), keep_versions=2)
        up = Path(tempfile.mkdtemp(prefix="ragline-find-up-"))
        with live_server(idx, upload_dir=up, sync_roots=[root], rate_limit=10**6) as live:
            add_keys(
                live,
                {
                    "admin": {"tenant": "acme", "admin": True},
                    "r1": {"tenant": "acme", "groups": ["hr"]},
                    "r2": {"tenant": "acme", "groups": ["hr"]},
                    "other": {"tenant": "globex", "admin": True},
                    "other_reader": {"tenant": "globex"},
                },
            )
            live.root = root  # type: ignore[attr-defined]
            yield live
        idx.close()


def _upload(c: httpx.Client, live: Any, who: str, files: list[tuple[str, bytes]], groups: str = ""):
    r = c.post(
        "/v1/documents",
        files=[("files", f) for f in files],
        data={"groups": groups},
        headers=live.headers(who),
    )
    assert r.status_code == 202, r.text
    job = wait_job(c, r.json()["job"]["id"], live.headers(who))
    assert job["status"] == "done" and job["failed"] == 0, job
    return job["report"]


# -- 4: the embedding cache is per tenant -----------------------------------------------
def test_the_embedding_cache_tells_no_tenant_what_another_holds(srv) -> None:
    text = f"# Merger memo\n\nThe merger code name is {canary('cache')}. Board only.\n".encode()
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        theirs = _upload(c, srv, "other", [("memo.md", text)])
        assert theirs["embedded"] >= 1 and theirs["cached"] == 0
        # acme uploads a copy: embedded afresh, nothing says globex holds it
        mine = _upload(c, srv, "admin", [("copy.md", text)])
        assert mine["cached"] == 0 and mine["embedded"] == theirs["embedded"]
        # within a tenant unchanged text is never embedded twice
        again = _upload(c, srv, "admin", [("copy-2.md", text)])
        assert again["embedded"] == 0 and again["cached"] == mine["embedded"]
        with srv.index.db.connection() as conn:
            before = conn.execute(
                "SELECT count(*) FROM embedding_cache WHERE tenant = 'globex'"
            ).fetchone()[0]
        # acme's purge removes acme's cached vectors only
        docs = c.get("/v1/documents", headers=srv.headers("admin")).json()["documents"]
        for d in docs:
            if d["doc_key"] in ("upload:copy.md", "upload:copy-2.md"):
                c.delete(
                    f"/v1/documents/{d['id']}",
                    params={"purge": "true"},
                    headers=srv.headers("admin"),
                )
        with srv.index.db.connection() as conn:
            after = conn.execute(
                "SELECT count(*) FROM embedding_cache WHERE tenant = 'globex'"
            ).fetchone()[0]
            mine_left = conn.execute(
                "SELECT count(*) FROM embedding_cache WHERE tenant = 'acme' AND text_hash IN "
                "(SELECT text_hash FROM chunks WHERE tenant = 'globex')"
            ).fetchone()[0]
        assert after == before >= 1 and mine_left == 0
        again = _upload(c, srv, "other", [("memo-2.md", text)])
        assert again["embedded"] == 0  # globex's cache survived acme's purge


# -- 5: a trace belongs to the key that made it ------------------------------------------
def test_a_trace_is_seen_by_its_key_and_the_tenants_admins_only(srv) -> None:
    secret = canary("harassment")
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        _upload(
            c, srv, "admin", [("hr.md", f"# HR\n\nReport harassment to {secret}.\n".encode())], "hr"
        )
        question = "How do I report harassment by my manager without him knowing?"
        a = c.post("/v1/ask", json={"question": question}, headers=srv.headers("r1")).json()
        tid = a["trace_id"]
        for who, sees in (("r1", True), ("r2", False), ("admin", True), ("other", False)):
            listed = c.get("/v1/traces", params={"limit": 200}, headers=srv.headers(who)).json()
            assert (question in json.dumps(listed)) == sees, who
            r = c.get(f"/v1/traces/{tid}", headers=srv.headers(who))
            assert r.status_code == (200 if sees else 404), (who, r.text)


def test_a_readers_trace_hides_once_permissions_change(srv) -> None:
    from ragline.store.documents import update_groups

    word = canary("regroup")
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        _upload(c, srv, "admin", [("regroup.md", f"# R\n\nThe word is {word}.\n".encode())], "hr")
        tid = c.post(
            "/v1/ask", json={"question": f"What is {word}?"}, headers=srv.headers("r1")
        ).json()["trace_id"]
        assert word in c.get(f"/v1/traces/{tid}", headers=srv.headers("r1")).text
        idx = srv.index
        update_groups(idx.db, idx.collection, "acme", "upload:regroup.md", ["finance"])
        assert c.get(f"/v1/traces/{tid}", headers=srv.headers("r1")).status_code == 404
        assert word in c.get(f"/v1/traces/{tid}", headers=srv.headers("admin")).text


# -- 10: ids count nothing ---------------------------------------------------------------
def test_ids_are_opaque_and_count_nothing(srv, pg_url) -> None:
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        _upload(c, srv, "admin", [("i1.md", b"# I1\n\nThe ibis rule one.\n")])
        _upload(c, srv, "other", [(f"g{i}.md", f"# G{i}\n\ntext {i}\n".encode()) for i in range(3)])
        _upload(c, srv, "admin", [("i2.md", b"# I2\n\nThe ibis rule two.\n")])
        docs = {
            d["doc_key"]: d
            for d in c.get("/v1/documents", headers=srv.headers("admin")).json()["documents"]
        }
        a, b = docs["upload:i1.md"]["id"], docs["upload:i2.md"]["id"]
        assert re.fullmatch(r"doc_[a-z2-7]{13}", a) and re.fullmatch(r"doc_[a-z2-7]{13}", b)
        hits = c.post(
            "/v1/search", json={"query": "ibis rule", "mode": "bm25"}, headers=srv.headers("admin")
        ).json()["hits"]
        assert all(re.fullmatch(r"chk_[a-z2-7]{13}", h["chunk_id"]) for h in hits)
        jobs = c.get("/v1/jobs", headers=srv.headers("admin")).json()["jobs"]
        keys = c.get("/v1/keys", headers=srv.headers("admin")).json()["keys"]
        assert all(re.fullmatch(r"job_[a-z2-7]{13}", j["id"]) for j in jobs)
        assert all(re.fullmatch(r"key_[a-z2-7]{13}", k["id"]) for k in keys)
        # an id of one kind is no id of another; a guessed or altered one is just unknown
        for bad in (
            a.replace("doc_", "chk_"),
            a[:-1] + ("a" if a[-1] != "a" else "b"),
            "doc_" + "a" * 13,
        ):
            assert c.get(f"/v1/documents/{bad}", headers=srv.headers("admin")).status_code == 404
    # the internal ids are consecutive; what the faces show depends on a per-installation secret
    view = srv.app.state.server.view
    ia, ib = view.internal("doc", a), view.internal("doc", b)
    assert 0 < ib - ia <= 10  # globex's documents in between ...
    with own_schema(pg_url) as other_schema:  # ... and another installation shows others
        other = make_index(pg_url, other_schema, embedder=FakeEmbedder())
        from ragline.serve.ids import IdCodec
        from ragline.store.secrets import installation_secret

        assert IdCodec(installation_secret(other.db)).encode("doc", ia) != a
        other.close()


def test_the_id_cipher_round_trips_and_rejects_everything_else() -> None:
    import os

    from hypothesis import given
    from hypothesis import strategies as st

    from ragline.serve.ids import IdCodec

    codec = IdCodec(os.urandom(32))

    @given(st.integers(0, 2**63 - 1), st.sampled_from(["doc", "chk", "job", "key"]))
    def round_trip(n: int, kind: str) -> None:
        text = codec.encode(kind, n)
        assert codec.decode(kind, text) == n
        assert all(codec.decode(k, text) is None for k in ("doc", "chk", "job", "key") if k != kind)

    round_trip()
    seq = [codec.encode("doc", n) for n in range(1, 200)]
    assert len(set(seq)) == 199 and sorted(seq) != seq  # no order leaks through


# -- 11: headers on every response, inert answers ----------------------------------------
@pytest.mark.parametrize("path", ["/", "/static/app.js", "/health", "/v1/me", "/v1/nope", "/docs"])
def test_every_response_carries_the_security_headers(srv, path) -> None:
    r = httpx.get(srv.url + path, headers=srv.headers("r1"))
    h = r.headers
    assert h["x-content-type-options"] == "nosniff" and h["referrer-policy"] == "no-referrer"
    assert h["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in h["content-security-policy"]
    if path == "/":
        assert "script-src 'self';" in h["content-security-policy"]
    if path.startswith("/v1/"):
        assert h["cache-control"] == "no-store"


def test_answers_carry_no_live_markup(srv) -> None:
    hostile = (
        b"# Notice\n\nThe otter gate opens at dawn <img src=x onerror=alert(1)> for wardens. "
        b"See [the rota](javascript:alert(2)) for the otter gate.\n"
    )
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        _upload(c, srv, "admin", [("otter.txt", hostile)])  # plain text keeps the markup
        q = {"question": "When does the otter gate open for wardens?", "mode": "bm25"}
        a = c.post("/v1/ask", json=q, headers=srv.headers("admin")).json()
        chat = c.post(
            "/v1/chat/completions",
            json={"model": "ragline", "messages": [{"role": "user", "content": q["question"]}]},
            headers=srv.headers("admin"),
        ).json()
        stream = c.post("/v1/ask", json={**q, "stream": True}, headers=srv.headers("admin")).text
        hits = c.post(
            "/v1/search", json={"query": "otter gate", "mode": "bm25"}, headers=srv.headers("admin")
        ).json()
    shown = json.dumps([a, chat]) + stream
    assert "otter" in a["answer"] and "&lt;img" in shown
    assert "<img" not in shown and "](javascript:" not in shown.replace("\\](javascript:", "")
    assert "<img" in hits["hits"][0]["text"]  # passages stay verbatim: data, shown as text


# -- 12: no absolute server paths in what a key reads ------------------------------------
def test_chat_replies_and_answers_show_no_server_paths(srv) -> None:
    folder = srv.root / "acme" / "manuals"
    folder.mkdir()
    (folder / "pump.md").write_text("# Pump\n\nThe kestrel pump runs at 40 bar.\n")
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        r = c.post("/v1/sync", json={"path": str(folder)}, headers=srv.headers("admin"))
        wait_job(c, r.json()["job"]["id"], srv.headers("admin"))
        q = "At what pressure does the kestrel pump run?"
        chat = c.post(
            "/v1/chat/completions",
            json={"model": "ragline", "messages": [{"role": "user", "content": q}]},
            headers=srv.headers("r1"),
        ).json()
        content = chat["choices"][0]["message"]["content"]
        assert "40 bar" in content and "manuals/pump.md" in content
        hits = c.post(
            "/v1/search", json={"query": "kestrel pump"}, headers=srv.headers("r1")
        ).json()
        a = c.post("/v1/ask", json={"question": q}, headers=srv.headers("r1")).json()
        docs = c.get("/v1/documents", headers=srv.headers("r1")).text
        tr = c.get(f"/v1/traces/{a['trace_id']}", headers=srv.headers("r1")).text
        for text in (json.dumps(chat), json.dumps(hits), json.dumps(a), docs, tr):
            assert str(srv.root) not in text and "/tmp/" not in text
        assert hits["hits"][0]["source"] == "manuals/pump.md"
        # a relative source filter means the same folder under the tenant's root
        f = {"query": "kestrel pump", "filters": {"source": "manuals/"}}
        assert c.post("/v1/search", json=f, headers=srv.headers("r1")).json()["hits"]


# -- 13: a new index version keeps the history ---------------------------------------------
def test_index_build_and_activate_keep_old_versions_for_history(pg_url, schema) -> None:
    from ragline.rebuild import build_version
    from ragline.store import versions as vs

    idx = make_index(pg_url, schema, embedder=FakeEmbedder(), keep_versions=2)
    for word in ("apricot", "blueberry", "cherry"):
        idx.ingest_sources(
            [text_source("policy", "Policy", f"The code word is {word}.")], tenant="t"
        )

    def history() -> list[tuple[int, bool, str]]:
        hits = idx.search("code word", tenant="t", mode="bm25", include_history=True, k=10)
        return sorted((h.metadata["version"], h.metadata["is_current"], h.text) for h in hits)

    before = history()
    assert [v for v, _, _ in before] == [1, 2, 3]
    built = build_version(idx, chunking="recursive")
    assert built["history"] == 2 and not built["failed"], built
    again = build_version(idx, chunking="recursive")  # a rerun (resume) copies nothing twice
    assert again["version"] == built["version"] and again["history"] == 0
    vs.activate(idx.db, idx.settings.collection, built["version"])
    assert history() == before  # the same versions, numbers and text from the new version
    assert idx.search("blueberry", tenant="t", mode="bm25") == []  # history only on request
    vs.rollback(idx.db, idx.settings.collection)
    assert history() == before
    idx.close()


# -- eval over a served collection reads only its own tenant ---------------------------------
def test_eval_golden_over_a_served_collection_sees_no_other_tenant(fake_index, tmp_path) -> None:
    from ragline.evaluate.golden import evaluate_golden

    secret = canary("eval")
    fake_index.ingest_sources(
        [text_source("other/handbook.md", "Handbook", f"The vault code is {secret}.")],
        tenant="globex",
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "handbook.md").write_text("# Handbook\n\nThe heron bell rings at nine.\n")
    questions = tmp_path / "q.jsonl"
    rows = [
        {"id": "q1", "question": "When does the heron bell ring?", "answerable": True,
         "relevant": [{"source": "handbook.md", "quote": "The heron bell rings at nine."}]},
        {"id": "q2", "question": "What is the vault code?", "answerable": True,
         "relevant": [{"source": "handbook.md", "quote": f"The vault code is {secret}."}]},
    ]  # fmt: skip
    questions.write_text("\n".join(json.dumps(r) for r in rows))
    out = evaluate_golden(fake_index, docs, questions, explain_k=5)
    # the quote only globex's handbook.md holds was never chunked for the evaluation
    assert [x["id"] for x in out["not_chunked"]] == ["q2"]
    text = json.dumps(out)
    assert secret not in text.replace(f"The vault code is {secret}.", "")


def test_an_unexpected_error_is_json_with_the_headers_and_no_details(srv, monkeypatch) -> None:
    """Finding 12: a crash was a plain-text 500; it is the error shape, with the security
    headers, and says nothing of the server (the exception text may hold paths)."""

    def boom(_caller: Any) -> Any:
        raise OSError(36, "File name too long", "/srv/secret/" + "x" * 300)

    monkeypatch.setattr(srv.app.state.server, "documents", boom)
    r = httpx.get(f"{srv.url}/v1/documents", headers=srv.headers("admin"))
    assert r.status_code == 500 and r.headers["content-type"] == "application/json"
    assert r.json()["error"]["type"] == "error" and "OSError" in r.json()["error"]["message"]
    assert "/srv/secret" not in r.text and "frame-ancestors" in r.headers["content-security-policy"]
