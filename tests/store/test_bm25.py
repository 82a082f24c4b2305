"""BM25 in SQL equals an independent computation (and bm25s) to 1e-6, tenant-scoped."""

from __future__ import annotations

import json
import math
import random
from collections import Counter

import pytest

from ragline.core.types import Principal
from ragline.ingest.sources import text_source
from ragline.store.search import bm25_search

WORDS = (
    "protein cell gene expression cancer tumor immune response mouse model receptor binding "
    "signal pathway kinase mutation therapy drug trial patient risk blood pressure heart "
    "insulin glucose diabetes obesity brain neuron memory sleep virus infection vaccine"
).split()


def _docs(rng: random.Random, n: int, prefix: str) -> list[tuple[str, str, str]]:
    out = []
    for i in range(n):
        title = " ".join(rng.choices(WORDS, k=rng.randint(1, 4)))
        body = " ".join(rng.choices(WORDS, k=rng.randint(5, 60))) + "."
        out.append((f"{prefix}{i}", title.capitalize(), body))
    return out


def reference_bm25(
    docs: dict[int, list[str]], query_terms: list[str], k1=1.2, b=0.75
) -> dict[int, float]:
    n = len(docs)
    avgdl = sum(len(t) for t in docs.values()) / n
    df = Counter(t for terms in docs.values() for t in set(terms))
    scores = {}
    for cid, terms in docs.items():
        tf = Counter(terms)
        s = 0.0
        for q in set(query_terms):
            if tf[q]:
                idf = math.log(1 + (n - df[q] + 0.5) / (df[q] + 0.5))
                s += idf * tf[q] / (tf[q] + k1 * (1 - b + b * len(terms) / avgdl))
        if s > 0:
            scores[cid] = s
    return scores


def _stored_terms(index, tenant: str) -> dict[int, list[str]]:
    with index.db.connection() as conn:
        rows = conn.execute(
            "SELECT c.id, c.header, c.text, d.language FROM chunks c JOIN documents d "
            "ON d.tenant = c.tenant AND d.id = c.document_id "
            "WHERE c.collection_id = %s AND c.tenant = %s AND c.is_current",
            (index.collection.id, tenant),
        ).fetchall()
    a = index.analyzer  # each document is analyzed in its own (detected) language
    return {cid: a.terms(f"{h}\n\n{t}" if h else t, lang) for cid, h, t, lang in rows}


def test_bm25_matches_reference_and_ignores_other_tenants(fake_index):
    rng = random.Random(7)
    fake_index.ingest_sources([text_source(*d) for d in _docs(rng, 120, "a")], tenant="A")
    # Another tenant with a very different term distribution must not change A's scores.
    other = [(f"b{i}", "Cancer", "cancer cancer tumor " * 20) for i in range(200)]
    fake_index.ingest_sources([text_source(*d) for d in other], tenant="B")
    docs = _stored_terms(fake_index, "A")
    assert len(docs) == 120
    for _ in range(25):
        query = " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))
        qterms = fake_index.analyzer.terms(query)
        ref = reference_bm25(docs, qterms)
        got = bm25_search(fake_index.db, fake_index.collection, qterms, Principal("A"), k=1000)
        assert len(got) == len(ref)
        for cid, score in got:
            assert score == pytest.approx(ref[cid], abs=1e-6)
        # ranking: scores non-increasing
        assert all(got[i][1] >= got[i + 1][1] - 1e-12 for i in range(len(got) - 1))


def test_bm25_matches_bm25s_lucene(fake_index):
    bm25s = pytest.importorskip("bm25s")
    rng = random.Random(11)
    fake_index.ingest_sources([text_source(*d) for d in _docs(rng, 80, "d")])
    docs = _stored_terms(fake_index, "default")
    ids = sorted(docs)
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    vocab: dict[str, int] = {}
    corpus_ids = [[vocab.setdefault(t, len(vocab)) for t in docs[i]] for i in ids]
    retriever.index(bm25s.tokenization.Tokenized(ids=corpus_ids, vocab=vocab), show_progress=False)
    for _ in range(15):
        qterms = sorted(set(fake_index.analyzer.terms(" ".join(rng.choices(WORDS, k=4)))))
        q_ids = [vocab[t] for t in qterms if t in vocab]
        expected = retriever.get_scores(q_ids)
        got = dict(bm25_search(fake_index.db, fake_index.collection, qterms, Principal(), k=1000))
        for pos, cid in enumerate(ids):
            assert got.get(cid, 0.0) == pytest.approx(float(expected[pos]), abs=1e-5)


