"""Index.research on a real PostgreSQL: sources and permission-filtered routing, agent
modes, the stored trace of every step."""

from __future__ import annotations

import pytest

from ragline.agent import Budget
from ragline.core.errors import ConfigError, NotFoundError
from ragline.ingest.sources import text_source
from tests.agent.helpers import CORPUS
from tests.conftest import make_index
from tests.fakes import FakeEmbedder


@pytest.fixture()
def world(pg_url, schema):
    """Collection 'default' (wiki passages), collection 'hr' (restricted to group hr)
    declared a source for group hr, collection 'manuals' declared a source for everyone,
    with one of its documents restricted to group ops."""
    emb = FakeEmbedder()
    main = make_index(pg_url, schema, embedder=emb)
    main.ingest_sources([text_source(f"wiki/{t}", t, x) for t, x in CORPUS["wiki"]])
    hr = make_index(pg_url, schema, embedder=emb, collection="hr")
    hr.ingest_sources(
        [
            text_source(
                "hr/salary",
                "Salaries",
                "The salary of the chief executive is 900,000 euros per year.",
            )
        ],
        groups=["hr"],
    )
    man = make_index(pg_url, schema, embedder=emb, collection="manuals")
    man.ingest_sources([text_source(f"manuals/{t}", t, x) for t, x in CORPUS["manuals"]])
    man.ingest_sources(
        [text_source("manuals/vault", "Vault", "The vault code for the garage is 7341.")],
        groups=["ops"],
    )
    main.declare_source("hr", "human resources: salaries, contracts, leave", groups=["hr"])
    main.declare_source("manuals", "product manuals: error codes, charging, parking garage")
    yield main
    for i in (main, hr, man):
        i.close()


def test_sources_lists_only_what_the_caller_may_route_to(world):
    names = [s["name"] for s in world.sources()]
    assert names == ["default", "manuals"]
    assert [s["name"] for s in world.sources(groups="hr")] == ["default", "hr", "manuals"]


def test_a_source_the_caller_may_not_read_is_refused_by_name(world):
    with pytest.raises(NotFoundError, match="no source named 'hr'"):
        world.research("What is the salary of the chief executive?", sources=["hr"])


def test_routing_never_reaches_a_forbidden_source_and_documents_keep_their_acl(world):
    a = world.research("What is the salary of the chief executive?", trace=True)
    assert all("hr/" not in h.doc_key for h in a.hits)
    t = world.trace(a.trace_id)
    searched = {s["source"] for s in t["agent"]["steps"] if s["kind"] == "search"}
    assert "hr" not in searched
    b = world.research("What is the salary of the chief executive?", groups="hr", trace=True)
    assert not b.abstained and "900,000" in b.text
    assert b.agent["sources"] == ["hr"]
    # the vault passage is in a permitted source, but its document is group ops only
    c = world.research("What is the vault code for the garage?", trace=True)
    assert all(h.doc_key != "manuals/vault" for h in c.hits)
    d = world.research("What is the vault code for the garage?", groups="ops")
    assert "7341" in d.text


def test_agent_modes_and_the_trace_of_every_step(world):
    one = world.research("Who was the first ruler of Normandy?", agent="auto", trace=True)
    assert one.agent["loop"] is False and one.agent["stop_reason"] == "one_shot"
    assert "Rollo" in one.text
    two = world.research(
        "Who was the first ruler of Normandy and where was Chopin born?", agent="auto", trace=True
    )
    assert two.agent["loop"] is True and "2 parts" in two.agent["reason"]
    assert not two.abstained and {"wiki/Rollo", "wiki/Chopin"} <= {c.doc_key for c in two.citations}
    t = world.trace(two.trace_id)
    kinds = [s["kind"] for s in t["agent"]["steps"]]
    assert kinds[0] == "plan" and "search" in kinds and kinds[-1] == "synthesize"
    first = next(s for s in t["agent"]["steps"] if s["kind"] == "search")
    assert first["seeded"] is True  # the one-shot search is the first
    assert t["generation"]["citations_valid"] is True
    # agent off: unrouted until the collection itself is declared a source (the opt-in)
    assert world.ask("Who was the first ruler of Normandy?", agent="off").agent is None
    world.declare_source("default", "history and geography articles")
    # now the caller may read another source: one-shot, routed, traced
    off = world.ask("What does error ERR_4021 mean for charging?", agent="off", trace=True)
    assert off.agent["loop"] is False and off.agent["sources"][0] == "manuals"
    assert "charging contact fault" in off.text
    assert world.trace(off.trace_id)["agent"]["decision"]["route"]["sources"][0] == "manuals"
    world.remove_source("manuals")
    assert world.ask("Who was the first ruler of Normandy?", agent="off").agent is None
    with pytest.raises(ConfigError, match="agent must be one of"):
        world.research("x", agent="maybe")


def test_budget_through_the_index(world):
    a = world.research(
        "Which composer wrote the Minute Waltz while living in Paris and Nohant?",
        budget=Budget(max_steps=2),
    )
    assert a.agent["steps"] <= 2
    assert any("agent stopped" in n for n in a.notes)


def test_purging_a_document_seen_by_the_agent_removes_its_trace(world):
    a = world.research("Where was Chopin born?", trace=True)
    assert world.trace(a.trace_id) is not None
    world.purge("wiki/Chopin", erase=False)
    assert world.trace(a.trace_id) is None


def test_ragline_trace_shows_the_agent_steps(world):
    from ragline.cli.trace_view import render_trace

    a = world.research("Who was the first ruler of Normandy and where was Chopin born?", trace=True)
    out = render_trace(world.trace(a.trace_id))
    assert "agent: on" in out and "plan (heuristic)" in out and "judge (heuristic)" in out
    assert "synthesize" in out


def test_auto_judges_the_one_shot_evidence_as_the_answerer_does(pg_url, schema):
    """agent = auto decides whether to loop on the one-shot answerer's own evidence (the
    collection's stems, accents folded, the embedding), not a lexical judgement of its own:
    an inflected Hungarian question answered one-shot is not researched again."""
    idx = make_index(pg_url, schema, embedder=FakeEmbedder())
    idx.ingest_sources(
        [
            text_source(
                "hu/klima",
                "Klíma karbantartás",
                "A kültéri egység légszűrőjét havonta meg kell tisztítani. "
                "Az E7 hibakód a kompresszor túlmelegedését jelzi.",
                metadata={"language": "hu"},
            ),
            text_source("en/pump", "Pump", "The pump filter is cleaned every week."),
        ]
    )
    for q in (
        "Milyen gyakran kell tisztítani a kültéri egység légszűrőjét?",
        "Mit jelez az E7 hibakod?",
        "How often is the pump filter cleaned?",
    ):
        one = idx.ask(q, agent="off")
        auto = idx.ask(q, agent="auto")
        assert auto.agent["one_shot_evidence"] == round(one.evidence, 4), q
        if not one.abstained:
            assert auto.agent["loop"] is False and auto.text == one.text, q
    idx.close()
