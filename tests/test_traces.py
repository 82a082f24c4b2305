"""A trace for every entry point (Python API, CLI, HTTP search/ask, chat completions,
MCP tools), with every stage filled and nothing of another tenant in it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from ragline.cli.main import cli
from ragline.store.keys import create_key
from tests.conftest import EXAMPLES, make_index

QUESTION = "How long does the X-570 battery last on a full charge?"
CANARY = "zorblaxian"


@pytest.fixture()
def two_tenants(pg_url, schema, minilm, tmp_path):
    idx = make_index(pg_url, schema, embedder=minilm)
    idx.ingest(EXAMPLES, tenant="acme")
    other = tmp_path / "globex"
    other.mkdir()
    (other / "secret.md").write_text(
        f"# Globex battery secrets\n\nThe {CANARY} X-570 battery lasts 99 hours on a full charge.\n"
    )
    idx.ingest(other, tenant="globex")
    with idx.db.connection() as conn:
        globex = {r[0] for r in conn.execute("SELECT id FROM documents WHERE tenant = 'globex'")}
        globex_chunks = {
            r[0] for r in conn.execute("SELECT id FROM chunks WHERE tenant = 'globex'")
        }
    yield idx, globex, globex_chunks
    idx.close()


def check(trace: dict, *, kind: str, globex: set[int], globex_chunks: set[int]) -> None:
    assert trace["kind"] == kind and trace["question"]
    assert trace["permission"]["tenant"] == "acme"
    assert trace["plan"]["queries"]
    assert trace["legs"]["bm25"] and trace["legs"]["vector"], "both legs' candidates"
    for leg in trace["legs"].values():
        assert all({"rank", "chunk_id", "score"} <= set(c) for c in leg)
    assert trace["fused"] and trace["hits"]
    bq = trace["bm25_query"]  # what BM25 searched for, in which analysis
    assert bq["languages"] and {"x-570", "batteri"} <= set(bq["terms"])
    timings = trace["timings_ms"]
    assert {"embed_query", "bm25", "vector", "fuse", "hydrate"} <= set(timings)
    if kind == "ask":
        ctx = trace["context"]
        assert ctx["passages"] and ctx["tokens"] <= ctx["budget"]
        assert all(p["tokens"] for p in ctx["passages"])
        gen = trace["generation"]
        assert "10 hours" in gen["answer"] and gen["citations"] and gen["model"]
        assert gen["abstention"]["abstained"] is False and "generate" in timings
        assert all(c["valid"] for c in gen["citations"])
    # nothing of the other tenant: no candidate, hit, passage or text
    mentioned = {c["chunk_id"] for leg in trace["legs"].values() for c in leg}
    mentioned |= {c["chunk_id"] for c in trace["fused"]} | {h["chunk_id"] for h in trace["hits"]}
    assert not mentioned & globex_chunks
    assert not {h["document_id"] for h in trace["hits"]} & globex
    assert CANARY not in json.dumps(trace) and "globex" not in json.dumps(trace).lower()


def test_python_api_and_cli(two_tenants, pg_url, schema):
    idx, globex, chunks = two_tenants
    res = idx.search_result(QUESTION, tenant="acme")
    check(
        idx.trace(res.trace_id, tenant="acme"), kind="search", globex=globex, globex_chunks=chunks
    )
    answer = idx.ask(QUESTION, tenant="acme")
    check(
        idx.trace(answer.trace_id, tenant="acme"), kind="ask", globex=globex, globex_chunks=chunks
    )
    assert idx.trace(answer.trace_id, tenant="globex") is None  # another tenant cannot read it

    env = {
        "RAGLINE_DATABASE_URL": pg_url,
        "RAGLINE_DB_SCHEMA": schema,
        "RAGLINE_EMBEDDER": "minilm",
    }
    out = CliRunner().invoke(cli, ["ask", QUESTION, "--tenant", "acme", "--json"], env=env)
    assert out.exit_code == 0, out.output
    trace_id = json.loads(out.output)["trace_id"]
    shown = CliRunner().invoke(cli, ["trace", trace_id, "--json"], env=env)
    check(json.loads(shown.output), kind="ask", globex=globex, globex_chunks=chunks)
    text = CliRunner().invoke(cli, ["trace", trace_id], env=env).output
    assert "bm25 leg" in text and "vector leg" in text and "timings (ms)" in text
    assert "bm25 query (" in text and "x-570" in text
    listing = CliRunner().invoke(cli, ["trace", "--last", "3"], env=env).output
    assert trace_id in listing
    out = CliRunner().invoke(cli, ["search", QUESTION, "--tenant", "acme", "--json"], env=env)
    sid = json.loads(out.output)["trace_id"]
    check(idx.trace(sid, tenant="acme"), kind="search", globex=globex, globex_chunks=chunks)


def test_http_chat_and_mcp(two_tenants):
    from ragline.serve.mcp_server import RaglineTools
    from tests.serve.harness import live_server

    idx, globex, chunks = two_tenants
    key, _ = create_key(idx.db, tenant="acme")
    with live_server(idx, upload_dir=Path(tempfile.mkdtemp())) as live:
        h = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=live.url, headers=h, timeout=60) as c:
            ids = {
                "search": c.post("/v1/search", json={"query": QUESTION}).json()["trace_id"],
                "ask": c.post("/v1/ask", json={"question": QUESTION}).json()["trace_id"],
            }
            chat = c.post(
                "/v1/chat/completions",
                json={"model": "ragline", "messages": [{"role": "user", "content": QUESTION}]},
            ).json()
            for kind, tid in [*ids.items(), ("ask", chat["ragline"]["trace_id"])]:
                check(
                    c.get(f"/v1/traces/{tid}").json(),
                    kind=kind,
                    globex=globex,
                    globex_chunks=chunks,
                )
    tools = RaglineTools(idx, key)
    _, found = tools.search(QUESTION)
    _, answered = tools.ask(QUESTION)
    check(
        idx.trace(found["trace_id"], tenant="acme"),
        kind="search",
        globex=globex,
        globex_chunks=chunks,
    )
    check(
        idx.trace(answered["trace_id"], tenant="acme"),
        kind="ask",
        globex=globex,
        globex_chunks=chunks,
    )


def test_otel_spans(two_tenants):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragline.otel import export_spans

    idx, _globex, _chunks = two_tenants
    answer = idx.ask(QUESTION, tenant="acme")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    export_spans(idx.trace(answer.trace_id, tenant="acme"), tracer=provider.get_tracer("t"))
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert {"ragline.ask", "ragline.bm25", "ragline.vector", "ragline.generate"} <= set(spans)
    root = spans["ragline.ask"]
    assert spans["ragline.vector"].parent.span_id == root.context.span_id
    assert root.attributes["ragline.trace_id"] == answer.trace_id
    assert spans["ragline.generate"].end_time <= root.end_time
