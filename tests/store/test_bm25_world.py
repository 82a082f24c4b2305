"""The BM25 index under random writes, through the real store: maintained statistics equal
a recount, scores equal an independent BM25 over exactly what the caller may read, and a
document the caller cannot read never moves the caller's scores or ranks (any mode).

Each example is a random world — two tenants, group sets, documents ingested, re-ingested
with new text or new groups, deleted, purged, with or without kept versions — checked
after every step against a model of the world kept here, not read back from the index.
"""

from __future__ import annotations

import math
import random
import threading
from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragline.core.types import Principal
from ragline.ingest.sources import text_source
from ragline.store import bm25_codec as codec
from ragline.store.bm25 import check, refresh_tops
from ragline.store.search import bm25_search
from tests.conftest import make_index
from tests.fakes import FakeEmbedder

WORDS = (
    "pump valve filter heater boiler manual invoice travel badge router laptop lidar "
    "warranty refund layoff salary bonus audit policy contract battery charger sensor"
).split()
GROUPS = ((), ("hr",), ("eng",), ("hr", "eng"), ("ops",))


@dataclass
class Doc:
    versions: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)


@dataclass
class World:
    keep: int
    docs: dict[tuple[str, str], Doc] = field(default_factory=dict)

    def visible(self, p: Principal, history: bool) -> set[tuple[str, str, int]]:
        """(tenant, key, version) the principal may read: every kept version is labelled
        with the current version's groups."""
        out = set()
        for (tenant, key), d in self.docs.items():
            if tenant != p.tenant or not d.versions:
                continue
            groups = d.versions[-1][1]
            if groups and not set(groups) & set(p.groups):
                continue
            n = len(d.versions)
            kept = range(max(1, n - self.keep), n + 1) if history else [n]
            out.update((tenant, key, v) for v in kept)
        return out


def _body(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(1, 25)))


def _reference(index, p: Principal, visible, query_terms, history: bool) -> dict[int, float]:
    """BM25 over the stored chunks of exactly ``visible``, analyzed here from their text."""
    with index.db.connection() as conn:
        rows = conn.execute(
            "SELECT c.id, d.tenant, d.doc_key, d.version, c.header, c.text, d.language "
            "FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.collection_id = %s",
            (index.collection.id,),
        ).fetchall()
    a = index.analyzer
    docs = {
        cid: a.terms(f"{h}\n\n{t}" if h else t, lang)
        for cid, tenant, key, ver, h, t, lang in rows
        if (tenant, key, ver) in visible
    }
    if not docs:
        return {}
    n = len(docs)
    avgdl = sum(len(t) for t in docs.values()) / n
    df = Counter(t for terms in docs.values() for t in set(terms))
    out = {}
    for cid, terms in docs.items():
        tf = Counter(terms)
        s = 0.0
        for q in set(query_terms):
            if tf[q]:
                idf = math.log(1 + (n - df[q] + 0.5) / (df[q] + 0.5))
                s += idf * tf[q] / (tf[q] + 1.2 * (1 - 0.75 + 0.75 * len(terms) / avgdl))
        if s > 0:
            out[cid] = s
    return out


def _principals(rng: random.Random) -> list[Principal]:
    return [
        Principal(
            rng.choice(("A", "B")), tuple(rng.sample(("hr", "eng", "ops"), rng.randint(0, 2)))
        )
        for _ in range(3)
    ]


