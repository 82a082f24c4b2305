"""Permissions are applied inside both legs: no cross-tenant or cross-group leak, and a
very selective group filter still returns k hits."""

from __future__ import annotations

import random

import pytest

from ragline.core.errors import AccessError
from ragline.core.types import Principal
from ragline.ingest.sources import text_source
from ragline.store.search import vector_search

# These collections are small, and the graph walk is part of what is tested here: every
# load ends with a graph, as a collection of GRAPH_FROM chunks or more has.
pytestmark = pytest.mark.usefixtures("graph_always")


TOPICS = ["battery charging", "expense policy", "security incident", "data retention", "vpn access"]


def _visible(doc_tenant: str, doc_groups: tuple[str, ...], p: Principal) -> bool:
    return doc_tenant == p.tenant and (not doc_groups or bool(set(doc_groups) & set(p.groups)))


def test_no_leaks_across_tenants_and_groups(fake_index):
    rng = random.Random(3)
    acl: dict[str, tuple[str, tuple[str, ...]]] = {}
    tenants = ["acme", "globex"]
    group_sets = [(), ("eng",), ("hr",), ("eng", "hr"), ("legal",)]
    for i in range(60):
        tenant = rng.choice(tenants)
        groups = rng.choice(group_sets)
        topic = rng.choice(TOPICS)
        key = f"doc{i}"
        acl[key] = (tenant, tuple(sorted(groups)))
        fake_index.ingest_sources(
            [
                text_source(
                    key, f"{topic.title()} {i}", f"Notes about {topic} number {i} for {tenant}."
                )
            ],
            tenant=tenant,
            groups=groups,
        )
    principals = [
        Principal(t, g)
        for t in tenants + ["initech"]
        for g in [(), ("eng",), ("hr", "legal"), ("nope",)]
    ]
    checked = 0
    for p in principals:
        for topic in TOPICS:
            for mode in ("bm25", "vector", "hybrid"):
                hits = fake_index.search(topic, tenant=p.tenant, groups=p.groups, k=50, mode=mode)
                for h in hits:
                    assert _visible(*acl[h.doc_key], p), (mode, p, h.doc_key, acl[h.doc_key])
                    checked += 1
                expected = {k for k, (t, g) in acl.items() if _visible(t, g, p)}
                if mode == "vector":  # the vector leg returns every permitted chunk when k is large
                    assert {h.doc_key for h in hits} == expected
            answer = fake_index.ask(topic, tenant=p.tenant, groups=p.groups)
            for c in answer.citations:
                assert _visible(*acl[c.doc_key], p)
    assert checked > 100


@pytest.mark.parametrize(
    "bad",
    [
        Principal("", ()),
        Principal(None, ()),
        Principal("a", "eng"),  # type: ignore[arg-type]
        Principal("a", ("",)),
        None,
    ],
)
def test_unusable_identity_is_refused(fake_index, bad):
    fake_index.ingest_sources([text_source("x", "T", "battery charging")])
    with pytest.raises(AccessError):
        fake_index.searcher.search("battery", bad)
    with pytest.raises(AccessError):
        vector_search(
            fake_index.db, fake_index.collection, fake_index.embedder.embed_query("x"), bad, k=3
        )


def test_selective_group_filter_returns_k(fake_index):
    """1% of 3,000 chunks are readable by the caller; both legs still return k hits,
    on the exact path and on the HNSW path with iterative scan."""
    sources_common = [
        text_source(f"c{i}", f"Common {i}", f"battery charging note {i} shared widely")
        for i in range(2970)
    ]
    sources_rare = [
        text_source(f"r{i}", f"Rare {i}", f"battery charging note {i} restricted")
        for i in range(30)
    ]
    fake_index.ingest_sources(sources_common, groups=["common"])
    fake_index.ingest_sources(sources_rare, groups=["rare"])
    p = Principal("default", ("rare",))
    q = fake_index.embedder.embed_query("battery charging note")
    found: dict[int, list] = {}
    for exact_below in (2000, 0):  # 2000: exact scan (30 permitted rows); 0: force HNSW
        got = vector_search(
            fake_index.db, fake_index.collection, q, p, k=10, ef_search=10, exact_below=exact_below
        )
        assert len(got) == 10
        assert len({cid for cid, _ in got}) == 10
        found[exact_below] = got
    # the walk's beam for a 1 % share is past pgvector's cap: it brings 15 rows and keeps
    # the 10 nearest by the stored vectors, best first
    sims = [s for _, s in found[0]]
    assert sims == sorted(sims, reverse=True)
    for mode in ("bm25", "vector", "hybrid"):
        hits = fake_index.search("battery charging note", groups=["rare"], k=10, mode=mode)
        assert len(hits) == 10 and all(h.doc_key.startswith("r") for h in hits)
    # k above pgvector's ef_search ceiling (1000) on the HNSW path: still k rows, no error
    common = Principal("default", ("common",))
    deep = vector_search(fake_index.db, fake_index.collection, q, common, k=1500, exact_below=0)
    assert len(deep) == 1500
    # On the HNSW index itself (planner steered to it), iterative scan is what returns k rows:
    # with ef_search=10 a plain HNSW scan sees ~10 candidates, of which ~1% are permitted.
    col = fake_index.collection
    sql = (
        f"SELECT id FROM chunks c WHERE c.collection_id = %s AND c.tenant = 'default' "
        f"AND (c.groups = '{{}}' OR c.groups && ARRAY['rare']) "
        f"ORDER BY {col.as_indexed('c.embedding')} <=> {col.as_indexed('%s')} LIMIT 10"
    )
    counts = {}
    for scan in ("off", "relaxed_order"):
        with fake_index.db.connection() as conn:
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_bitmapscan = off")
            conn.execute("SET LOCAL hnsw.ef_search = 10")
            conn.execute(f"SET LOCAL hnsw.iterative_scan = {scan}")
            plan = "\n".join(
                r[0] for r in conn.execute("EXPLAIN " + sql, (fake_index.collection.id, q))
            )
            assert fake_index.collection.hnsw_index in plan
            counts[scan] = len(conn.execute(sql, (fake_index.collection.id, q)).fetchall())
    assert counts["relaxed_order"] == 10
    assert counts["off"] < 10


