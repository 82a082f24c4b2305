"""``eval --explain``: each missed gold item is blamed on the stage that lost it.

Unit tests of the pure classifier on hand-made traces, then a real index (PostgreSQL,
real legs, stored traces) with one stage broken at a time: that stage gets the blame.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from pathlib import Path

import pytest

from ragline.evaluate.explain import (
    CATEGORIES,
    IGNORED,
    NOT_CHUNKED,
    NOT_RETRIEVED,
    RANKED_OUT,
    GoldItem,
    Miss,
    best_ranks,
    classify,
    explain_answer,
    explain_retrieval,
    found_in_top_k,
    render_summary,
    summarize,
)
from ragline.evaluate.metrics import recall_at_k


def _trace(legs=None, hits=(), fused=None, context=None, reranked=None) -> dict:
    """A trace as :mod:`ragline.core.trace` shapes it; ``hits`` are (chunk id, doc key)."""

    def ranked(ids):
        return [{"rank": i, "chunk_id": c, "score": 1.0 / i} for i, c in enumerate(ids, 1)]

    t: dict = {
        "id": "tr_test",
        "legs": {name: ranked(ids) for name, ids in (legs or {}).items()},
        "fused": ranked(fused or []),
        "reranked": ranked(reranked) if reranked is not None else None,
        "hits": [
            {"rank": i, "chunk_id": c, "document_id": 0, "doc_key": d, "score": 0.5}
            for i, (c, d) in enumerate(hits, 1)
        ],
    }
    if context is not None:
        t["context"] = {
            "passages": [
                {"chunk_id": c, "document_id": 0, "doc_key": "x", "merged_chunks": list(m)}
                for c, m in context
            ]
        }
    return t


# ---------------------------------------------------------------- classify
def test_each_retrieval_category():
    t = _trace(legs={"bm25": [1, 2], "vector": [3]}, hits=[(1, "a")])
    assert classify(t, []) == NOT_CHUNKED
    assert classify(t, [9]) == NOT_RETRIEVED
    assert classify(t, [2]) == RANKED_OUT  # a bm25 candidate only
    assert classify(t, [3, 9]) == RANKED_OUT  # one of its chunks is enough
    # a final hit no leg lists (multi-query fusion keeps the first query's legs) was retrieved
    assert classify(_trace(legs={"bm25": [1]}, hits=[(7, "a")]), [7]) == RANKED_OUT
    assert classify(_trace(reranked=[5]), [5]) == RANKED_OUT


def test_empty_legs_and_missing_lists():
    for t in (_trace(), _trace(legs={"bm25": [], "vector": []}), {"id": "bare"}):
        assert classify(t, [1]) == NOT_RETRIEVED
        assert classify(t, []) == NOT_CHUNKED
        assert found_in_top_k(t, [GoldItem("d", frozenset({1}), "d")], 10) == set()
        assert best_ranks(t, {1}) == {}
    misses = explain_retrieval(
        "q", _trace(legs={"bm25": []}), [GoldItem("d", frozenset({1}), "d")], 5
    )
    assert [m.category for m in misses] == [NOT_RETRIEVED]


def test_answer_categories():
    t = _trace(
        legs={"bm25": [1, 2, 3], "vector": [4]},
        hits=[(1, "a"), (2, "b"), (3, "c")],
        context=[(1, ()), (2, (20, 21))],
    )
    g = lambda *c: GoldItem("p", frozenset(c), "p")  # noqa: E731
    assert explain_answer("q", t, g(1), correct=True) is None
    assert explain_answer("q", t, g(), correct=False).category == NOT_CHUNKED
    assert explain_answer("q", t, g(1), correct=False).category == IGNORED
    assert explain_answer("q", t, g(21), correct=False).category == IGNORED  # merged neighbour
    assert explain_answer("q", t, g(3), correct=False).category == RANKED_OUT  # not packed
    assert explain_answer("q", t, g(4), correct=False).category == RANKED_OUT
    assert explain_answer("q", t, g(99), correct=False).category == NOT_RETRIEVED
    # a retrieval explanation never blames the generator
    assert classify(t, [1]) == RANKED_OUT


# ---------------------------------------------------------------- top k as the metric sees it
def test_document_top_k_counts_distinct_documents():
    t = _trace(
        legs={"bm25": [1, 2, 5, 7], "vector": [4, 1]},
        hits=[(1, "a"), (2, "a"), (5, "e"), (4, "b")],
    )
    gold = [
        GoldItem("a", frozenset({1, 2}), "a"),
        GoldItem("b", frozenset({4}), "b"),
        GoldItem("c", frozenset({30}), "c"),
        GoldItem("d", frozenset(), "d"),
        GoldItem("g", frozenset({7}), "g"),
    ]
    assert found_in_top_k(t, gold, 2) == {"a"}  # a, e: the second chunk of a is no new doc
    assert found_in_top_k(t, gold, 3) == {"a", "b"}
    misses = {m.item: m for m in explain_retrieval("q1", t, gold, 2)}
    assert {i: m.category for i, m in misses.items()} == {
        "b": RANKED_OUT,
        "c": NOT_RETRIEVED,
        "d": NOT_CHUNKED,
        "g": RANKED_OUT,
    }
    assert misses["b"].ranks == {"vector": 1} and misses["g"].ranks == {"bm25": 4}
    assert misses["b"].trace_id == "tr_test" and misses["b"].query_id == "q1"


def test_ties_follow_the_trace_ranks_not_the_scores():
    t = _trace(legs={"bm25": [1, 2]}, hits=[(1, "a"), (2, "b")])
    for h in t["hits"]:
        h["score"] = 0.5  # tied: the rank the pipeline gave decides
    t["hits"].reverse()  # listed out of order
    gold = [GoldItem("a", frozenset({1}), "a"), GoldItem("b", frozenset({2}), "b")]
    assert found_in_top_k(t, gold, 1) == {"a"}
    assert [m.item for m in explain_retrieval("q", t, gold, 1)] == ["b"]


def test_chunk_top_k_counts_a_chunk_for_its_first_quote():
    """As golden._judge: a chunk holding quotes 0 and 1 counts for quote 0 only; repeats
    of one quote take one place of the top k."""
    t = _trace(legs={"bm25": [5, 6, 8]}, hits=[(5, "x"), (6, "x"), (8, "y")])
    gold = [GoldItem("quote0", frozenset({5, 6})), GoldItem("quote1", frozenset({5}))]
    assert found_in_top_k(t, gold, 1, unit="chunk") == {"quote0"}
    assert found_in_top_k(t, gold, 10, unit="chunk") == {"quote0"}
    [miss] = explain_retrieval("q", t, gold, 10, unit="chunk")
    assert miss.item == "quote1" and miss.category == RANKED_OUT
    gold2 = [GoldItem("quote0", frozenset({5, 6})), GoldItem("quote1", frozenset({8}))]
    assert found_in_top_k(t, gold2, 2, unit="chunk") == {"quote0", "quote1"}  # 5,6 = 1 place


def test_bad_arguments():
    with pytest.raises(ValueError, match="k must be"):
        found_in_top_k(_trace(), [], 0)
    with pytest.raises(ValueError, match="unit"):
        found_in_top_k(_trace(), [], 3, unit="page")
    with pytest.raises(ValueError, match="unknown categories"):
        summarize([Miss("q", "d", "lost-in-space")], gold_items=1)


def test_misses_are_exactly_what_recall_does_not_find():
    """Checked against the metric: on random rankings, the explained misses are the
    relevant documents recall@k does not count."""
    rnd = random.Random(7)
    for _ in range(200):
        docs = [f"d{i}" for i in range(12)]
        chunks = {d: [i * 10 + j for j in range(rnd.randint(0, 3))] for i, d in enumerate(docs)}
        order = [c for d in docs for c in chunks[d]]
        rnd.shuffle(order)
        doc_of = {c: d for d, cs in chunks.items() for c in cs}
        hits = [(c, doc_of[c]) for c in order[: rnd.randint(0, len(order))]]
        t = _trace(legs={"bm25": order[: rnd.randint(0, len(order))]}, hits=hits)
        relevant = rnd.sample(docs, rnd.randint(1, 4))
        gold = [GoldItem(d, frozenset(chunks[d]), d) for d in relevant]
        k = rnd.randint(1, 8)
        misses = explain_retrieval("q", t, gold, k)
        ranking = [d for _, d in hits]
        found = recall_at_k(ranking, dict.fromkeys(relevant, 1), k) * len(relevant)
        assert len(misses) == pytest.approx(len(relevant) - found)
        for m in misses:
            assert m.category in CATEGORIES[:3]
            assert (m.category == NOT_CHUNKED) == (not chunks[m.item])


def test_summary_and_table():
    misses = [
        Miss("q1", "d1", NOT_RETRIEVED, "tr_1"),
        Miss("q2", "d2", NOT_RETRIEVED, "tr_2"),
        Miss("q3", "d3", RANKED_OUT, "tr_3", {"bm25": 12}),
    ] + [Miss(f"q{i}", "p", NOT_CHUNKED) for i in range(10, 20)]
    s = summarize(misses, gold_items=40, k=10, examples=3)
    assert s["missed"] == 13 and s["gold_items"] == 40 and s["k"] == 10
    assert [s[c] for c in CATEGORIES] == [10, 2, 1, 0]
    assert sum(s["share"].values()) == pytest.approx(1.0, abs=1e-3)
    assert len(s["examples"][NOT_CHUNKED]) == 3 and s["examples"][IGNORED] == []
    assert s["examples"][RANKED_OUT] == [
        {"query": "q3", "item": "d3", "trace_id": "tr_3", "ranks": {"bm25": 12}}
    ]
    json.dumps(s)  # JSON-ready
    empty = summarize([], gold_items=5, k=10)
    assert empty["missed"] == 0 and set(empty["share"].values()) == {0.0}
    table = render_summary({"bm25": empty, "hybrid": s}, headline="hybrid")
    assert "top 10" in table and "hybrid" in table and "bm25" in table
    assert "10 (76.9%)" in table and "13 / 40" in table
    assert "e.g. not-retrieved: q1 (d1), q2 (d2)" in table
    assert IGNORED not in table  # no generator stage in a retrieval evaluation
    qa = summarize([Miss("q1", "p1", IGNORED)], gold_items=3)
    assert IGNORED in render_summary({"qa": qa}) and "answered wrongly" in render_summary(
        {"qa": qa}
    )


# ---------------------------------------------------------------- a real index, one stage broken
CORPUS = {
    "d1": ("Otters", "Sea otters use stones as tools to crack open shellfish on their bellies."),
    "d2": ("Volcanoes", "Basaltic lava from shield volcanoes flows far before it cools."),
    "d3": ("Bread", "Sourdough bread rises with wild yeast and lactic acid bacteria."),
    "d4": ("Comets", "A comet's tail of gas and dust always points away from the sun."),
    "d5": ("Bees", "Honey bees communicate the direction of flowers with a waggle dance."),
    "d6": ("Glaciers", "Glaciers carve U-shaped valleys as the moving ice grinds rock."),
}
QUERIES = {
    "q1": ("What tools do sea otters use for shellfish?", "d1"),
    "q2": ("How far does basaltic lava from shield volcanoes flow?", "d2"),
    "q3": ("Which yeast makes sourdough bread rise?", "d3"),
    "q4": ("Where does the tail of a comet point?", "d4"),
}


def _beir(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"_id": d, "title": t, "text": x}) + "\n" for d, (t, x) in CORPUS.items()
        )
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, (t, _) in QUERIES.items())
    )
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, (_, d) in QUERIES.items())
    )
    return root


def _by_query(explain: dict) -> dict[str, str]:
    return {e["query"]: c for c, ex in explain["examples"].items() for e in ex}


def test_beir_unbroken_then_not_chunked(fake_index, tmp_path):
    from ragline.evaluate.retrieval import evaluate_beir

    beir = _beir(tmp_path)
    plain = evaluate_beir(fake_index, beir, mode="hybrid", depth=20)
    res = evaluate_beir(fake_index, beir, mode="hybrid", depth=20, explain_k=10)
    assert "explain" not in plain
    assert {m: res[m] for m in ("ndcg@10", "recall@10", "mrr@10")} == {
        m: plain[m] for m in ("ndcg@10", "recall@10", "mrr@10")
    }  # the explain path does not change the numbers
    assert res["explain"]["missed"] == 0 and res["explain"]["gold_items"] == 4
    # break chunking: d2 keeps its document row but loses every chunk
    with fake_index.db.connection() as conn:
        conn.execute(
            "DELETE FROM chunks WHERE document_id = (SELECT id FROM documents WHERE doc_key = %s)",
            ("beir:d2",),
        )
    res = evaluate_beir(fake_index, beir, mode="hybrid", depth=20, explain_k=10)
    ex = res["explain"]
    assert ex[NOT_CHUNKED] == 1 and ex["missed"] == 1 and _by_query(ex) == {"q2": NOT_CHUNKED}
    # the example's trace is stored and holds what the explanation read
    tid = ex["examples"][NOT_CHUNKED][0]["trace_id"]
    trace = fake_index.trace(tid)
    assert trace["eval"]["query_id"] == "q2" and set(trace["legs"]) == {"bm25", "vector"}


def test_beir_broken_legs_are_not_retrieved(fake_index, tmp_path):
    from ragline.evaluate.retrieval import evaluate_beir

    beir = _beir(tmp_path)
    evaluate_beir(fake_index, beir, mode="hybrid", depth=20)  # ingest
    with fake_index.db.connection() as conn:
        hidden = {
            r[0]
            for r in conn.execute(
                "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE d.doc_key = 'beir:d3'"
            )
        }
    target = QUERIES["q3"][0]

    class Dropping:
        """A leg that loses d3's chunks for one query (a broken leg, plugged in)."""

        def __init__(self, leg):
            self.leg, self.name = leg, leg.name

        def candidates(self, query, principal, n, p):
            r = self.leg.candidates(query, principal, n, p)
            if query != target:
                return r
            return replace(r, ranked=[x for x in r.ranked if x[0] not in hidden])

    legs = fake_index.searcher.legs
    for name in ("bm25", "vector"):
        legs[name] = Dropping(legs[name])
    for mode in ("hybrid", "vector"):
        ex = evaluate_beir(fake_index, beir, mode=mode, depth=20, explain_k=10)["explain"]
        assert ex[NOT_RETRIEVED] == 1 and ex["missed"] == 1
        assert _by_query(ex) == {"q3": NOT_RETRIEVED}


