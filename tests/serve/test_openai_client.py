"""The official ``openai`` Python client against ragline's OpenAI-compatible endpoint."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from tests.conftest import EXAMPLES, make_index
from tests.fakes import FakeChatServer, FakeEmbedder
from tests.serve.conftest import add_keys, own_schema
from tests.serve.harness import Live, live_server

BATTERY = "How long does the X-570 battery last on a full charge?"


def _client(live: Live, who: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=live.url + "/v1", api_key=live.keys[who], max_retries=0)


def test_chat_completion_is_a_cited_answer(served):
    resp = _client(served, "reader").chat.completions.create(
        model="ragline", messages=[{"role": "user", "content": BATTERY}]
    )
    assert resp.object == "chat.completion" and resp.model == "ragline"
    msg = resp.choices[0].message
    assert msg.role == "assistant" and resp.choices[0].finish_reason == "stop"
    assert "10 hours" in msg.content and "[1]" in msg.content
    # the readable "Sources" footer and the structured citations name the same document
    assert "\n\nSources:\n[1] X-570 Warehouse Robot User Manual" in msg.content
    extra = resp.model_extra or {}
    cites = extra["citations"]
    assert cites[0]["number"] == 1 and cites[0]["title"] == "X-570 Warehouse Robot User Manual"
    assert "10 hours" in cites[0]["text"] and cites[0]["heading_path"]
    assert extra["ragline"]["abstained"] is False
    assert extra["ragline"]["trace_id"].startswith("tr_")
    assert resp.usage.completion_tokens > 0
    assert resp.to_dict()["citations"] == cites


def test_chat_completion_streams_chunks_then_citations(served):
    stream = _client(served, "reader").chat.completions.create(
        model="ragline", messages=[{"role": "user", "content": BATTERY}], stream=True
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert "10 hours" in text and "[1]" in text
    assert "Sources:\n[1] X-570 Warehouse Robot User Manual" in text
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    cites = (last.model_extra or {})["citations"]
    assert cites and cites[0]["title"] == "X-570 Warehouse Robot User Manual"
    assert [c.choices[0].finish_reason for c in chunks[:-1]] == [None] * (len(chunks) - 1)


def test_an_unanswerable_question_abstains_without_sources(served):
    resp = _client(served, "reader").chat.completions.create(
        model="ragline",
        messages=[{"role": "user", "content": "Who won the 1954 chess olympiad in Amsterdam?"}],
    )
    assert "not contain enough information" in resp.choices[0].message.content
    assert "Sources:" not in resp.choices[0].message.content
    assert resp.model_extra["citations"] == [] and resp.model_extra["ragline"]["abstained"]


def test_models_list_includes_ragline(served):
    ids = [m.id for m in _client(served, "reader").models.list()]
    assert "ragline" in ids and "default" in ids


def test_a_bad_key_is_an_authentication_error(served):
    bad = openai.OpenAI(base_url=served.url + "/v1", api_key="rl_not-a-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as err:
        bad.chat.completions.create(model="ragline", messages=[{"role": "user", "content": "hi"}])
    assert err.value.status_code == 401 and "invalid or revoked" in err.value.message
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()


def test_an_unknown_model_is_not_found(served):
    with pytest.raises(openai.NotFoundError) as err:
        _client(served, "reader").chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": BATTERY}]
        )
    assert "does not exist" in err.value.message and "ragline" in err.value.message


def test_a_conversation_without_a_user_turn_is_a_bad_request(served):
    with pytest.raises(openai.BadRequestError) as err:
        _client(served, "reader").chat.completions.create(
            model="ragline", messages=[{"role": "system", "content": "be brief"}]
        )
    assert "user message" in err.value.message


def test_the_callers_permissions_apply(served):
    q = [{"role": "user", "content": "What is the confidential salary band for a senior engineer?"}]
    hr = _client(served, "hr").chat.completions.create(model="ragline", messages=q)
    assert "S7" in hr.choices[0].message.content
    assert hr.model_extra["citations"][0]["title"] == "Salary Bands"
    for who in ("reader", "globex_reader"):
        other = _client(served, who).chat.completions.create(model="ragline", messages=q)
        assert "S7" not in other.choices[0].message.content
        assert all(c["title"] != "Salary Bands" for c in other.model_extra["citations"])


# -- follow-up questions: an LLM generator rewrites them with the history --------------------

STANDALONE = "How long does the X-570 battery last on a full charge?"


def _model(messages: list[dict]) -> str:
    """A tiny deterministic 'model': rewrites follow-ups, answers from the passages."""
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("Rewrite the user's last question"):
        return STANDALONE
    if "battery" in user and "10 hours" in user:
        return "A fully charged X-570 runs for up to 10 hours of continuous operation [1]."
    if "X-570" in user and "warehouse" in user.lower():
        return "The X-570 is an autonomous warehouse robot made by Northwind Robotics [1]."
    return "The sources do not contain enough information to answer this question."


@pytest.fixture(scope="module")
def llm_served(pg_url) -> Iterator[tuple[Live, FakeChatServer]]:
    with FakeChatServer(_model) as llm, own_schema(pg_url) as schema:
        idx = make_index(
            pg_url, schema, embedder=FakeEmbedder(), generator=f"openai:tiny@{llm.root}"
        )
        idx.ingest(EXAMPLES / "x570-user-manual.md", tenant="acme")
        with live_server(idx, upload_dir=Path(tempfile.mkdtemp())) as live:
            add_keys(live, {"reader": {"tenant": "acme"}})
            yield live, llm
        idx.close()


def test_a_follow_up_question_uses_the_conversation(llm_served):
    live, llm = llm_served
    client = _client(live, "reader")
    first = client.chat.completions.create(
        model="ragline", messages=[{"role": "user", "content": "What is the X-570?"}]
    )
    answer1 = first.choices[0].message.content
    assert "warehouse robot" in answer1 and "Sources:" in answer1
    before = len(llm.requests)
    second = client.chat.completions.create(
        model="ragline",
        messages=[
            {"role": "user", "content": "What is the X-570?"},
            {"role": "assistant", "content": answer1},
            {"role": "user", "content": "And how long does its battery last?"},
        ],
    )
    content = second.choices[0].message.content
    assert "10 hours" in content and "[1]" in content
    assert second.model_extra["citations"][0]["title"] == "X-570 Warehouse Robot User Manual"
    # the rewrite saw both earlier turns, without our "Sources" footer
    rewrite = llm.requests[before]["body"]["messages"]
    assert rewrite[0]["content"].startswith("Rewrite the user's last question")
    convo = rewrite[-1]["content"]
    assert "user: What is the X-570?" in convo and "autonomous warehouse robot" in convo
    assert "Sources:" not in convo and "And how long does its battery last?" in convo
    # the answer prompt carries the history as turns
    roles = [m["role"] for m in llm.requests[before + 1]["body"]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    # streaming the same conversation gives the same answer
    chunks = list(
        client.chat.completions.create(
            model="ragline",
            messages=[
                {"role": "user", "content": "What is the X-570?"},
                {"role": "assistant", "content": answer1},
                {"role": "user", "content": "And how long does its battery last?"},
            ],
            stream=True,
        )
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert re.sub(r"\s+", " ", streamed).strip() == re.sub(r"\s+", " ", content).strip()