def _step(index, world: World, rng: random.Random) -> None:
    tenant = rng.choice(("A", "B"))
    keys = [k for (t, k), d in world.docs.items() if t == tenant and d.versions]
    op = rng.choice(("add", "add", "edit", "regroup", "delete", "purge")) if keys else "add"
    if op == "add" or op == "edit":
        key = f"d{rng.randrange(10**6)}" if op == "add" else rng.choice(keys)
        groups = rng.choice(GROUPS)
        body = _body(rng)
        title = rng.choice(WORDS).capitalize()
        report = index.ingest_sources([text_source(key, title, body)], tenant=tenant, groups=groups)
        assert report.ok, report.failed
        d = world.docs.setdefault((tenant, key), Doc())
        if report.unchanged:
            return
        if report.updated and d.versions and d.versions[-1][0] == f"{title}\x00{body}":
            d.versions[-1] = (d.versions[-1][0], tuple(sorted(groups)))  # same text: regrouped
        else:
            d.versions.append((f"{title}\x00{body}", tuple(sorted(groups))))
    elif op == "regroup":
        key = rng.choice(keys)
        d = world.docs[(tenant, key)]
        text = d.versions[-1][0]
        title, body = text.split("\x00")
        groups = rng.choice(GROUPS)
        report = index.ingest_sources([text_source(key, title, body)], tenant=tenant, groups=groups)
        assert report.ok
        d.versions[-1] = (text, tuple(sorted(groups)))
    else:
        key = rng.choice(keys)
        if op == "delete":
            assert index.delete(key, tenant=tenant) >= 1
        else:
            assert index.purge(key, tenant=tenant)["versions"] >= 1
        del world.docs[(tenant, key)]


@pytest.fixture(scope="module")
def world_index(pg_url):
    """One index per keep_versions setting, reset per example (schemas are costly)."""
    import uuid

    import psycopg

    made = {}

    def get(keep: int):
        if keep not in made:
            schema = f"t_world_{uuid.uuid4().hex[:8]}"
            made[keep] = (
                schema,
                make_index(pg_url, schema, embedder=FakeEmbedder(), keep_versions=keep),
            )
        return made[keep][1]

    yield get
    for schema, idx in made.values():
        idx.close()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _reset(index) -> None:
    if index.collection is None:
        return
    with index.db.connection() as conn:
        conn.execute("DELETE FROM documents")
        conn.execute("DELETE FROM bm25_blocks")
        conn.execute("DELETE FROM bm25_terms")
        conn.execute("DELETE FROM bm25_classes")
        conn.execute("DELETE FROM bm25_languages")


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32), keep=st.sampled_from([0, 2]), steps=st.integers(4, 14))
def test_random_worlds_scores_equal_reference(world_index, seed, keep, steps):
    """... with the lists' tops (:func:`refresh_tops`, lists of more than one posting have
    one here) computed after some steps and cleared by the writes after them: a search of
    1–2 terms decides from them where it can, and must find the same."""
    rng = random.Random(seed)
    index = world_index(keep)
    _reset(index)
    world = World(keep=keep)
    before, codec.TOP_POSTINGS = codec.TOP_POSTINGS, 1
    try:
        _world_steps(index, world, rng, steps)
    finally:
        codec.TOP_POSTINGS = before


def _world_steps(index, world: World, rng: random.Random, steps: int) -> None:
    for _ in range(steps):
        _step(index, world, rng)
        if rng.random() < 0.6:
            refresh_tops(index.db, index.collection.id)
        with index.db.connection() as conn:
            assert check(conn, index.collection.id) == []
        for p in _principals(rng):
            for history in (False, True):
                query = rng.sample(WORDS, rng.randint(1, 5))
                terms = index.analyzer.terms(" ".join(query))
                ref = _reference(index, p, world.visible(p, history), terms, history)
                got = bm25_search(
                    index.db, index.collection, terms, p, k=1000, include_history=history
                )
                assert {c for c, _ in got} == set(ref), (p, history, query)
                for cid, score in got:
                    assert score == pytest.approx(ref[cid], abs=1e-6)
                small = bm25_search(
                    index.db, index.collection, terms, p, k=5, include_history=history
                )
                _assert_top(ref, [c for c, _ in small], 5)