def test_bm25_empty_query_and_no_match(fake_index):
    fake_index.ingest_sources([text_source("x", "Title", "alpha beta gamma")])
    assert bm25_search(fake_index.db, fake_index.collection, [], Principal(), k=5) == []
    assert bm25_search(fake_index.db, fake_index.collection, ["zzzz"], Principal(), k=5) == []


def test_forward_read_packed_by_the_server_equals_each_row(fake_index):
    """The query path's forward read (rows packed into one by the server) gives each chunk's
    postings of the query terms as decoding its own row does, rows without terms included."""
    import numpy as np

    from ragline.store.bm25 import _DbSource, visible_classes
    from tests.store.test_bm25_topk import row_postings

    rng = random.Random(5)
    fake_index.ingest_sources([text_source(*d) for d in _docs(rng, 60, "f")])
    fake_index.ingest_sources([text_source("empty", "", "... --- ...")])
    cid = fake_index.collection.id
    with fake_index.db.connection() as conn:
        rows = conn.execute(
            "SELECT id, n_terms, terms, tfs FROM chunks WHERE collection_id = %s ORDER BY id",
            (cid,),
        ).fetchall()
        assert any(r[2] == "" for r in rows), "a chunk without terms is part of the check"
        classes = visible_classes(conn, cid, Principal(), False)[0]
        source = _DbSource(conn, cid, "default", classes)
        for _ in range(20):
            picked = sorted(rng.sample(rows, rng.randint(1, len(rows))))
            terms = rng.sample(WORDS, 6) + ["absent"]
            got = source.forward(np.array([r[0] for r in picked], dtype=np.int64), terms)
            want = row_postings(picked, terms)
            assert sorted(got) == sorted(want)
            for t in want:
                assert all(np.array_equal(a, b) for a, b in zip(got[t], want[t])), t


def test_tops_refreshed_by_an_ingest_decide_short_queries_and_writes_clear_them(
    fake_index, monkeypatch
):
    """Lists longer than TOP_POSTINGS (12 here) get their tops when an ingest ends; a 1–3
    term query then decides from them, with the scores of exhaustive BM25; the next write
    to a list clears its top in the same transaction (a query never sees a stale one),
    and the ingest, delete, or `ragline index tops` after computes it again."""
    from ragline.store import bm25
    from ragline.store import bm25_codec as codec
    from ragline.store.bm25_topk import Work

    refresh = bm25.refresh_tops
    monkeypatch.setattr(codec, "TOP_POSTINGS", 12)
    rng = random.Random(5)
    report = fake_index.ingest_sources([text_source(*d) for d in _docs(rng, 150, "t")])
    assert not report.warnings, report.warnings

    def tops() -> dict[str, bytes]:
        with fake_index.db.connection() as conn:
            return dict(
                conn.execute(
                    "SELECT term, top FROM bm25_terms WHERE collection_id = %s AND df > 12",
                    (fake_index.collection.id,),
                ).fetchall()
            )

    before = tops()
    assert before and all(v is not None for v in before.values())
    with fake_index.db.connection() as conn:
        assert bm25.check(conn, fake_index.collection.id) == []

    def searched(decided: set[bool]) -> None:
        docs = _stored_terms(fake_index, "default")
        for _ in range(30):
            qterms = fake_index.analyzer.terms(" ".join(rng.choices(WORDS, k=rng.randint(1, 3))))
            ref = sorted(reference_bm25(docs, qterms).items(), key=lambda x: (-x[1], x[0]))
            work = Work()
            got = bm25_search(
                fake_index.db, fake_index.collection, qterms, Principal(), k=5, work=work
            )
            assert [c for c, _ in got] == [c for c, _ in ref[:5]]
            for (_, a), (_, b) in zip(got, ref):
                assert a == pytest.approx(b, abs=1e-6)
            decided.add(work.tops == 1)

    seen: set[bool] = set()
    searched(seen)
    assert True in seen  # some queries were decided by the tops alone

    # a write clears the tops of the lists it changes, in its own transaction
    monkeypatch.setattr(bm25, "refresh_tops", lambda *a, **k: 0)
    fake_index.ingest_sources([text_source("new", "Protein", "protein cell gene " * 3)])
    after = tops()
    assert after["protein"] is None and after["gene"] is None
    assert any(v is not None for t, v in after.items() if t not in ("protein", "cell", "gene"))
    searched(set())  # lists without tops: the same answers
    monkeypatch.undo()
    monkeypatch.setattr(codec, "TOP_POSTINGS", 12)
    fake_index.ingest_sources([text_source("new2", "Cell", "cell memory")])
    assert all(v is not None for v in tops().values())
    with fake_index.db.connection() as conn:
        assert bm25.check(conn, fake_index.collection.id) == []

    # a delete clears its lists' tops and computes them again within its budget
    assert fake_index.delete("t2") == 1
    assert all(v is not None for v in tops().values())
    with fake_index.db.connection() as conn:
        assert bm25.check(conn, fake_index.collection.id) == []
    searched(set())

    # what a delete's budget left (none here: refreshing nothing) `ragline index tops` does
    from tests.conftest import cli_runner

    monkeypatch.setattr(bm25, "refresh_tops", lambda *a, **k: 0)
    assert fake_index.delete("t3") == 1
    monkeypatch.setattr(bm25, "refresh_tops", refresh)
    assert any(v is None for v in tops().values())
    run = cli_runner(
        {
            "RAGLINE_DATABASE_URL": fake_index.settings.database_url,
            "RAGLINE_DB_SCHEMA": fake_index.settings.db_schema,
        }
    )
    out = json.loads(run("index", "tops", "--json").output)
    assert out["lists"] > 0
    assert all(v is not None for v in tops().values())
    assert json.loads(run("index", "tops", "--json").output)["lists"] == 0
    searched(set())

    # a purge computes the tops it cleared too
    fake_index.purge("t4", erase=False)
    assert all(v is not None for v in tops().values())
    with fake_index.db.connection() as conn:
        assert bm25.check(conn, fake_index.collection.id) == []
    searched(set())