def test_beir_broken_fusion_is_ranked_out(fake_index, tmp_path):
    from ragline.evaluate.retrieval import evaluate_beir

    beir = _beir(tmp_path)
    good = evaluate_beir(fake_index, beir, mode="hybrid", depth=20, explain_k=1)
    assert good["explain"][NOT_RETRIEVED] == 0
    fuse = fake_index.searcher.fusion  # a fusion that ranks upside down, injected
    fake_index.searcher.fusion = lambda *a, **kw: list(reversed(fuse(*a, **kw)))
    bad = evaluate_beir(fake_index, beir, mode="hybrid", depth=20, explain_k=1)
    ex = bad["explain"]
    assert ex["missed"] == 4 and ex[RANKED_OUT] == 4  # all still candidates of the legs
    assert bad["mrr@10"] < good["mrr@10"]
    assert all(e["ranks"] for e in ex["examples"][RANKED_OUT])  # where the legs had them


def test_qa_generator_that_ignores_the_context(pg_url, schema, tmp_path):
    from ragline.evaluate.qa import evaluate_qa
    from tests.conftest import make_index
    from tests.fakes import FakeChatServer, FakeEmbedder

    passages = tmp_path / "passages.jsonl"
    passages.write_text(
        "".join(
            json.dumps({"_id": d, "title": t, "text": x}) + "\n" for d, (t, x) in CORPUS.items()
        )
    )
    qa = [
        {"id": "a1", "question": QUERIES["q1"][0], "passage_id": "d1", "answers": ["stones"]},
        {"id": "a2", "question": QUERIES["q3"][0], "passage_id": "d3", "answers": ["wild yeast"]},
        {
            "id": "a3",
            "question": QUERIES["q4"][0],
            "passage_id": "d4",
            "answers": ["away from the sun"],
        },
        # a gold answer its passage does not hold: no chunk can hold it
        {
            "id": "a4",
            "question": "What do glaciers carve?",
            "passage_id": "d6",
            "answers": ["fjords"],
        },
        {"id": "u1", "question": "Who painted the otters?", "passage_id": "d1", "answers": []},
    ]
    questions = tmp_path / "qa.jsonl"
    questions.write_text(
        "".join(json.dumps({**q, "is_impossible": not q["answers"]}) + "\n" for q in qa)
    )
    with FakeChatServer(lambda messages: "Bananas are an excellent source of potassium.") as srv:
        idx = make_index(
            pg_url, schema, embedder=FakeEmbedder(), generator=f"openai:tiny@{srv.root}"
        )
        try:
            res = evaluate_qa(idx, passages, questions, explain=True)
        finally:
            idx.close()
    ex = res["explain"]
    assert res["answer_recall"] == 0.0 and ex["gold_items"] == 4 and ex["missed"] == 4
    assert ex[IGNORED] == 3 and ex[NOT_CHUNKED] == 1
    assert _by_query(ex) == {"a1": IGNORED, "a2": IGNORED, "a3": IGNORED, "a4": NOT_CHUNKED}
    assert ex["k"] is None


