"""No key ever reads what it may not, through any entry point, in random worlds.

Each hypothesis example builds a world: documents of random tenants, groups and metadata
(uploaded through the API by each tenant's admin; some re-uploaded, so old versions stay
in history), random keys (readers and admins with random groups). Then every key asks
about every document's canary through every entry point: ``/v1/search`` in each mode
(bm25, vector, hybrid, rerank), with and without history, with and without filters;
``/v1/ask`` as JSON and as SSE; ``/v1/chat/completions`` plain and streamed; the MCP
``search`` and ``ask`` tools; documents (list, by id), jobs, keys and traces (list, by
id). Some worlds then build and activate a new index version and ask again.

Checked against the reference of :mod:`tests.security.world`: no canary of a document
the key may not read appears anywhere in a response (fields echoing the caller's own
query aside), every id a key sees belongs to it, another tenant's object answers exactly
like a missing one, a trace is seen only by the key that made it and its tenant's
admins, and (so the checks are not vacuous) every document a key may search is found
by its canary. Worlds accumulate in one served collection: each world's tenants are new,
so every earlier world's documents are other tenants' documents.
"""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.security.conftest import LONG, WORLDS
from tests.security.world import DEPTS, GROUPS, MODES, TENANTS, Doc, Key, World, canary, post, sse

pytestmark = pytest.mark.slow

doc_spec = st.tuples(
    st.sampled_from(TENANTS),
    st.lists(st.sampled_from(GROUPS), max_size=2, unique=True),
    st.sampled_from(DEPTS),
    st.booleans(),  # re-uploaded once: version 1 stays in history
)
key_spec = st.tuples(
    st.sampled_from(TENANTS),
    st.lists(st.sampled_from(GROUPS), max_size=2, unique=True),
    st.booleans(),
)
_seq = itertools.count()
_state: dict[str, World] = {}


@pytest.fixture(scope="module")
def world(world_server, counters) -> World:
    w = World(world_server, counters)
    _state["w"] = w
    return w


