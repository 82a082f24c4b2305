"""Tenant and group isolation, property-based: whatever the tenants, groups, documents and
keys, no key ever sees a document it may not read, through any endpoint.

Each example uploads documents carrying a unique canary word (in title, file name and
text) for random tenants and groups, creates keys with random groups and roles, then every
key searches, asks and chats about every canary, lists documents, jobs and traces and
fetches every trace id anyone saw. A key may read a document when it is of the key's
tenant and the document has no groups, shares a group with the key, or the key is an admin
(admins manage every document of their tenant; their searches still follow their groups).

Examples share one server; tenant names get a per-example prefix, so every earlier
example's documents are other tenants' documents, and their canaries must never show up.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ragline.store.keys import create_key
from tests.conftest import make_index
from tests.fakes import FakeEmbedder
from tests.serve.conftest import own_schema, wait_job
from tests.serve.harness import Live, live_server

TENANTS = ("a", "b", "c")
GROUPS = ("red", "blue", "green")
MISSING_DOC = 987654321
MISSING_TRACE = "tr_" + "0" * 20
MISSING_JOB = 987654321


@dataclass(frozen=True)
class Doc:
    tenant: str
    groups: tuple[str, ...]
    canary: str
    id: int = 0


@dataclass(frozen=True)
class Key:
    tenant: str
    groups: tuple[str, ...]
    admin: bool
    secret: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secret}"}

    def may_read(self, d: Doc) -> bool:
        return d.tenant == self.tenant and (
            self.admin or not d.groups or bool(set(d.groups) & set(self.groups))
        )

    def may_search(self, d: Doc) -> bool:
        return d.tenant == self.tenant and (not d.groups or bool(set(d.groups) & set(self.groups)))


@pytest.fixture(scope="module")
def iso(pg_url) -> Iterator[Live]:
    with own_schema(pg_url) as schema:
        idx = make_index(pg_url, schema, embedder=FakeEmbedder())
        with live_server(
            idx, upload_dir=Path(tempfile.mkdtemp(prefix="ragline-iso-")), rate_limit=10**6
        ) as live:
            yield live
        idx.close()


_example = itertools.count()
_all_canaries: list[str] = []  # every canary uploaded so far (earlier examples: other tenants)

_ECHO = {"query", "question", "queries", "plan", "bm25_query"}  # bm25_query: its analyzed terms


def _scrub(obj: Any) -> Any:
    """The response without the fields that echo the caller's own question back."""
    if isinstance(obj, dict):
        return {k: _scrub(v) for k, v in obj.items() if k not in _ECHO}
    if isinstance(obj, list):
        return [_scrub(v) for v in obj]
    return obj


def _assert_no_leak(what: str, body: Any, forbidden: set[str]) -> None:
    text = json.dumps(_scrub(body))
    leaked = sorted(c for c in forbidden if c in text)
    assert not leaked, f"{what} leaked {leaked}: {text[:2000]}"


def _same_404(r: httpx.Response, missing: httpx.Response, ident: str, missing_ident: str) -> None:
    assert r.status_code == missing.status_code == 404, (r.text, missing.text)
    assert r.headers.get("content-type") == missing.headers.get("content-type")
    mine, theirs = r.json(), missing.json()
    assert set(mine) == set(theirs) == {"error"} and set(mine["error"]) == set(theirs["error"])
    for field in mine["error"]:
        a, b = mine["error"][field], theirs["error"][field]
        if field == "message":
            a = re.sub(rf"\b{re.escape(ident)}\b", "ID", a)
            b = re.sub(rf"\b{re.escape(missing_ident)}\b", "ID", b)
        assert a == b, (field, a, b)


