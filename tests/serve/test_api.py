"""Every endpoint of ``ragline serve`` over real HTTP (uvicorn on loopback), and the
``ragline keys`` / ``ragline trace`` commands against the same database."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.conftest import cli_runner, make_index
from tests.fakes import FakeChatServer, FakeEmbedder
from tests.serve.conftest import METRICS_TOKEN, add_keys, sse_events, wait_job
from tests.serve.harness import live_server

BATTERY = "How long does the X-570 battery last on a full charge?"


def _error(r: httpx.Response, status: int, kind: str) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and body["error"]["type"] == kind
    assert body["error"]["code"] == status
    return str(body["error"]["message"])


# -- health, metrics, identity -----------------------------------------------------------


def test_health_and_ready_need_no_key(client):
    assert client.get("/health").json() == {"status": "ok"}
    r = client.get("/ready")
    assert r.status_code == 200 and r.json() == {"status": "ready", "collection": "default"}


def test_me_shows_the_keys_tenant_groups_and_role(client, served):
    me = client.get("/v1/me", headers=served.headers("hr")).json()
    assert me["tenant"] == "acme" and me["groups"] == ["hr"] and me["admin"] is False
    assert me["key_prefix"] == served.keys["hr"][:10] and me["generator"] == "extractive"
    # the alternative header works too
    me = client.get("/v1/me", headers={"X-API-Key": served.keys["globex"]}).json()
    assert me["tenant"] == "globex" and me["admin"] is True


def test_metrics_are_off_without_a_token(pg_url, schema, tmp_path):
    from tests.conftest import make_index
    from tests.fakes import FakeEmbedder
    from tests.serve.harness import live_server

    idx = make_index(pg_url, schema, embedder=FakeEmbedder())
    try:
        with live_server(idx, upload_dir=tmp_path) as live:
            r = httpx.get(f"{live.url}/metrics")
            assert r.status_code == 404 and "RAGLINE_METRICS_TOKEN" in r.text
    finally:
        idx.close()


def test_auth_failures(client, served):
    r = client.get("/v1/me")
    assert "missing API key" in _error(r, 401, "authentication_error")
    assert r.headers["www-authenticate"] == "Bearer"
    r = client.post("/v1/search", json={"query": "x"}, headers={"Authorization": "Bearer rl_nope"})
    assert "invalid or revoked" in _error(r, 401, "authentication_error")
    assert r.headers["www-authenticate"] == "Bearer"
    r = client.get("/v1/me", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    _error(r, 401, "authentication_error")
    for method, path in (("GET", "/v1/keys"), ("POST", "/v1/sync")):
        r = client.request(method, path, headers=served.headers("reader"), json={"path": "/"})
        assert "admin key" in _error(r, 403, "permission_error")


def test_metrics_need_the_operator_token_and_count_requests_stages_and_jobs(client, served):
    client.post("/v1/search", json={"query": "battery"}, headers=served.headers("reader"))
    # server-wide counts are for the operator: no tenant key, not even an admin's, reads them
    for who in ("reader", "admin"):
        _error(client.get("/metrics", headers=served.headers(who)), 401, "authentication_error")
    r = client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert re.search(
        r'ragline_requests_total\{method="POST",route="/v1/search",status="200"\} [1-9]', text
    )
    assert re.search(r'ragline_stage_seconds_count\{stage="bm25"\} [1-9]', text)
    assert re.search(r'ragline_stage_seconds_count\{stage="vector"\} [1-9]', text)
    assert re.search(r'ragline_ingest_jobs\{status="done"\} \d', text)
    assert re.search(r'ragline_request_seconds_count\{route="/v1/search"\} [1-9]', text)


def test_openapi_lists_every_endpoint(client):
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    expected = {
        "/health": {"get"},
        "/ready": {"get"},
        "/metrics": {"get"},
        "/v1/me": {"get"},
        "/v1/search": {"post"},
        "/v1/ask": {"post"},
        "/v1/traces": {"get"},
        "/v1/traces/{trace_id}": {"get"},
        "/v1/documents": {"get", "post"},
        "/v1/documents/{doc_id}": {"get", "delete"},
        "/v1/sync": {"post"},
        "/v1/jobs": {"get"},
        "/v1/jobs/{job_id}": {"get"},
        "/v1/keys": {"get", "post"},
        "/v1/keys/{key_id}": {"delete"},
        "/v1/models": {"get"},
        "/v1/chat/completions": {"post"},
    }
    for path, methods in expected.items():
        assert methods <= set(paths.get(path, {})), path
    assert "HTTPBearer" in spec["components"]["securitySchemes"]


# -- search ------------------------------------------------------------------------------


def test_search_returns_hits_with_scores_and_a_trace(client, served):
    r = client.post(
        "/v1/search",
        json={"query": "X-570 battery full charge", "k": 3},
        headers=served.headers("reader"),
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mode"] == "hybrid" and 1 <= len(body["hits"]) <= 3
    top = body["hits"][0]
    assert top["title"] == "X-570 Warehouse Robot User Manual" and "10 hours" in top["text"]
    assert top["rank"] == 1 and set(top["scores"]) >= {"rrf"}
    assert body["trace_id"].startswith("tr_")
    assert set(body["timings_ms"]) >= {"bm25", "vector", "fuse"}


def test_search_filters_language_type_and_metadata(client, served):
    h = served.headers("reader")
    only_html = client.post(
        "/v1/search", json={"query": "retention", "filters": {"type": "html"}}, headers=h
    ).json()["hits"]
    assert only_html and {x["source"].rsplit(".", 1)[-1] for x in only_html} == {"html"}
    no_hu = client.post(
        "/v1/search", json={"query": "retention", "filters": {"language": "hu"}}, headers=h
    )  # no Hungarian document: said, not an empty list
    assert no_hu.status_code == 400 and "languages present: en" in no_hu.json()["error"]["message"]
    en = client.post(
        "/v1/search", json={"query": "battery", "filters": {"language": ["en", "de"]}}, headers=h
    ).json()["hits"]
    assert en
    product = client.post(
        "/v1/search", json={"query": "robot", "filters": {"product": "X-570"}}, headers=h
    ).json()["hits"]
    assert product and {x["title"] for x in product} == {"X-570 Warehouse Robot User Manual"}


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"query": "x", "filters": {"modified_after": "last tuesday"}}, 400, "ISO date"),
        ({"query": "x", "filters": {"language": []}}, 400, "needs a value"),
        ({"query": "bat\x00tery"}, 422, "NUL"),
        ({"query": "x" * 4001}, 422, "more than the 4,000 allowed (setting max_query_chars)"),
        ({"query": ""}, 422, "at least 1"),
        ({"query": "x", "k": 0}, 422, "greater than or equal to 1"),
        ({"query": "x", "mode": "psychic"}, 422, "'hybrid', 'bm25'"),
        ({"query": "x", "colour": "red"}, 422, "colour"),
        ({"query": "x", "filters": {"a\x00b": "c"}}, 422, "NUL"),
    ],
)
def test_search_rejects_bad_input_with_a_clear_error(client, served, body, status, needle):
    r = client.post("/v1/search", json=body, headers=served.headers("reader"))
    assert needle in _error(r, status, "invalid_request_error")


# -- ask -----------------------------------------------------------------------------------


def test_ask_json_is_a_cited_answer(client, served):
    r = client.post("/v1/ask", json={"question": BATTERY}, headers=served.headers("reader"))
    assert r.status_code == 200, r.text
    a = r.json()
    assert not a["abstained"] and "10 hours" in a["answer"] and "[1]" in a["answer"]
    c = a["citations"][0]
    assert c["number"] == 1 and c["title"] == "X-570 Warehouse Robot User Manual"
    assert c["heading_path"] and "10 hours" in c["text"] and c["valid"] is True
    assert a["trace_id"].startswith("tr_")


def test_ask_streams_deltas_then_one_answer(client, served):
    with client.stream(
        "POST",
        "/v1/ask",
        json={"question": BATTERY, "stream": True},
        headers=served.headers("reader"),
    ) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r.iter_lines())
    names = [e for e, _ in events]
    assert names[-1] == "answer" and names.count("answer") == 1
    assert names[:-1] and set(names[:-1]) == {"delta"}
    streamed = "".join(json.loads(d)["text"] for e, d in events if e == "delta")
    final = json.loads(events[-1][1])
    assert "10 hours" in streamed and streamed.strip() == final["answer"].strip()
    assert final["citations"][0]["title"] == "X-570 Warehouse Robot User Manual"


def test_ask_streams_when_the_client_accepts_event_streams(client, served):
    h = {**served.headers("reader"), "Accept": "text/event-stream"}
    with client.stream("POST", "/v1/ask", json={"question": BATTERY}, headers=h) as r:
        events = sse_events(r.iter_lines())
    assert events[-1][0] == "answer" and "10 hours" in json.loads(events[-1][1])["answer"]


def test_ask_abstains_when_the_documents_do_not_say(client, served):
    a = client.post(
        "/v1/ask",
        json={"question": "What is the boiling point of liquid nitrogen on Mars?"},
        headers=served.headers("reader"),
    ).json()
    assert a["abstained"] is True and a["citations"] == []
    assert "not contain enough information" in a["answer"]


def test_ask_with_an_llm_streams_word_deltas(pg_url, schema, tmp_path):
    """The LLM path: the generator's own stream arrives as many deltas, then the checked answer."""
    from ragline.ingest.sources import text_source

    reply = "A fully charged X-570 runs for up to 10 hours of continuous operation [1]."
    with FakeChatServer(lambda _m: reply) as llm:
        idx = make_index(
            pg_url, schema, embedder=FakeEmbedder(), generator=f"openai:tiny@{llm.root}"
        )
        idx.ingest_sources(
            [
                text_source(
                    "x570",
                    "X-570 Manual",
                    "A fully charged X-570 runs for up to 10 hours of "
                    "continuous operation at standard load.",
                )
            ],
            tenant="acme",
        )
        with live_server(idx, upload_dir=tmp_path) as live:
            add_keys(live, {"r": {"tenant": "acme"}})
            with (
                httpx.Client(base_url=live.url, timeout=60) as c,
                c.stream(
                    "POST",
                    "/v1/ask",
                    json={"question": BATTERY, "stream": True},
                    headers=live.headers("r"),
                ) as r,
            ):
                events = sse_events(r.iter_lines())
        idx.close()
    deltas = [json.loads(d)["text"] for e, d in events if e == "delta"]
    assert len(deltas) > 5 and "".join(deltas) == reply
    final = json.loads(events[-1][1])
    assert events[-1][0] == "answer" and final["generator"] == "openai:tiny"
    assert final["answer"] == reply and final["citations"][0]["title"] == "X-570 Manual"