# ---------------------------------------------------------------- the CLI
DOCS = {
    "otters.md": "# Otters\n\nSea otters use stones as tools to crack open shellfish.\n\n"
    "They hold hands while sleeping so they do not drift apart.\n",
    "volcanoes.md": "# Volcanoes\n\nBasaltic lava from shield volcanoes flows far before it "
    "cools.\n\nExplosive eruptions come from viscous, gas-rich magma.\n",
    "bread.md": "# Bread\n\nSourdough bread rises with wild yeast and lactic acid bacteria.\n\n"
    "A long cold proof deepens the flavour.\n",
}
GOLDEN = [
    {"id": "g1", "question": "What do sea otters use as tools?",
     "relevant": [{"source": "otters.md", "quote": "use stones as tools"}]},
    {"id": "g2", "question": "Why do otters hold hands?",
     "relevant": [{"source": "otters.md", "quote": "so they do not drift apart"}]},
    {"id": "g3", "question": "What makes sourdough rise?",
     "relevant": [{"source": "bread.md", "quote": "wild yeast and lactic acid bacteria"}]},
    # the quote is in no document: a chunking (here: labelling) failure
    {"id": "g4", "question": "Where does basaltic lava flow?",
     "relevant": [{"source": "volcanoes.md", "quote": "lava flows uphill at night"}]},
]  # fmt: skip


