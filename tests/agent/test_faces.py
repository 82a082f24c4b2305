"""The research loop through every face: CLI (ask --agent, source, trace), HTTP
(/v1/ask agent, /v1/sources, the trace), chat completions (model ragline-agent) and the
MCP tool research; the real MiniLM embedder and the example documents."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from ragline.cli.main import cli
from ragline.ingest.sources import text_source
from ragline.store.keys import create_key
from tests.conftest import EXAMPLES, make_index

TWO_PART = (
    "How long does the X-570 battery last on a full charge and how much am I reimbursed per "
    "mile for driving my own car?"
)


@pytest.fixture()
def served(pg_url, schema, minilm):
    idx = make_index(pg_url, schema, embedder=minilm)
    idx.ingest(EXAMPLES)
    hr = make_index(pg_url, schema, embedder=minilm, collection="hr")
    hr.ingest_sources(
        [text_source("hr/bonus", "Bonus", "The annual bonus pool is 4.2 million euros.")],
        groups=["hr"],
    )
    hr.close()
    env = {
        "RAGLINE_DATABASE_URL": pg_url,
        "RAGLINE_DB_SCHEMA": schema,
        "RAGLINE_EMBEDDER": "minilm",
    }
    yield idx, env
    idx.close()


def test_cli_source_ask_agent_and_trace(served):
    idx, env = served
    r = CliRunner()

    def run(*args, code=0):
        out = r.invoke(cli, list(args), env=env, catch_exceptions=False)
        assert out.exit_code == code, out.output
        return out.output

    assert "routable by hr" in run(
        "source", "declare", "hr", "-d", "bonus pool, salaries", "--groups", "hr"
    )
    listed = json.loads(run("source", "list", "--json"))["sources"]
    assert [s["name"] for s in listed] == ["default"]
    listed = json.loads(run("source", "list", "--groups", "hr", "--json"))["sources"]
    assert [s["name"] for s in listed] == ["default", "hr"] and listed[1]["chunks"] == 1
    a = json.loads(run("ask", TWO_PART, "--agent", "on", "--json"))
    assert a["agent"]["loop"] is True and a["agent"]["steps"] >= 2
    assert not a["abstained"] and "10 hours" in a["answer"]
    text = run("trace", a["trace_id"])
    assert "agent: on" in text and "sub-question 1" in text and "synthesize" in text
    b = json.loads(
        run("ask", "What is the annual bonus pool?", "--agent", "on", "--groups", "hr", "--json")
    )
    assert "4.2 million" in b["answer"] and b["agent"]["sources"] == ["hr"]
    c = json.loads(run("ask", "What is the annual bonus pool?", "--agent", "on", "--json"))
    assert "4.2 million" not in c["answer"]
    run("ask", "x", "--source", "hr", code=2)  # --source needs the agent
    run("source", "remove", "hr")


def test_http_chat_and_mcp(served):
    from ragline.serve.mcp_server import RaglineTools, build_server
    from tests.serve.harness import live_server

    idx, _ = served
    idx.declare_source("hr", "bonus pool, salaries", groups=["hr"])
    key, _ = create_key(idx.db, tenant="default")
    with live_server(idx, upload_dir=Path(tempfile.mkdtemp())) as live:
        with httpx.Client(
            base_url=live.url, headers={"Authorization": f"Bearer {key}"}, timeout=120
        ) as c:
            assert [s["name"] for s in c.get("/v1/sources").json()["sources"]] == ["default"]
            r = c.post("/v1/ask", json={"question": TWO_PART, "agent": "on"})
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["agent"]["loop"] is True and "10 hours" in body["answer"]
            t = c.get(f"/v1/traces/{body['trace_id']}").json()
            kept = [k for s in t["agent"]["steps"] for k in s.get("kept", ())]
            assert kept and all(isinstance(k["chunk_id"], str) for k in kept)  # opaque ids
            r = c.post("/v1/ask", json={"question": "bonus?", "agent": "on", "sources": ["hr"]})
            assert r.status_code == 404 and "no source named 'hr'" in r.text
            models = {m["id"] for m in c.get("/v1/models").json()["data"]}
            assert "ragline-agent" in models
            chat = c.post(
                "/v1/chat/completions",
                json={
                    "model": "ragline-agent",
                    "messages": [{"role": "user", "content": TWO_PART}],
                },
            ).json()
            assert "10 hours" in chat["choices"][0]["message"]["content"]
            t = c.get(f"/v1/traces/{chat['ragline']['trace_id']}").json()
            assert t["agent"]["stop_reason"] in ("enough", "steps", "exhausted")
    tools = RaglineTools(idx, key)
    text, data = tools.research(TWO_PART)
    assert "Research:" in text and data["agent"]["loop"] is True
    assert "research" in {t.name for t in build_server(tools)._tool_manager.list_tools()}
