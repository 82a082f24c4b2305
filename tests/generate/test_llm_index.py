"""The LLM path through the index and the CLI: ask, streaming, query techniques."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ragline.cli.main import cli
from ragline.core.types import Answer
from ragline.ingest.sources import text_source
from tests.conftest import make_index
from tests.fakes import FakeChatServer, FakeEmbedder

DOCS = {
    "travel": "Travel on council business by private car is reimbursed at 45 pence per mile.",
    "salary": "Salaries are paid on the 28th of each month by bank transfer.",
    "filter": "Clean the magnetic filter under the cylinder every six months.",
}


def _script(messages):
    """A tiny deterministic 'model': answers the question techniques and the final prompt."""
    system = messages[0]["content"]
    user = messages[-1]["content"]
    if system.startswith("Rewrite the user's last question"):
        return "How much is the mileage allowance for a private car?"
    if system.startswith("Write 3 different search queries"):
        return "1. private car mileage rate\n2. pence per mile car travel\n3. car reimbursement"
    if system.startswith("If the question asks for several"):
        return "When are salaries paid?\nHow often is the magnetic filter cleaned?"
    if system.startswith("Write a short factual passage"):
        return "Staff driving their own car are reimbursed per mile."
    if "mileage" in user or "per mile" in user:
        return "Private car travel is reimbursed at 45 pence per mile [1]."
    return "The sources do not contain enough information to answer this question."


def _index(pg_url, schema, srv, **settings):
    idx = make_index(
        pg_url, schema, embedder=FakeEmbedder(), generator=f"openai:tiny@{srv.root}", **settings
    )
    idx.ingest_sources([text_source(k, k.title(), v) for k, v in DOCS.items()])
    return idx


def test_ask_with_history_rewrites_then_answers_with_checked_citations(pg_url, schema):
    with FakeChatServer(_script) as srv:
        idx = _index(pg_url, schema, srv)
        history = [
            {"role": "user", "content": "Can I use my own car for council trips?"},
            {"role": "assistant", "content": "Yes, private cars may be used."},
        ]
        a = idx.ask("and how much is that?", history=history)
        assert not a.abstained and a.generator == "openai:tiny"
        assert a.text == "Private car travel is reimbursed at 45 pence per mile [1]."
        assert a.citations[0].doc_key == "travel" and a.grounded_ratio == 1.0
        assert a.question == "and how much is that?"
        res = idx.search_result("and how much is that?", history=history)
        assert res.plan.question.startswith("How much is the mileage allowance")
        assert res.plan.techniques["rewrite"] == res.plan.question
        prompt = srv.requests[1]["body"]["messages"]
        assert [m["role"] for m in prompt] == ["system", "user", "assistant", "user"]
        idx.close()


def test_multi_query_decompose_and_hyde_are_switchable_and_recorded(pg_url, schema):
    with FakeChatServer(_script) as srv:
        idx = _index(pg_url, schema, srv, multi_query=True, decompose=True, hyde=True)
        res = idx.search_result("When are salaries paid and how often is the filter cleaned?", k=5)
        plan = res.plan
        assert set(plan.techniques) == {"multi_query", "decompose", "hyde"}
        assert "When are salaries paid?" in plan.queries and len(plan.queries) == 6
        assert plan.hyde.startswith("Staff driving")
        keys = {h.doc_key for h in res.hits}
        assert {"salary", "filter"} <= keys  # both halves of the compound question found
        assert all("queries" in h.scores for h in res.hits)  # fused across the queries
        assert [h.rank for h in res.hits] == list(range(1, len(res.hits) + 1))
        off = idx.search_result(
            "When are salaries paid?",
            techniques={"multi_query": False, "decompose": False, "hyde": False},
        )
        assert off.plan.queries == ("When are salaries paid?",) and not off.plan.techniques
        idx.close()


def test_techniques_without_a_generator_are_noops_with_a_note(pg_url, schema):
    idx = make_index(pg_url, schema, embedder=FakeEmbedder(), multi_query=True, hyde=True)
    idx.ingest_sources([text_source(k, k.title(), v) for k, v in DOCS.items()])
    res = idx.search_result("When are salaries paid?")
    assert res.plan.queries == ("When are salaries paid?",)
    assert "no generator is configured" in res.plan.notes[0]
    a = idx.ask("When are salaries paid?")
    assert a.generator == "extractive" and any("no generator" in n for n in a.notes)
    items = list(idx.ask_stream("When are salaries paid?"))
    assert isinstance(items[-1], Answer) and items[0] == items[-1].text
    idx.close()


def test_cli_ask_streams_and_prints_sources(pg_url, schema):
    # the collection is built with the fake embedder; the CLI reopens it with the same one
    # (registered as a backend in conftest)
    with FakeChatServer(_script) as srv:
        _index(pg_url, schema, srv).close()
        env = {"RAGLINE_DATABASE_URL": pg_url, "RAGLINE_DB_SCHEMA": schema, "RAGLINE_DATA_DIR": ""}
        args = [
            "ask",
            "How much is the mileage rate per mile for a private car?",
            "--generator",
            f"openai:tiny@{srv.root}",
        ]
        runner = CliRunner()
        res = runner.invoke(cli, [*args, "--stream"], env=env, catch_exceptions=False)
        assert res.exit_code == 0, res.output
        assert "45 pence per mile [1]" in res.output and "Sources:" in res.output
        assert "grounded: 100%" in res.output
        assert srv.requests[-1]["body"]["stream"] is True
        res = runner.invoke(cli, [*args, "--json"], env=env, catch_exceptions=False)
        out = json.loads(res.output)
        assert out["grounded_ratio"] == 1.0 and out["claims"][0]["supported"] is True
        assert out["generator"] == "openai:tiny"