def _golden(tmp_path: Path) -> list[str]:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in GOLDEN))
    return ["eval", "golden", "--docs", str(docs), "--questions", str(questions)]


def test_cli_eval_golden_explain(run, tmp_path):
    args = _golden(tmp_path)
    plain = json.loads(run(*args, "--json").output)
    out = json.loads(run(*args, "--explain", "--json").output)
    assert "explain" not in plain and plain["recall@10"] == out["recall@10"]
    ex = out["explain"]
    assert set(ex) >= {*CATEGORIES, "examples", "missed", "gold_items", "k", "share"}
    assert ex["k"] == 10 and ex["gold_items"] == 4
    assert ex[NOT_CHUNKED] == 1 and ex["examples"][NOT_CHUNKED][0]["query"] == "g4"
    assert ex["missed"] == sum(ex[c] for c in CATEGORIES) == 1  # 3 docs: the rest is in the top 10
    assert ex == out["stages"]["hybrid"]["explain"]
    assert all(out["stages"][s]["explain"][NOT_CHUNKED] == 1 for s in ("bm25", "vector"))
    # at k = 1 the quote ranked second is ranked out, never "not retrieved" (the vector leg
    # ranks every chunk of three documents)
    one = json.loads(run(*args, "--explain", "--explain-k", "1", "--json").output)["explain"]
    assert one["k"] == 1 and one[NOT_RETRIEVED] == 0
    assert one["missed"] == one[NOT_CHUNKED] + one[RANKED_OUT] and one[NOT_CHUNKED] == 1
    table = run(*args, "--explain").output
    assert "explain: gold items not in the top 10" in table
    assert "not-chunked" in table and "e.g. not-chunked: g4 (quote0)" in table
    # --index-version: 1 is the collection itself until versions exist; others must exist
    v1 = json.loads(run(*args, "--index-version", "1", "--json").output)
    assert v1["recall@10"] == plain["recall@10"]
    res = run(*args, "--index-version", "2", code=1)
    assert "no index version 2" in res.output