def test_prepared_statements_change_no_result_and_can_be_turned_off(pg_url, schema, monkeypatch):
    """The BM25 leg's statements are prepared on each connection (parsed once; after five
    runs PostgreSQL may plan them generically) and find exactly what unprepared statements
    find, scores to the bit; with ``prepared_statements = false`` (a pooler in transaction
    mode that does not keep them) none is prepared."""
    from ragline.core.errors import ConfigError
    from ragline.core.settings import Settings
    from ragline.store import bm25_topk
    from tests.conftest import make_index
    from tests.fakes import FakeEmbedder

    with pytest.raises(ConfigError, match="pool_size"):
        Settings.load(pool_size=1)  # a write may need a second connection: it would hang
    monkeypatch.setenv("RAGLINE_PREPARED_STATEMENTS", "false")
    assert Settings.load().prepared_statements is False
    monkeypatch.delenv("RAGLINE_PREPARED_STATEMENTS")
    assert Settings.load().prepared_statements is True
    # short lists read one term at a time, so MaxScore's later reads (block bounds,
    # blocks, the chunks' own rows) run too
    monkeypatch.setattr(bm25_topk, "SMALL_LIST", 4)
    rng = random.Random(13)
    docs = _docs(rng, 160, "p")
    writer = make_index(pg_url, schema, embedder=FakeEmbedder())
    writer.ingest_sources([text_source(*d) for d in docs[:100]], tenant="A")
    writer.ingest_sources([text_source(*d) for d in docs[100:]], tenant="A", groups=("hr",))
    writer.close()
    # one search at a time: each pool opens only its first connection (min_size 1), so the
    # statements prepared are all on the one looked at
    on = make_index(pg_url, schema, embedder=FakeEmbedder(), pool_size=2)
    off = make_index(
        pg_url, schema, embedder=FakeEmbedder(), pool_size=2, prepared_statements=False
    )
    try:
        readers = (Principal("A"), Principal("A", ("hr",)), Principal("B"))
        for _ in range(40):
            qterms = on.analyzer.terms(" ".join(rng.choices(WORDS, k=rng.randint(1, 6))))
            for p in readers:
                for k in (3, 1000):
                    got = bm25_search(on.db, on.collection, qterms, p, k=k)
                    assert got == bm25_search(off.db, off.collection, qterms, p, k=k)
                    assert p.tenant == "B" or got
        prepared = {}
        with on.db.connection() as conn:  # the pool's one connection, which ran them all
            for sql, generic, custom in conn.execute(
                "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
            ):
                prepared[sql] = generic + custom
        assert any("FROM bm25_classes" in s for s in prepared), prepared
        assert any("FROM bm25_terms" in s for s in prepared), prepared
        assert len(prepared) >= 4 and max(prepared.values()) >= 100, prepared
        with off.db.connection() as conn:
            assert conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()[0] == 0
    finally:
        on.close()
        off.close()