def test_chat_completions_take_content_parts(client, served):
    parts = [
        {"type": "text", "text": BATTERY},
        {"type": "text", "text": None},
        {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}},
    ]
    r = client.post(
        "/v1/chat/completions",
        json={"model": "ragline", "messages": [{"role": "user", "content": parts}]},
        headers=served.headers("reader"),
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert "10 hours" in body["choices"][0]["message"]["content"]
    t = client.get(f"/v1/traces/{body['ragline']['trace_id']}", headers=served.headers("reader"))
    assert t.json()["question"] == BATTERY


def test_chat_text_part_that_is_not_a_string_is_a_422(client, served):
    # {"a": 1} must not become the question "{'a': 1}"
    parts = [{"type": "text", "text": {"a": 1}}]
    r = client.post(
        "/v1/chat/completions",
        json={"model": "ragline", "messages": [{"role": "user", "content": parts}]},
        headers=served.headers("reader"),
    )
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "content part 0" in message and "not a string" in message


def test_filters_that_cannot_match_are_a_400(client, served):
    h = served.headers("reader")
    r = client.post("/v1/search", json={"query": "battery", "filters": {"type": "docs"}}, headers=h)
    assert r.status_code == 400, r.text
    assert "type=docs matches no document; types present:" in r.json()["error"]["message"]
    r = client.post("/v1/ask", json={"question": BATTERY, "filters": {"langauge": "en"}}, headers=h)
    assert r.status_code == 400 and "unknown filter key 'langauge'" in r.json()["error"]["message"]


# -- traces --------------------------------------------------------------------------------


def test_traces_of_an_ask_have_every_stage(client, served):
    h = served.headers("reader")
    a = client.post("/v1/ask", json={"question": BATTERY}, headers=h).json()
    listed = client.get("/v1/traces", params={"limit": 5}, headers=h).json()["traces"]
    assert listed[0]["id"] == a["trace_id"] and listed[0]["kind"] == "ask"
    assert listed[0]["question"] == BATTERY and listed[0]["abstained"] is False
    t = client.get(f"/v1/traces/{a['trace_id']}", headers=h).json()
    assert t["id"] == a["trace_id"] and t["kind"] == "ask" and t["question"] == BATTERY
    assert t["permission"] == {"tenant": "acme", "groups": []}
    assert set(t["legs"]) == {"bm25", "vector"} and all(t["legs"].values())
    assert t["fused"] and t["fused"][0]["rank"] == 1
    assert t["hits"] and t["hits"][0]["title"] == "X-570 Warehouse Robot User Manual"
    assert t["context"]["passages"] and t["context"]["tokens"] > 0
    gen = t["generation"]
    assert "10 hours" in gen["answer"] and gen["citations_valid"] is True
    assert gen["model"] == "extractive" and gen["citations"][0]["number"] == 1
    assert set(t["timings_ms"]) >= {"bm25", "vector", "fuse", "generate"}
    assert all(v >= 0 for v in t["timings_ms"].values())
    # limits are checked
    _error(client.get("/v1/traces", params={"limit": 0}, headers=h), 422, "invalid_request_error")
    r = client.get("/v1/traces/tr_doesnotexist", headers=h)
    assert "no trace" in _error(r, 404, "not_found_error")


def test_traces_are_scoped_to_tenant_and_groups(client, served):
    s = client.post("/v1/search", json={"query": "salary band"}, headers=served.headers("hr"))
    tid = s.json()["trace_id"]
    assert s.json()["hits"][0]["title"] == "Salary Bands"
    assert client.get(f"/v1/traces/{tid}", headers=served.headers("hr")).status_code == 200
    assert client.get(f"/v1/traces/{tid}", headers=served.headers("admin")).status_code == 200
    for who in ("reader", "globex", "globex_reader"):
        _error(client.get(f"/v1/traces/{tid}", headers=served.headers(who)), 404, "not_found_error")
        listed = client.get("/v1/traces", params={"limit": 200}, headers=served.headers(who))
        assert tid not in {t["id"] for t in listed.json()["traces"]}


# -- documents, uploads, jobs, sync ----------------------------------------------------------


def test_documents_list_and_get_follow_groups_and_tenant(client, served):
    reader = client.get("/v1/documents", headers=served.headers("reader")).json()["documents"]
    titles = {d["title"] for d in reader}
    assert "X-570 Warehouse Robot User Manual" in titles and "Salary Bands" not in titles
    assert "Globex Reactor Manual" not in titles
    hr = {
        d["title"]
        for d in client.get("/v1/documents", headers=served.headers("hr")).json()["documents"]
    }
    assert "Salary Bands" in hr and "Globex Reactor Manual" not in hr
    admin = client.get("/v1/documents", headers=served.headers("admin")).json()["documents"]
    salary = next(d for d in admin if d["title"] == "Salary Bands")
    assert salary["groups"] == ["hr"] and salary["chunks"] >= 1
    manual = next(d for d in reader if d["title"] == "X-570 Warehouse Robot User Manual")
    got = client.get(f"/v1/documents/{manual['id']}", headers=served.headers("reader")).json()
    assert got == manual and got["language"] == "en" and got["media_type"] == "text/markdown"
    r = client.get(f"/v1/documents/{salary['id']}", headers=served.headers("reader"))
    assert _error(r, 404, "not_found_error") == f"no document {salary['id']}"
    r = client.get(f"/v1/documents/{manual['id']}", headers=served.headers("globex"))
    assert _error(r, 404, "not_found_error") == f"no document {manual['id']}"
    # ids are opaque: anything that is not one is an unknown document
    for bad in ("abc", "1", str(manual["id"]).replace("doc_", "chk_")):
        r = client.get(f"/v1/documents/{bad}", headers=served.headers("reader"))
        assert _error(r, 404, "not_found_error") == f"no document {bad}"


def _upload(client, served, files, groups="", who="admin"):
    r = client.post(
        "/v1/documents",
        files=[("files", f) for f in files],
        data={"groups": groups},
        headers=served.headers(who),
    )
    return r


def test_upload_runs_a_job_and_a_broken_file_fails_alone(client, served):
    files = [
        (
            "pumpkin.md",
            b"# Pumpkin Policy\n\nThe quetzalcoatl pumpkin rule: carve on Fridays.\n",
            "text/markdown",
        ),
        ("notes.txt", b"Grapefruit notes: the xylophone drill is every Monday.\n", "text/plain"),
        ("broken.pdf", b"this is not a PDF at all", "application/pdf"),
    ]
    r = _upload(client, served, files)
    assert r.status_code == 202, r.text
    job = r.json()["job"]
    assert job["kind"] == "upload" and job["total"] == 3 and job["status"] == "queued"
    assert job["files"] == ["pumpkin.md", "notes.txt", "broken.pdf"]
    done = wait_job(client, job["id"], served.headers("admin"))
    assert done["status"] == "done" and done["failed"] == 1, done
    report = done["report"]
    assert sorted(report["added"]) == ["upload:notes.txt", "upload:pumpkin.md"]
    assert len(report["failed"]) == 1 and "broken.pdf" in report["failed"][0]["source"]
    assert done["finished_at"] and done["started_at"]
    hits = client.post(
        "/v1/search", json={"query": "quetzalcoatl pumpkin"}, headers=served.headers("reader")
    ).json()["hits"]
    assert hits[0]["title"] == "Pumpkin Policy" and hits[0]["source"] == "upload:pumpkin.md"
    # jobs: the tenant's own list; another tenant's id answers like a missing one
    jobs = client.get("/v1/jobs", headers=served.headers("admin")).json()["jobs"]
    assert job["id"] in {j["id"] for j in jobs}
    # readers do not see jobs: their file names would name documents of any group
    _error(client.get("/v1/jobs", headers=served.headers("reader")), 403, "permission_error")
    r = client.get(f"/v1/jobs/{job['id']}", headers=served.headers("reader"))
    _error(r, 403, "permission_error")
    theirs_list = client.get("/v1/jobs", headers=served.headers("globex")).json()["jobs"]
    assert job["id"] not in {j["id"] for j in theirs_list}
    theirs = client.get(f"/v1/jobs/{job['id']}", headers=served.headers("globex"))
    missing = client.get("/v1/jobs/999999999", headers=served.headers("globex"))
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json()["error"]["message"].replace(str(job["id"]), "N") == missing.json()[
        "error"
    ]["message"].replace("999999999", "N")


def test_upload_with_groups_and_metadata_and_bad_requests(client, served):
    r = client.post(
        "/v1/documents",
        files=[("files", ("hr-memo.md", b"# HR Memo\n\nThe wombat allowance is 12 euros.\n"))],
        data={"groups": "hr, payroll", "metadata": json.dumps({"department": "hr"})},
        headers=served.headers("admin"),
    )
    assert r.status_code == 202, r.text
    assert wait_job(client, r.json()["job"]["id"], served.headers("admin"))["failed"] == 0
    q = {"query": "wombat allowance", "filters": {"department": "hr"}}
    hr_hits = client.post("/v1/search", json=q, headers=served.headers("hr")).json()["hits"]
    assert hr_hits and hr_hits[0]["title"] == "HR Memo"
    # the reader cannot see the hr document: to it, the filter names nothing it can read
    # (said, without revealing the value exists)
    r = client.post("/v1/search", json=q, headers=served.headers("reader"))
    assert r.status_code == 400 and "hr" not in r.json()["error"]["message"].split("; ", 1)[-1]
    # a reader may not upload; bad metadata and missing files are refused
    _error(
        _upload(client, served, [("a.txt", b"a", "text/plain")], who="reader"),
        403,
        "permission_error",
    )
    r = client.post(
        "/v1/documents",
        files=[("files", ("a.txt", b"a"))],
        data={"metadata": "[1, 2]"},
        headers=served.headers("admin"),
    )
    assert "JSON object" in _error(r, 400, "invalid_request_error")
    r = client.post("/v1/documents", data={"groups": "x"}, headers=served.headers("admin"))
    _error(r, 422, "invalid_request_error")
    # form fields bypass the JSON models' checks: NUL, NaN and ±Infinity are refused up front
    for data, needle in (
        ({"metadata": '{"a": "x\\u0000"}'}, "metadata: text must not contain NUL"),
        ({"metadata": '{"a": {"b": ["\\u0000"]}}'}, "metadata: text must not contain NUL"),
        ({"metadata": '{"a": NaN}'}, "NaN is not a finite JSON number"),
        ({"metadata": '{"a": 1e999}'}, "1e999 is not a finite JSON number"),
        ({"metadata": '{"a": [-Infinity]}'}, "-Infinity is not a finite JSON number"),
        ({"groups": "hr,pay\x00roll"}, "groups: text must not contain NUL"),
    ):
        r = client.post(
            "/v1/documents",
            files=[("files", ("a.txt", b"a"))],
            data=data,
            headers=served.headers("admin"),
        )
        assert needle in _error(r, 400, "invalid_request_error"), data


def test_upload_names_cannot_leave_the_upload_folder(client, served):
    h = served.headers("admin")
    files = [
        ("files", ("..", b"# Dots\n\nThe ocelot clause applies.\n")),
        ("files", ("../../escape.md", b"# Escape\n\nThe pangolin clause applies.\n")),
    ]
    r = client.post("/v1/documents", files=files, headers=h)
    assert r.status_code == 202, r.text
    assert r.json()["job"]["files"] == ["file-0", "escape.md"]
    job = wait_job(client, r.json()["job"]["id"], h)
    assert job["status"] == "done" and job["report"]["added"] == ["upload:escape.md"]
    # a name without an extension says nothing of its type: reported, not silently dropped
    [failed] = job["report"]["failed"]
    assert failed["source"] == "upload:file-0" and "no extension" in failed["reason"]
    up = served.app.state.server.upload_dir
    assert not (up.parent / "escape.md").exists() and not (up / "escape.md").exists()
    # the job removed its upload folder: nothing of an upload stays on disk
    assert not [p for p in up.rglob("*") if p.is_file()]


def test_delete_and_purge_documents(client, served):
    h = served.headers("admin")
    r = _upload(
        client,
        served,
        [
            (
                "walrus.md",
                b"# Walrus Guide\n\nThe walrus feeding hour is 7 pm sharp.\n",
                "text/markdown",
            ),
            (
                "narwhal.md",
                b"# Narwhal Guide\n\nThe narwhal tusk polish is applied weekly.\n",
                "text/markdown",
            ),
        ],
    )
    wait_job(client, r.json()["job"]["id"], h)
    docs = {d["title"]: d for d in client.get("/v1/documents", headers=h).json()["documents"]}
    walrus, narwhal = docs["Walrus Guide"], docs["Narwhal Guide"]
    # readers and other tenants cannot delete
    r = client.delete(f"/v1/documents/{walrus['id']}", headers=served.headers("reader"))
    _error(r, 403, "permission_error")
    r = client.delete(f"/v1/documents/{walrus['id']}", headers=served.headers("globex"))
    assert _error(r, 404, "not_found_error") == f"no document {walrus['id']}"
    # plain delete
    r = client.delete(f"/v1/documents/{walrus['id']}", headers=h)
    assert r.status_code == 200 and r.json() == {"deleted": walrus["id"], "versions": 1}
    _error(client.get(f"/v1/documents/{walrus['id']}", headers=h), 404, "not_found_error")
    hits = client.post("/v1/search", json={"query": "walrus feeding hour"}, headers=h).json()[
        "hits"
    ]
    assert all(x["document_id"] != walrus["id"] for x in hits)
    # purge erases the traces that cite the document
    a = client.post(
        "/v1/ask",
        json={"question": "How often is the narwhal tusk polish applied?"},
        headers=served.headers("reader"),
    ).json()
    assert a["citations"] and a["citations"][0]["title"] == "Narwhal Guide"
    tid = a["trace_id"]
    assert client.get(f"/v1/traces/{tid}", headers=served.headers("reader")).status_code == 200
    r = client.delete(f"/v1/documents/{narwhal['id']}", params={"purge": "true"}, headers=h)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["deleted"] == narwhal["id"] and out["versions"] == 1 and out["traces"] >= 1
    _error(
        client.get(f"/v1/traces/{tid}", headers=served.headers("reader")), 404, "not_found_error"
    )
    _error(client.get(f"/v1/traces/{tid}", headers=h), 404, "not_found_error")
    listed = client.get("/v1/traces", params={"limit": 200}, headers=h).json()["traces"]
    assert tid not in {t["id"] for t in listed}


def test_sync_a_server_folder(client, served):
    root: Path = served.sync_root / "acme"  # --sync-root DIR: tenant acme syncs DIR/acme
    folder = root / "handbook"
    folder.mkdir(parents=True)
    (folder / "parking.md").write_text("# Parking\n\nThe capybara lot opens at 6 am.\n")
    h = served.headers("admin")
    r = client.post("/v1/sync", json={"path": str(folder), "groups": []}, headers=h)
    assert r.status_code == 202, r.text
    job = wait_job(client, r.json()["job"]["id"], h)
    assert job["kind"] == "sync" and job["status"] == "done" and job["failed"] == 0
    assert job["folder"] == str(folder.resolve()) and len(job["report"]["added"]) == 1
    hits = client.post("/v1/search", json={"query": "capybara lot"}, headers=h).json()["hits"]
    assert hits[0]["title"] == "Parking"
    # outside the roots (also through ..), a file, and a missing folder
    outside = Path(tempfile.mkdtemp(prefix="ragline-outside-"))
    for path in (str(outside), str(root / ".." / outside.name), "/etc"):
        r = client.post("/v1/sync", json={"path": path}, headers=h)
        assert "outside the sync roots" in _error(r, 403, "permission_error")
    r = client.post("/v1/sync", json={"path": str(folder / "parking.md")}, headers=h)
    assert "not a folder" in _error(r, 400, "invalid_request_error")
    r = client.post("/v1/sync", json={"path": str(root / "nope")}, headers=h)
    _error(r, 400, "invalid_request_error")
    # a home folder that does not exist, a name too long for the file system: 400, not 500
    r = client.post("/v1/sync", json={"path": "~no-such-user-here/docs"}, headers=h)
    assert "not a usable folder path" in _error(r, 400, "invalid_request_error")
    r = client.post("/v1/sync", json={"path": str(root / ("x" * 300))}, headers=h)
    assert "not a folder" in _error(r, 400, "invalid_request_error")


def test_sync_is_off_without_sync_roots_and_an_empty_index_answers(pg_url, schema, tmp_path):
    idx = make_index(pg_url, schema)  # embedder "auto": no collection until the first ingest
    assert idx.collection is None
    with live_server(idx, upload_dir=tmp_path / "up") as live:
        add_keys(live, {"admin": {"tenant": "t", "admin": True}})
        r = httpx.post(
            f"{live.url}/v1/sync", json={"path": str(tmp_path)}, headers=live.headers("admin")
        )
        assert "--sync-root" in _error(r, 403, "permission_error")
        # an index with nothing ingested yet answers
        h = live.headers("admin")
        assert (
            httpx.post(f"{live.url}/v1/search", json={"query": "x"}, headers=h).json()["hits"] == []
        )
        a = httpx.post(f"{live.url}/v1/ask", json={"question": "x?"}, headers=h).json()
        assert a["abstained"] is True
        assert "nothing has been ingested" in a["notes"][0]
        assert httpx.get(f"{live.url}/v1/traces", headers=h).json() == {"traces": []}
        r = httpx.get(f"{live.url}/v1/traces/tr_x", headers=h)
        assert _error(r, 404, "not_found_error") == "no trace 'tr_x'"
        assert httpx.get(f"{live.url}/v1/documents", headers=h).json()["documents"] == []
    idx.close()


# -- keys and rate limits ----------------------------------------------------------------


def test_keys_create_list_revoke(client, served):
    h = served.headers("admin")
    r = client.post("/v1/keys", json={"groups": ["ops", "hr"], "name": "bot"}, headers=h)
    assert r.status_code == 201, r.text
    new = r.json()
    key = new["key"]
    assert key.startswith("rl_") and len(key) > 40 and new["tenant"] == "acme"
    assert new["groups"] == ["hr", "ops"] and new["admin"] is False and new["revoked_at"] is None
    kh = {"Authorization": f"Bearer {key}"}
    assert client.get("/v1/me", headers=kh).json()["groups"] == ["hr", "ops"]
    listed = client.get("/v1/keys", headers=h).json()["keys"]
    mine = next(k for k in listed if k["id"] == new["id"])
    assert mine["prefix"] == key[:10] and "key" not in mine and key not in json.dumps(listed)
    assert all(k["tenant"] == "acme" for k in listed)
    assert new["id"] not in {
        k["id"] for k in client.get("/v1/keys", headers=served.headers("globex")).json()["keys"]
    }
    # another tenant's admin cannot revoke it; its own admin can, and it stops at once
    r = client.delete(f"/v1/keys/{new['id']}", headers=served.headers("globex"))
    assert _error(r, 404, "not_found_error") == f"no key {new['id']}"
    assert client.get("/v1/me", headers=kh).status_code == 200
    r = client.delete(f"/v1/keys/{new['id']}", headers=h)
    assert r.status_code == 200 and r.json() == {"revoked": new["id"]}
    assert "revoked" in _error(client.get("/v1/me", headers=kh), 401, "authentication_error")
    _error(client.delete(f"/v1/keys/{new['id']}", headers=h), 404, "not_found_error")
    assert new["id"] not in {k["id"] for k in client.get("/v1/keys", headers=h).json()["keys"]}
    # readers cannot manage keys
    _error(
        client.post("/v1/keys", json={}, headers=served.headers("reader")), 403, "permission_error"
    )
    _error(client.post("/v1/keys", json={"rate_limit": 0}, headers=h), 422, "invalid_request_error")


def test_a_keys_rate_limit_gives_429_with_retry_after(client, served):
    key = client.post("/v1/keys", json={"rate_limit": 3}, headers=served.headers("admin")).json()[
        "key"
    ]
    kh = {"Authorization": f"Bearer {key}"}
    codes = [client.get("/v1/me", headers=kh).status_code for _ in range(3)]
    assert codes == [200, 200, 200]
    r = client.get("/v1/me", headers=kh)
    assert "rate limit of 3" in _error(r, 429, "rate_limit_error")
    assert int(r.headers["retry-after"]) >= 1
    # other keys are not affected
    assert client.get("/v1/me", headers=served.headers("reader")).status_code == 200


# -- the CLI -------------------------------------------------------------------------------


@pytest.fixture()
def run_cli(pg_url, served):
    return cli_runner(
        {
            "RAGLINE_DATABASE_URL": pg_url,
            "RAGLINE_DB_SCHEMA": served.index.settings.db_schema,
            "RAGLINE_DATA_DIR": "",
        }
    )


def test_cli_keys_create_list_revoke_against_the_server(run_cli, client):
    out = json.loads(
        run_cli(
            "keys", "create", "--tenant", "initech", "--groups", "a,b", "--admin", "--json"
        ).output
    )
    key = out["key"]
    assert key.startswith("rl_") and out["tenant"] == "initech" and out["groups"] == ["a", "b"]
    assert out["admin"] is True
    kh = {"Authorization": f"Bearer {key}"}
    me = client.get("/v1/me", headers=kh).json()
    assert me == {**me, "tenant": "initech", "groups": ["a", "b"], "admin": True}
    listed = json.loads(run_cli("keys", "list", "--tenant", "initech", "--json").output)["keys"]
    assert [k["id"] for k in listed] == [out["id"]] and key not in json.dumps(listed)
    text = run_cli("keys", "list").output
    assert out["prefix"] in text and "initech" in text
    assert f"revoked {out['id']}" in run_cli("keys", "revoke", str(out["id"])).output
    _error(client.get("/v1/me", headers=kh), 401, "authentication_error")
    shown = json.loads(run_cli("keys", "list", "--tenant", "initech", "--all", "--json").output)
    assert shown["keys"][0]["revoked_at"] is not None
    assert "no live key" in run_cli("keys", "revoke", str(out["id"]), code=1).output


def test_cli_trace_lists_and_prints_a_trace(run_cli, client, served):
    a = client.post("/v1/ask", json={"question": BATTERY}, headers=served.headers("reader")).json()
    listed = run_cli("trace", "--last", "5").output
    assert a["trace_id"] in listed.splitlines()[0] and BATTERY[:40] in listed
    data = json.loads(run_cli("trace", "--last", "5", "--json").output)["traces"]
    assert data[0]["id"] == a["trace_id"] and data[0]["tenant"] == "acme"
    shown = run_cli("trace", a["trace_id"]).output
    assert shown.startswith(f"trace {a['trace_id']}  ask")
    for needle in (
        "question: " + BATTERY,
        "bm25 leg",
        "vector leg",
        "fused (RRF)",
        "context:",
        "10 hours",
        "timings (ms):",
    ):
        assert needle in shown, needle
    full = json.loads(run_cli("trace", a["trace_id"], "--json").output)
    assert full["id"] == a["trace_id"] and full["generation"]["answer"] == a["answer"]
    assert "no trace" in run_cli("trace", "tr_missing", code=1).output


def test_documents_are_paged(client, served):
    h = served.headers("admin")
    everything = client.get("/v1/documents", headers=h).json()
    assert everything["total"] == len(everything["documents"]) >= 3
    first = client.get("/v1/documents", params={"limit": 2}, headers=h).json()
    rest = client.get("/v1/documents", params={"limit": 2, "offset": 2}, headers=h).json()
    assert [d["id"] for d in first["documents"] + rest["documents"]] == [
        d["id"] for d in everything["documents"]
    ][:4]
    assert client.get("/v1/documents", params={"limit": 0}, headers=h).status_code == 422
