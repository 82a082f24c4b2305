"""``ragline mcp`` end to end: the official MCP client spawns the server over stdio.

One index (the example documents of tenant acme, a finance-only document and a document
of tenant globex) is shared by the module; each test starts ``ragline mcp`` as a real
subprocess with one API key and checks what its tools return.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import EXAMPLES, make_index

pytestmark = pytest.mark.slow

FINANCE_WORD = "quillfeather"
GLOBEX_WORD = "marzipanova"
X570_QUESTION = "How long does the X-570 battery last on a full charge?"


@pytest.fixture(scope="module")
def corpus(pg_url: str, minilm, tmp_path_factory: pytest.TempPathFactory):
    """An index of three tenants' worth of documents and API keys to read it with."""
    import psycopg

    from ragline.store.keys import create_key

    schema = f"t_mcp_{uuid.uuid4().hex[:10]}"
    docs = tmp_path_factory.mktemp("mcp-docs")
    finance = docs / "q3-budget.md"
    finance.write_text(
        "# Q3 budget\n\nThe finance code word for the third quarter budget review is "
        f"{FINANCE_WORD}. Only the finance team may read this memo.\n"
    )
    globex = docs / "globex-plan.md"
    globex.write_text(
        f"# Globex launch plan\n\nThe Globex launch code word is {GLOBEX_WORD}; it must never "
        "reach another tenant.\n"
    )
    index = make_index(pg_url, schema, embedder=minilm)
    try:
        for paths, tenant, groups in (
            ([EXAMPLES], "acme", None),
            ([finance], "acme", ["finance"]),
            ([globex], "globex", None),
        ):
            report = index.ingest(paths, tenant=tenant, groups=groups)
            assert report.failed == [] and report.chunks > 0
        keys = {
            name: create_key(index.db, tenant=tenant, groups=groups, name=name)[0]
            for name, tenant, groups in (
                ("reader", "acme", None),
                ("finance", "acme", ["finance"]),
                ("revocable", "acme", None),
            )
        }
        env = {"RAGLINE_DATABASE_URL": pg_url, "RAGLINE_DB_SCHEMA": schema}
        yield {"index": index, "keys": keys, "env": env}
    finally:
        index.close()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _session(
    env: dict[str, str],
    body: Callable[[Any], Awaitable[Any]],
    errlog: Path,
    args: tuple[str, ...] = (),
) -> Any:
    """Start ``ragline mcp`` with ``env``, run ``body(session)`` and shut the server down."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ragline.cli.main", "mcp", *args], env=env
    )

    async def main() -> Any:
        with anyio.fail_after(120), errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=90) as session:
                    await session.initialize()
                    return await body(session)

    try:
        return anyio.run(main)
    except BaseException:
        sys.stderr.write(f"--- ragline mcp stderr ---\n{errlog.read_text()}\n")
        raise


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def _hit_texts(result: Any) -> str:
    return "\n".join(h["text"] for h in result.structured_content["hits"])


def test_reader_key_tools(corpus, tmp_path):
    env = {**corpus["env"], "RAGLINE_API_KEY": corpus["keys"]["reader"]}

    async def body(session: Any) -> dict[str, Any]:
        listed = await session.list_tools()
        out: dict[str, Any] = {"tools": {t.name: t for t in listed.tools}}
        out["ask"] = await session.call_tool("ask", {"question": X570_QUESTION})
        out["search"] = await session.call_tool("search", {"query": "X-570 battery", "k": 3})
        out["finance"] = await session.call_tool("search", {"query": FINANCE_WORD, "k": 50})
        out["globex"] = await session.call_tool("search", {"query": GLOBEX_WORD, "k": 50})
        out["globex_ask"] = await session.call_tool(
            "ask", {"question": f"What is the Globex launch code word {GLOBEX_WORD}?"}
        )
        out["empty"] = await session.call_tool("search", {"query": "  "})
        out["too_many"] = await session.call_tool("search", {"query": "battery", "k": 500})
        out["filtered"] = await session.call_tool(
            "search", {"query": "battery", "filters": {"type": "txt"}}
        )
        out["typo"] = await session.call_tool(
            "ask", {"question": X570_QUESTION, "filters": {"langauge": "en"}}
        )
        return out

    out = _session(env, body, tmp_path / "stderr.log")

    tools = out["tools"]
    assert set(tools) == {"search", "ask", "research"}
    for tool in tools.values():
        assert len(tool.description) > 100 and tool.output_schema is not None
        assert tool.annotations.read_only_hint is True
    assert tools["search"].input_schema["required"] == ["query"]
    assert tools["search"].input_schema["properties"]["k"]["maximum"] == 50
    assert tools["ask"].input_schema["required"] == ["question"]

    ask = out["ask"]
    assert not ask.is_error
    data = ask.structured_content
    assert not data["abstained"] and "10 hours" in data["answer"]
    assert re.search(r"\[\d+\]", data["answer"])
    assert data["citations"] and data["citations"][0]["source"].endswith("x570-user-manual.md")
    text = _text(ask)
    assert "10 hours" in text and "Sources:" in text
    assert re.search(r"^\[1\] X-570 Warehouse Robot User Manual.*x570-user-manual\.md", text, re.M)

    search = out["search"]
    assert not search.is_error and 1 <= len(search.structured_content["hits"]) <= 3
    first = search.structured_content["hits"][0]
    assert {"rank", "score", "title", "source", "heading_path", "text"} <= set(first)
    assert _text(search).splitlines()[2].startswith("[1] ")
    assert first["text"].strip()[:40] in _text(search)

    for name, word in (("finance", FINANCE_WORD), ("globex", GLOBEX_WORD)):
        result = out[name]
        assert not result.is_error
        passages = _text(result).split("\n", 1)[1]  # the first line repeats the query
        assert word not in _hit_texts(result).lower() and word not in passages.lower()
    globex_ask = out["globex_ask"]
    assert not globex_ask.is_error
    assert GLOBEX_WORD not in " ".join(
        str(c.get("text")) + c["quote"] for c in globex_ask.structured_content["citations"]
    )

    empty = out["empty"]
    assert empty.is_error and "query is empty" in _text(empty)
    assert out["too_many"].is_error and "k" in _text(out["too_many"])
    filtered = out["filtered"]
    assert not filtered.is_error and filtered.structured_content["hits"]
    assert all(h["source"].endswith(".txt") for h in filtered.structured_content["hits"])
    assert "tenant acme" in (tmp_path / "stderr.log").read_text()
    typo = out["typo"]
    assert typo.is_error and "unknown filter key 'langauge'; known keys: language" in _text(typo)


def test_group_and_tenant_boundaries(corpus, tmp_path):
    index = corpus["index"]  # the words are findable at all: for their own readers
    assert any(
        FINANCE_WORD in h.text
        for h in index.search(FINANCE_WORD, tenant="acme", groups=["finance"])
    )
    assert any(GLOBEX_WORD in h.text for h in index.search(GLOBEX_WORD, tenant="globex"))

    key_file = tmp_path / "key"
    key_file.write_text(corpus["keys"]["finance"] + "\n")
    env = dict(corpus["env"])  # the key comes from the file

    async def body(session: Any) -> tuple[Any, Any]:
        finance = await session.call_tool("search", {"query": FINANCE_WORD, "k": 5})
        globex = await session.call_tool("search", {"query": GLOBEX_WORD, "k": 50})
        return finance, globex

    finance, globex = _session(
        env, body, tmp_path / "stderr.log", ("--api-key-file", str(key_file))
    )
    assert not finance.is_error
    top = finance.structured_content["hits"][0]
    assert FINANCE_WORD in top["text"] and top["source"].endswith("q3-budget.md")
    assert FINANCE_WORD in _text(finance)
    assert GLOBEX_WORD not in _hit_texts(globex).lower()


def test_revoked_key_stops_answering(corpus, tmp_path):
    from ragline.store.keys import list_keys, revoke_key

    env = {**corpus["env"], "RAGLINE_API_KEY": corpus["keys"]["revocable"]}
    db = corpus["index"].db

    async def body(session: Any) -> tuple[Any, Any]:
        before = await session.call_tool("search", {"query": "travel per diem", "k": 2})
        (rec,) = [k for k in list_keys(db, "acme") if k.name == "revocable"]
        assert revoke_key(db, rec.id)
        after = await session.call_tool("ask", {"question": X570_QUESTION})
        return before, after

    before, after = _session(env, body, tmp_path / "stderr.log")
    assert not before.is_error and before.structured_content["hits"]
    assert after.is_error and "no longer valid" in _text(after)


@pytest.mark.parametrize(
    "key, message",
    [("rl_not-a-real-key", "invalid or revoked"), (None, "no API key")],
)
def test_bad_key_exits_before_serving(corpus, key, message):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLINE_")}
    env.update(corpus["env"])
    if key is not None:
        env["RAGLINE_API_KEY"] = key
    res = subprocess.run(
        [sys.executable, "-m", "ragline.cli.main", "mcp"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert res.returncode != 0
    assert message in res.stderr and res.stdout == ""


def test_server_started_on_an_empty_index_sees_the_first_ingest(pg_url, schema, minilm):
    """In process: an empty index abstains; after another process ingests, the tools
    reopen it (the embedder of an empty collection is only chosen by its first ingest)."""
    from ragline.serve.mcp_server import RaglineTools, format_answer
    from ragline.store.keys import create_key

    empty = make_index(pg_url, schema)  # embedder "auto", no collection yet
    key, _ = create_key(empty.db, tenant="acme")
    tools = RaglineTools(empty, key)
    try:
        text, data = tools.ask(X570_QUESTION)
        assert data["abstained"] and data["notes"] == ["nothing has been ingested yet"]
        assert "Note: nothing has been ingested yet" in text
        assert tools.search("battery")[1]["hits"] == []

        writer = make_index(pg_url, schema, embedder=minilm)
        writer.ingest([EXAMPLES / "x570-user-manual.md"], tenant="acme")
        writer.close()

        text, data = tools.ask(X570_QUESTION)
        assert not data["abstained"] and "10 hours" in text
        assert text == format_answer(data) and data["answer"] in text
        assert [c["source"] for c in data["citations"]] == ["x570-user-manual.md"]  # no path
        assert tools.search("battery", 2)[1]["hits"][0]["source"].endswith("x570-user-manual.md")
    finally:
        tools.close()
        empty.close()