doc_strategy = st.tuples(
    st.sampled_from(TENANTS), st.lists(st.sampled_from(GROUPS), max_size=2, unique=True)
)
key_strategy = st.tuples(
    st.sampled_from(TENANTS),
    st.lists(st.sampled_from(GROUPS), max_size=2, unique=True),
    st.booleans(),
)


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    docs=st.lists(doc_strategy, min_size=1, max_size=4),
    keys=st.lists(key_strategy, min_size=1, max_size=3),
)
@example(  # always covered: two tenants, public and grouped documents, every kind of key
    docs=[("a", []), ("a", ["red"]), ("a", ["blue", "green"]), ("b", ["red"]), ("b", [])],
    keys=[("a", ["red"], False), ("a", [], False), ("a", ["green"], True), ("b", ["red"], False)],
)
def test_no_key_sees_a_document_it_may_not_read(iso: Live, docs, keys) -> None:
    n = next(_example)
    tenant = lambda t: f"x{n}{t}"  # noqa: E731
    db = iso.index.db
    with httpx.Client(base_url=iso.url, timeout=60) as c:
        # -- documents, uploaded by each tenant's admin, one job per (tenant, groups)
        uploaders: dict[str, Key] = {}  # full tenant name -> its admin key
        for t in dict.fromkeys(tenant(t) for t, _ in docs):
            secret, _ = create_key(db, tenant=t, admin=True, name="uploader")
            uploaders[t] = Key(t, (), True, secret)
        planned: list[Doc] = []
        for i, (t, groups) in enumerate(docs):
            h = hashlib.sha256(f"{n}/{i}".encode()).hexdigest()[:10]
            planned.append(Doc(tenant(t), tuple(sorted(groups)), f"canary{h}"))
        jobs: dict[int, str] = {}  # job id -> tenant
        batches: dict[tuple[str, tuple[str, ...]], list[Doc]] = {}
        for d in planned:
            batches.setdefault((d.tenant, d.groups), []).append(d)
        for (t, groups), batch in batches.items():
            up = uploaders[t]
            files = [
                (
                    "files",
                    (
                        f"{d.canary}.md",
                        f"# Note {d.canary}\n\nThe secret code word of this note is {d.canary}. "
                        "Keep it safe.\n".encode(),
                    ),
                )
                for d in batch
            ]
            r = c.post(
                "/v1/documents", files=files, data={"groups": ",".join(groups)}, headers=up.headers
            )
            assert r.status_code == 202, r.text
            job = wait_job(c, r.json()["job"]["id"], up.headers)
            assert job["status"] == "done" and job["failed"] == 0, job
            jobs[job["id"]] = t
        ids = {}
        for up in uploaders.values():
            for d in c.get("/v1/documents", headers=up.headers).json()["documents"]:
                ids[d["title"]] = d["id"]
        docs_ = [Doc(d.tenant, d.groups, d.canary, ids[f"Note {d.canary}"]) for d in planned]
        _all_canaries.extend(d.canary for d in docs_)

        # -- keys: the random ones and the uploaders
        checked = list(uploaders.values())
        for t, groups, admin in keys:
            secret, _ = create_key(db, tenant=tenant(t), groups=groups, admin=admin)
            checked.append(Key(tenant(t), tuple(sorted(groups)), admin, secret))

        traces: dict[str, Key] = {}  # trace id -> the key that made it
        for k in checked:
            readable = {d.id for d in docs_ if k.may_read(d)}
            searchable = {d.id for d in docs_ if k.may_search(d)}
            forbidden = set(_all_canaries) - {d.canary for d in docs_ if k.may_read(d)}
            readable_keys = {f"upload:{d.canary}.md" for d in docs_ if k.may_read(d)}
            for d in docs_:
                # search
                r = c.post("/v1/search", json={"query": d.canary, "k": 20}, headers=k.headers)
                assert r.status_code == 200, r.text
                res = r.json()
                _assert_no_leak("search", res, forbidden)
                assert {h["document_id"] for h in res["hits"]} <= searchable
                if d.id in searchable:
                    assert (
                        res["hits"][0]["document_id"] == d.id and d.canary in res["hits"][0]["text"]
                    )
                traces[res["trace_id"]] = k
                # ask
                question = f"What is the secret code word {d.canary}?"
                r = c.post("/v1/ask", json={"question": question}, headers=k.headers)
                assert r.status_code == 200, r.text
                a = r.json()
                _assert_no_leak("ask", a, forbidden)
                assert {x["doc_key"] for x in a["citations"]} <= readable_keys
                if d.id in searchable:
                    assert d.canary in a["answer"] and not a["abstained"], a
                traces[a["trace_id"]] = k
                # chat completions
                r = c.post(
                    "/v1/chat/completions",
                    json={"model": "ragline", "messages": [{"role": "user", "content": question}]},
                    headers=k.headers,
                )
                assert r.status_code == 200, r.text
                chat = r.json()
                _assert_no_leak("chat", chat, forbidden)
                assert {x["doc_key"] for x in chat["citations"]} <= readable_keys
                traces[chat["ragline"]["trace_id"]] = k
                # one document by id: readable, or the same 404 as a missing one
                r = c.get(f"/v1/documents/{d.id}", headers=k.headers)
                if d.id in readable:
                    assert r.status_code == 200 and r.json()["title"] == f"Note {d.canary}"
                else:
                    missing = c.get(f"/v1/documents/{MISSING_DOC}", headers=k.headers)
                    _same_404(r, missing, str(d.id), str(MISSING_DOC))
            # listings
            listed = c.get("/v1/documents", headers=k.headers).json()["documents"]
            _assert_no_leak("documents", listed, forbidden)
            assert {x["id"] for x in listed} == readable
            r = c.get("/v1/jobs", headers=k.headers)
            if k.admin:
                _assert_no_leak("jobs", r.json(), forbidden)
                assert {j["id"] for j in r.json()["jobs"]} == {
                    j for j, t in jobs.items() if t == k.tenant
                }
            else:
                assert r.status_code == 403, r.text
            for job_id, t in jobs.items():
                r = c.get(f"/v1/jobs/{job_id}", headers=k.headers)
                if not k.admin:
                    assert r.status_code == 403
                elif t == k.tenant:
                    assert r.status_code == 200 and r.json()["id"] == job_id
                else:
                    missing = c.get(f"/v1/jobs/{MISSING_JOB}", headers=k.headers)
                    _same_404(r, missing, str(job_id), str(MISSING_JOB))
            r = c.get("/v1/traces", params={"limit": 200}, headers=k.headers)
            _assert_no_leak("traces", r.json(), forbidden)

        # every trace anyone made, fetched by every key
        for k in checked:
            forbidden = set(_all_canaries) - {d.canary for d in docs_ if k.may_read(d)}
            readable = {d.id for d in docs_ if k.may_read(d)}
            listed = {
                t["id"]
                for t in c.get("/v1/traces", params={"limit": 200}, headers=k.headers).json()[
                    "traces"
                ]
            }
            for tid, maker in traces.items():
                visible = maker.tenant == k.tenant and (k.admin or maker.groups == k.groups)
                assert (tid in listed) == visible, (tid, maker, k)
                r = c.get(f"/v1/traces/{tid}", headers=k.headers)
                if not visible:
                    missing = c.get(f"/v1/traces/{MISSING_TRACE}", headers=k.headers)
                    _same_404(r, missing, tid, MISSING_TRACE)
                    continue
                assert r.status_code == 200, r.text
                t = r.json()
                _assert_no_leak("trace", t, forbidden)
                assert t["id"] == tid and t["permission"]["tenant"] == k.tenant
                mentioned = {h["document_id"] for h in t["hits"]}
                mentioned |= {
                    p["document_id"] for p in (t.get("context") or {}).get("passages", [])
                }
                assert mentioned <= readable
                # every candidate of every leg came from a document the maker may search
                chunks = {x["chunk_id"] for leg in t["legs"].values() for x in leg}
                chunks |= {x["chunk_id"] for x in t["fused"]}
                owners = _chunk_documents(db, chunks)
                assert owners <= {d.id for d in docs_ if maker.may_search(d)}, (owners, maker)


def _chunk_documents(db: Any, chunk_ids: set[int]) -> set[int]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT DISTINCT document_id FROM chunks WHERE id = ANY(%s)", (sorted(chunk_ids),)
        ).fetchall()
    return {r[0] for r in rows}