def _assert_top(ref: dict[int, float], ids: list[int], k: int) -> None:
    """``ids`` is a top ``k`` of the reference scores, best first. The reference sums a
    chunk's terms in set order, the search in its own fixed order: two chunks whose scores
    are equal in exact arithmetic may differ by ~1e-16 either way, so chunks within 1e-9
    of each other may come in either order (ties are broken by id in the search only)."""
    want = sorted(ref.items(), key=lambda x: (-x[1], x[0]))
    assert len(ids) == min(k, len(want)) and len(set(ids)) == len(ids)
    if not ids:
        return
    kth = want[len(ids) - 1][1]
    assert all(ref[c] >= kth - 1e-9 for c in ids), (ids, want[: k + 2])
    assert {c for c, s in want if s > kth + 1e-9} <= set(ids), (ids, want[: k + 2])
    assert all(ref[a] >= ref[b] - 1e-9 for a, b in zip(ids, ids[1:])), (ids, want[: k + 2])


def _view(index, p: Principal, queries, history: bool):
    out = []
    for q in queries:
        for mode in ("bm25", "vector", "hybrid"):
            res = index.search_result(
                q,
                tenant=p.tenant,
                groups=p.groups,
                mode=mode,
                k=10,
                include_history=history,
                trace=False,
            )
            out.append([(h.chunk_id, round(h.score, 9), h.rank) for h in res.hits])
    return out


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32), keep=st.sampled_from([0, 2]))
def test_documents_the_caller_cannot_read_never_move_its_results(world_index, seed, keep):
    """Adding, editing, regrouping and deleting documents the reader may not read (another
    tenant, or groups the reader lacks) changes none of the reader's scores or ranks, in
    bm25, vector and hybrid search, current or with history."""
    rng = random.Random(seed)
    index = world_index(keep)
    _reset(index)
    reader = Principal("A", ("eng",))
    visible_groups = ((), ("eng",), ("hr", "eng"))
    for i in range(12):
        index.ingest_sources(
            [text_source(f"r{i}", rng.choice(WORDS).capitalize(), _body(rng))],
            tenant="A",
            groups=rng.choice(visible_groups),
        )
    queries = [" ".join(rng.sample(WORDS, rng.randint(1, 4))) for _ in range(6)]
    before = {h: _view(index, reader, queries, h) for h in (False, True)}
    hidden = [("A", ("hr",)), ("A", ("ops",)), ("B", ()), ("B", ("eng",))]
    for i in range(8):
        tenant, groups = rng.choice(hidden)
        body = " ".join(rng.choices(WORDS, k=40))  # words the reader's queries use, often
        key = f"h{i % 3}"
        index.ingest_sources([text_source(key, "Hidden", body)], tenant=tenant, groups=groups)
        if rng.random() < 0.3:
            index.delete(key, tenant=tenant)
        for h in (False, True):
            assert _view(index, reader, queries, h) == before[h]
    with index.db.connection() as conn:
        assert check(conn, index.collection.id) == []


def test_ingest_while_querying_then_statistics_equal_a_recount(pg_url, schema):
    """Two writers and a reader at once: every search succeeds (no partial state is
    visible to it), and afterwards the maintained statistics equal a recount."""
    index = make_index(pg_url, schema, embedder=FakeEmbedder(), keep_versions=1)
    index.ingest_sources([text_source("seed", "Seed", "pump valve filter")], tenant="A")
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer(prefix: str, seed: int) -> None:
        rng = random.Random(seed)
        try:
            for i in range(25):
                srcs = [
                    text_source(f"{prefix}{rng.randrange(12)}", "Doc", _body(rng))
                    for _ in range(rng.randint(1, 6))
                ]
                index.ingest_sources(srcs, tenant="A", groups=rng.choice(GROUPS))
                if rng.random() < 0.2:
                    index.delete(f"{prefix}{rng.randrange(12)}", tenant="A")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def reader() -> None:
        rng = random.Random(3)
        try:
            while not stop.is_set():
                terms = index.analyzer.terms(" ".join(rng.sample(WORDS, 3)))
                got = bm25_search(index.db, index.collection, terms, Principal("A", ("hr",)), k=10)
                assert all(s > 0 for _, s in got)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=("x", 1)),
        threading.Thread(target=writer, args=("x", 2)),
    ]
    r = threading.Thread(target=reader)
    r.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    r.join()
    assert not errors, errors
    with index.db.connection() as conn:
        assert check(conn, index.collection.id) == []
    index.close()