def test_ef_search_grows_with_the_graph():
    """The beam is the setting up to EF_SCALE_FROM chunks, then grows with the square root
    of the graph's size (8x at 1M chunks), never shrinking."""
    from ragline.store.search import EF_SCALE_FROM, scaled_ef_search

    assert scaled_ef_search(100, 0) == 100
    assert scaled_ef_search(100, EF_SCALE_FROM) == 100
    assert scaled_ef_search(100, 1_000_000) == 800
    assert scaled_ef_search(40, 4 * EF_SCALE_FROM) == 80
    sizes = [0, 10, 10_000, 62_500, 100_000, 250_000, 1_000_000, 10_000_000]
    beams = [scaled_ef_search(100, n) for n in sizes]
    assert beams == sorted(beams) and min(beams) == 100


def test_vector_index_uses_the_documented_graph(fake_index):
    from ragline.store.collections import HNSW_EF_CONSTRUCTION, HNSW_M

    fake_index.ingest_sources([text_source("a", "A", "battery charging note")])
    with fake_index.db.connection() as conn:
        (definition,) = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s",
            (fake_index.collection.hnsw_index,),
        ).fetchone()
    assert (
        f"m='{HNSW_M}'" in definition and f"ef_construction='{HNSW_EF_CONSTRUCTION}'" in definition
    )
    assert (HNSW_M, HNSW_EF_CONSTRUCTION) == (32, 128)


@pytest.mark.parametrize("vector_type", ["halfvec", "vector"])
def test_both_index_types_are_walked_and_scored_exactly(fake_index, vector_type):
    """New collections index halfvec, collections from before migration 0060 keep their
    float32 index: each query orders by its own index's expression (the planner uses the
    index) and the k found are scored on the stored float32 vectors."""
    from dataclasses import replace

    from ragline.store.collections import NEW_VECTOR_TYPE, vector_index_sql
    from ragline.store.filters import acl_sql
    from ragline.store.search import hnsw_sql

    fake_index.ingest_sources(
        [
            text_source(f"d{i}", f"D {i}", f"battery charging note {i} number {i * 7}")
            for i in range(300)
        ]
    )
    assert fake_index.collection.vector_type == NEW_VECTOR_TYPE == "halfvec"
    col = replace(fake_index.collection, vector_type=vector_type)
    with fake_index.db.connection() as conn:
        conn.execute(f"DROP INDEX {col.hnsw_index}")
        conn.execute(vector_index_sql(col))
        conn.execute("UPDATE collections SET vector_type = %s WHERE id = %s", (vector_type, col.id))
    p = Principal("default", ())
    q = fake_index.embedder.embed_query("battery charging note 17")
    acl, params = acl_sql(p, "c")
    with fake_index.db.connection() as conn:
        conn.execute("ANALYZE chunks")
        for knob in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
            conn.execute(f"SET LOCAL {knob} = off")  # a tiny table: steer to the graph
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN " + hnsw_sql(col, acl),
                {"cid": col.id, "q": q, "k": 10, "fetch": None, **params},
            )
        )
    assert col.hnsw_index in plan
    got = vector_search(fake_index.db, col, q, p, k=10, exact_below=0)
    exact = dict(vector_search(fake_index.db, col, q, p, k=300, exact_below=10**9))
    assert len(got) == 10
    assert all(abs(score - exact[c]) < 1e-6 for c, score in got)  # float32 scores
    assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    best = sorted(exact, key=lambda c: -exact[c])[:10]
    assert len({c for c, _ in got} & set(best)) >= 8