@settings(
    max_examples=WORLDS,
    deadline=None,
    derandomize=not LONG,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    docs=st.lists(doc_spec, min_size=1, max_size=8 if LONG else 6),
    keys=st.lists(key_spec, min_size=1, max_size=5 if LONG else 4),
    rebuild=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
@example(  # always: two tenants, public and grouped documents, history, every kind of key
    docs=[
        ("a", [], "ops", True),
        ("a", ["red"], "law", False),
        ("a", ["blue", "green"], "eng", True),
        ("b", ["red"], "ops", False),
        ("b", [], "law", False),
    ],
    keys=[("a", ["red"], False), ("a", [], False), ("a", ["green"], True), ("b", ["red"], False)],
    rebuild=True,
    seed=7,
)
def test_no_key_reads_what_it_may_not(world: World, docs, keys, rebuild, seed) -> None:
    n = next(_seq)
    rng = random.Random(seed)
    world.counters.worlds += 1
    tenant = lambda t: f"w{n}{t}"  # noqa: E731
    live = world.live
    new: list[Doc] = []
    with httpx.Client(base_url=live.url, timeout=120) as c:
        for i, (t, groups, dept, again) in enumerate(docs):
            new.append(Doc(tenant(t), tuple(sorted(groups)), dept, [canary(n, i, 1)]))
        batches: dict[tuple[str, tuple[str, ...], str], list[Doc]] = {}
        for d in new:
            batches.setdefault((d.tenant, d.groups, d.dept), []).append(d)
        for batch in batches.values():
            world.upload(c, batch)
        world.docs.extend(new)
        again = [d for d, spec in zip(new, docs) if spec[3]]
        for d in again:  # a new version, same groups: version 1 stays in history
            d.canaries.append(canary(n, d.canaries[0], 2))
        for batch in _batches(again):
            world.upload(c, batch)
        mine = [world.admin_of(t) for t in dict.fromkeys(d.tenant for d in new)]
        mine += [world.add_key(tenant(t), g, admin) for t, g, admin in keys]

        world.traces = {}  # traces live in the serving index version: this world's
        earlier = [d for d in world.docs if d not in new]
        for k in mine:
            probes = new + rng.sample(earlier, min(len(earlier), 2))
            _probe_key(c, world, k, probes, rng)
        _check_traces(c, world, mine)
        if rebuild and world.counters.worlds % 3 == 1:  # a few per run: each copies it all
            _new_index_version(c, world)
            for k in mine:
                _probe_history(c, world, k, new)


def _batches(docs: list[Doc]) -> list[list[Doc]]:
    out: dict[tuple[str, tuple[str, ...], str], list[Doc]] = {}
    for d in docs:
        out.setdefault((d.tenant, d.groups, d.dept), []).append(d)
    return list(out.values())


def _probe_key(c: httpx.Client, w: World, k: Key, docs: list[Doc], rng: random.Random) -> None:
    searchable = {f"upload:{x.name}" for x in w.docs if k.may_search(x)}
    for d in docs:
        q = d.canary
        # search in every mode; bm25 must find what the key may search (not vacuous)
        for mode in MODES:
            body: dict[str, Any] = {"query": q, "k": 20, "mode": mode}
            if rng.random() < 0.3:
                body["filters"] = {"dept": rng.choice(DEPTS)}
            r = post(c, "/v1/search", body, k)
            w.counters.query(f"search:{mode}")
            if r.status_code == 400 and "filters" in body:
                # a value no document the key may search has: said, naming only the
                # values of documents it may search
                dept = body["filters"]["dept"]
                seen = {x.dept for x in w.docs if k.may_search(x)}
                message = r.json()["error"]["message"]
                assert dept not in seen, message
                if not seen:
                    assert "unknown filter key 'dept'" in message, message
                    assert message.endswith("metadata keys: none"), message
                    continue
                assert f"dept={dept} matches no document" in message, message
                listed = message.rsplit("values of 'dept': ", 1)[1].split(", ")
                assert set(listed) <= seen, (listed, seen)
                continue
            assert r.status_code == 200, r.text
            res = r.json()
            w.check(f"search {mode}", res, k)
            got = {h["doc_key"] for h in res["hits"]}
            assert got <= searchable, (got - searchable, k)
            assert all(re.fullmatch(r"doc_[a-z2-7]{13}", h["document_id"]) for h in res["hits"])
            assert all(re.fullmatch(r"chk_[a-z2-7]{13}", h["chunk_id"]) for h in res["hits"])
            filtered_out = "filters" in body and body["filters"]["dept"] != d.dept
            if mode == "bm25" and k.may_search(d) and not filtered_out:
                assert res["hits"] and res["hits"][0]["document_id"] == d.id, (res, d)
                assert q in res["hits"][0]["text"]
            if filtered_out:
                assert f"upload:{d.name}" not in got
            w.traces[res["trace_id"]] = k
        # history: the old version's canary, every version searched
        old = d.canaries[0]
        r = post(c, "/v1/search", {"query": old, "mode": "bm25", "include_history": True}, k)
        w.counters.query("search:history")
        res = r.json()
        w.check("search history", res, k)
        assert {h["doc_key"] for h in res["hits"]} <= searchable
        if k.may_search(d):
            assert res["hits"] and old in res["hits"][0]["text"], res
        w.traces[res["trace_id"]] = k
        # ask, JSON (BM25 first, so the answer must be found) and streamed (default mode)
        question = f"What is the secret code word {q}?"
        r = post(c, "/v1/ask", {"question": question, "mode": "bm25"}, k)
        w.counters.query("ask")
        a = r.json()
        w.check("ask", a, k)
        assert {x["doc_key"] for x in a["citations"]} <= searchable
        if k.may_search(d):
            assert q in a["answer"] and not a["abstained"], a
        w.traces[a["trace_id"]] = k
        events = list(sse(c, "/v1/ask", {"question": question, "stream": True}, k))
        w.counters.query("ask:stream")
        w.check("ask stream", [e for _, e in events], k)
        final = [e for name, e in events if name == "answer"]
        assert final and {x["doc_key"] for x in final[-1]["citations"]} <= searchable
        w.traces[final[-1]["trace_id"]] = k
        # chat completions, plain and streamed
        msg = {"model": "ragline", "messages": [{"role": "user", "content": question}]}
        r = post(c, "/v1/chat/completions", msg, k)
        w.counters.query("chat")
        chat = r.json()
        w.check("chat", chat, k)
        assert {x["doc_key"] for x in chat["citations"]} <= searchable
        w.traces[chat["ragline"]["trace_id"]] = k
        chunks = [e for _, e in sse(c, "/v1/chat/completions", {**msg, "stream": True}, k)]
        w.counters.query("chat:stream")
        w.check("chat stream", chunks, k)
        # MCP tools, as this key
        text, data = _mcp(w, k).search(q, 10, None)
        w.counters.query("mcp:search")
        w.check("mcp search", {"text": text, "data": data}, k, echoed=[q])
        assert {h["doc_key"] for h in data["hits"]} <= searchable
        w.traces[data["trace_id"]] = k
        text, data = _mcp(w, k).ask(question)
        w.counters.query("mcp:ask")
        w.check("mcp ask", {"text": text, "data": data}, k, echoed=[question])
        w.traces[data["trace_id"]] = k
    # documents: the list, and every id of every tenant by id
    listed = c.get("/v1/documents", headers=k.headers).json()["documents"]
    w.check("documents", listed, k)
    assert {x["id"] for x in listed} == w.readable_ids(k)
    missing = _missing(c, f"/v1/documents/{w.live.app.state.server.view.id('doc', 10**15)}", k)
    for d in rng.sample(w.docs, min(len(w.docs), 12)):
        r = c.get(f"/v1/documents/{d.id}", headers=k.headers)
        if k.may_read(d):
            assert r.status_code == 200 and r.json()["title"] == f"Note {d.canary}"
        else:
            _same_404(r, missing, d.id)
    # jobs and keys: admins only, their tenant only
    r = c.get("/v1/jobs", headers=k.headers)
    view = w.live.app.state.server.view
    if not k.admin:
        assert r.status_code == 403
    else:
        w.check("jobs", r.json(), k)
        assert {j["id"] for j in r.json()["jobs"]} == {
            j for j, t in w.jobs.items() if t == k.tenant
        }
        missing = _missing(c, f"/v1/jobs/{view.id('job', 10**15)}", k)
        for job_id, t in list(w.jobs.items())[-6:]:
            r = c.get(f"/v1/jobs/{job_id}", headers=k.headers)
            if t == k.tenant:
                assert r.status_code == 200 and r.json()["id"] == job_id
            else:
                _same_404(r, missing, job_id)
        listed_keys = c.get("/v1/keys", headers=k.headers).json()["keys"]
        assert {x["tenant"] for x in listed_keys} == {k.tenant}
        assert all(re.fullmatch(r"key_[a-z2-7]{13}", x["id"]) for x in listed_keys)


def _check_traces(c: httpx.Client, w: World, keys: list[Key]) -> None:
    """A trace is the business of the key that made it and its tenant's admins."""
    for k in keys:
        listed = c.get("/v1/traces", params={"limit": 200}, headers=k.headers).json()["traces"]
        w.check("traces", listed, k)
        ids = {t["id"] for t in listed}
        missing = _missing(c, "/v1/traces/tr_" + "0" * 20, k)
        for tid, maker in list(w.traces.items())[-80:]:
            visible = maker == k or (k.admin and maker.tenant == k.tenant)
            r = c.get(f"/v1/traces/{tid}", headers=k.headers)
            if not visible:
                assert tid not in ids
                _same_404(r, missing, tid)
                continue
            assert r.status_code == 200, (r.text, maker, k)
            t = r.json()
            w.check("trace", t, k)
            assert t["permission"]["tenant"] == k.tenant
            # every candidate of every leg came from a chunk the maker may search
            chunks = {x["chunk_id"] for leg in t["legs"].values() for x in leg}
            view = w.live.app.state.server.view
            for tenant, groups in _owners(w, {view.internal("chk", x) for x in chunks}):
                assert tenant == maker.tenant and (not groups or set(groups) & set(maker.groups))


def _probe_history(c: httpx.Client, w: World, k: Key, new: list[Doc]) -> None:
    """After a new index version is activated: the same answers, history included."""
    for d in new:
        for q, hist in ((d.canary, False), (d.canaries[0], True)):
            r = post(c, "/v1/search", {"query": q, "mode": "bm25", "include_history": hist}, k)
            w.counters.query("search:new-version")
            res = r.json()
            w.check("search after index activate", res, k)
            if k.may_search(d):
                assert res["hits"] and q in res["hits"][0]["text"], (res, d)


def _new_index_version(c: httpx.Client, w: World) -> None:
    """``ragline index build`` then ``index activate``; the server follows, ids change."""
    from ragline.rebuild import build_version
    from ragline.store import versions as vs

    idx = w.live.index
    built = build_version(idx)
    assert built["failed"] == [], built
    vs.activate(idx.db, idx.settings.collection, built["version"])
    for t in dict.fromkeys(d.tenant for d in w.docs):
        admin = w.admin_of(t)
        listed = c.get("/v1/documents", headers=admin.headers).json()["documents"]
        by_key = {x["doc_key"]: x["id"] for x in listed}
        for d in w.docs:
            if d.tenant == t:
                d.id = by_key[f"upload:{d.name}"]


_tools: dict[str, Any] = {}


def _mcp(w: World, k: Key) -> Any:
    from ragline.serve.mcp_server import RaglineTools

    if k.secret not in _tools:
        _tools[k.secret] = RaglineTools(w.live.index, k.secret)
    return _tools[k.secret]


def _missing(c: httpx.Client, path: str, k: Key) -> httpx.Response:
    r = c.get(path, headers=k.headers)
    assert r.status_code in (403, 404), r.text
    return r


def _same_404(r: httpx.Response, missing: httpx.Response, ident: str) -> None:
    """Another tenant's object answers exactly like a missing one."""
    assert r.status_code == missing.status_code == 404, (r.text, missing.text)
    mine, theirs = r.json()["error"], missing.json()["error"]
    assert mine["type"] == theirs["type"] and mine["code"] == theirs["code"]
    other = theirs["message"].rsplit(" ", 1)[-1].strip("'")
    assert mine["message"].replace(ident, "ID") == theirs["message"].replace(other, "ID")


def _owners(w: World, chunk_ids: set[Any]) -> set[tuple[str, tuple[str, ...]]]:
    """(tenant, groups) of the chunks (internal ids), as stored."""
    assert None not in chunk_ids
    with w.live.index.db.connection() as conn:
        rows = conn.execute(
            "SELECT DISTINCT tenant, groups FROM chunks WHERE id = ANY(%s)", (sorted(chunk_ids),)
        ).fetchall()
    return {(r[0], tuple(r[1])) for r in rows}