def test_cli_eval_index_version_pins_that_version(run, tmp_path):
    args = _golden(tmp_path)
    assert json.loads(run(*args, "--json").output)["chunker"].startswith("section")
    built = json.loads(
        run("--collection", "golden-docs", "index", "build", "--chunking", "fixed", "--json").output
    )
    assert built["version"] == 2
    v2 = json.loads(run(*args, "--index-version", "2", "--explain", "--json").output)
    assert v2["chunker"].startswith("fixed") and v2["explain"][NOT_CHUNKED] == 1
    run("--collection", "golden-docs", "index", "activate", "2")
    # version 1 stays version 1 although version 2 now answers the collection's queries
    v1 = json.loads(run(*args, "--index-version", "1", "--json").output)
    assert v1["chunker"].startswith("section")
    assert json.loads(run(*args, "--json").output)["chunker"].startswith("fixed")
    res = run(*args, "--index-version", "3", code=1)
    assert "no index version 3" in res.output and "1, 2" in res.output


def test_cli_eval_retrieval_explain_every_mode(run, tmp_path):
    args = ["eval", "retrieval", "--beir", str(_beir(tmp_path)), "--mode", "all", "--explain"]
    out = json.loads(run(*args, "--explain-k", "1", "--json").output)
    assert set(out["stages"]) == {"bm25", "vector", "hybrid"}
    assert out["explain"] == out["stages"]["hybrid"]["explain"]
    for m in ("bm25", "vector", "hybrid"):
        ex = out["stages"][m]["explain"]
        assert ex["k"] == 1 and ex["gold_items"] == 4 and ex[NOT_CHUNKED] == 0
        assert ex["missed"] == ex[NOT_RETRIEVED] + ex[RANKED_OUT]
    assert out["stages"]["vector"]["explain"][NOT_RETRIEVED] == 0  # it ranks every chunk
    table = run(*args).output
    assert re.search(r"explain: gold items not in the top 10", table)
    assert re.search(r"stage\s+bm25\s+vector\s+hybrid", table)


def test_qa_gold_chunks_find_answers_glued_to_punctuation():
    from ragline.evaluate.qa import gold_chunks

    chunks = [
        (1, "Before Rollo's arrival, its populations did not differ."),
        (2, "Families, today mostly Afrikaans-speaking, have French surnames."),
        (3, "The Normans  settled in   Normandy."),
        (4, "Nothing relevant here."),
    ]
    assert gold_chunks(chunks, ["Rollo"]) == {1}
    assert gold_chunks(chunks, ["Afrikaans"]) == {2}
    assert gold_chunks(chunks, ["the normans settled in Normandy"]) == {3}
    assert gold_chunks(chunks, ["Vikings"]) == frozenset()
    assert gold_chunks(chunks, []) == frozenset()
