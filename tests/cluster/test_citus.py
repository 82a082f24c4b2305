"""ragline on a real Citus cluster (coordinator + 2 workers on localhost) gives the same
results as on one server, routes a tenant's queries to one shard, and fails clearly when a
worker is gone.

The same random multi-tenant world is built on a single server and on the cluster, through
the same public calls (ingest, re-ingest with versions kept, sync, delete, purge); after
each step every observation (search in every mode for every caller, ask, history search,
document listings, traces, keys) must be equal on both."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import psycopg
import pytest

from ragline.core.errors import StoreError
from ragline.core.types import Principal
from ragline.ingest.sources import text_source
from tests.conftest import make_index
from tests.fakes import FakeEmbedder

TENANTS = ("acme", "globex", "initech", "umbrella")
GROUPS = [(), ("eng",), ("hr",), ("eng", "hr")]
TOPICS = [
    "battery charging cycles",
    "travel expense policy",
    "security incident runbook",
    "data retention schedule",
    "vpn access setup",
    "onboarding laptop checklist",
]
QUERIES = ["battery charging", "expense policy travel", "vpn retention data"]
CALLERS = [
    Principal("acme", ()),
    Principal("acme", ("eng",)),
    Principal("globex", ("hr", "eng")),
    Principal("initech", ("hr",)),
    Principal("umbrella", ("eng", "hr")),
]


def _world(seed: int = 7) -> list[tuple[str, str, tuple[str, ...], str, str]]:
    rng = random.Random(seed)
    docs = []
    for i in range(32):
        topic = rng.choice(TOPICS)
        other = rng.choice(TOPICS)
        text = f"{topic.capitalize()} note {i}. " + " ".join(
            f"This paragraph explains {rng.choice([topic, other])} step {j} in detail."
            for j in range(rng.randint(2, 12))
        )
        docs.append((f"doc{i}", rng.choice(TENANTS), rng.choice(GROUPS), topic.title(), text))
    return docs


def _hits(hits) -> list[tuple]:
    return [(h.doc_key, h.metadata.get("version"), h.text[:40], round(h.score, 5)) for h in hits]


def observe(idx) -> dict:
    from ragline.store.traces import recent_traces

    out: dict = {}
    for p in CALLERS:
        for q in QUERIES:
            for mode in ("bm25", "vector", "hybrid"):
                out[(p, q, mode)] = _hits(
                    idx.search(q, tenant=p.tenant, groups=p.groups, k=8, mode=mode)
                )
        a = idx.ask(QUERIES[0], tenant=p.tenant, groups=p.groups)
        out[(p, "ask")] = (a.text, [c.doc_key for c in a.citations], a.abstained)
        out[(p, "history")] = _hits(
            idx.search(QUERIES[1], tenant=p.tenant, groups=p.groups, k=8, include_history=True)
        )
        out[(p, "traces")] = sorted(
            (t["kind"], t["question"])
            for t in recent_traces(idx.db, idx.collection.id, p, limit=500)
        )
    for t in TENANTS:
        out[(t, "documents")] = sorted(
            (d.doc_key, d.version, d.n_chunks) for d in idx.documents(tenant=t)
        )
    return out


def _both(pg_url: str, schema: str, citus, citus_schema: str, **settings):
    single = make_index(pg_url, schema, embedder=FakeEmbedder(), **settings)
    cluster = make_index(citus.url, citus_schema, embedder=FakeEmbedder(), **settings)
    assert cluster.db.distributed and not single.db.distributed
    return single, cluster


def _assert_same(single, cluster, step: str) -> None:
    a, b = observe(single), observe(cluster)
    assert a.keys() == b.keys()
    diff = [k for k in a if a[k] != b[k]]
    assert not diff, (step, diff[:3], [(a[k], b[k]) for k in diff[:1]])


def test_same_results_as_one_server(pg_url, schema, citus, citus_schema, tmp_path):
    single, cluster = _both(pg_url, schema, citus, citus_schema, keep_versions=1)
    try:
        world = _world()
        for idx in (single, cluster):
            for key, tenant, groups, title, text in world:
                idx.ingest_sources([text_source(key, title, text)], tenant=tenant, groups=groups)
        _assert_same(single, cluster, "ingest")

        # re-ingest a third with new text: versions kept, history searchable
        for idx in (single, cluster):
            for key, tenant, groups, title, text in world[::3]:
                idx.ingest_sources(
                    [text_source(key, title, text + " Revised: vpn access changed.")],
                    tenant=tenant,
                    groups=groups,
                )
        _assert_same(single, cluster, "versions")

        # a folder sync for one tenant: add, then change and remove
        folder = tmp_path / "folder"
        folder.mkdir()
        for i in range(4):
            (folder / f"f{i}.md").write_text(f"# Sync {i}\n\nBattery charging sync file {i}.\n")
        for idx in (single, cluster):
            idx.sync(folder, tenant="acme")
        (folder / "f0.md").write_text("# Sync 0\n\nNow about the travel expense policy.\n")
        (folder / "f3.md").unlink()
        for idx in (single, cluster):
            rep = idx.sync(folder, tenant="acme")
            assert len(rep.updated) == 1 and len(rep.deleted) == 1
        _assert_same(single, cluster, "sync")

        # delete and purge (the file rewrite: tests/cluster/test_erasure.py)
        victims = [d for d in world if d[1] == "globex"][:2]
        for idx in (single, cluster):
            assert idx.delete(victims[0][0], tenant="globex") >= 1
            res = idx.purge(victims[1][0], tenant="globex", erase=False)
            assert res["versions"] >= 1
        _assert_same(single, cluster, "delete+purge")
    finally:
        single.close()
        cluster.close()


def test_keys_on_the_cluster(citus, citus_schema):
    from ragline.store.keys import create_key, list_keys, lookup_key, revoke_key

    idx = make_index(citus.url, citus_schema, embedder=FakeEmbedder())
    try:
        key, rec = create_key(idx.db, tenant="acme", groups=["eng"], name="ci")
        assert lookup_key(idx.db, key).tenant == "acme"
        assert [k.id for k in list_keys(idx.db, "acme")] == [rec.id]
        assert list_keys(idx.db, "globex") == []
        assert revoke_key(idx.db, rec.id, "acme")
        assert lookup_key(idx.db, key) is None
    finally:
        idx.close()


def test_schema_is_distributed_by_tenant(citus, citus_schema):
    from ragline.store.distribution import DISTRIBUTED, REFERENCE

    idx = make_index(citus.url, citus_schema, embedder=FakeEmbedder())
    try:
        with idx.db.connection() as conn:
            rows = conn.execute(
                "SELECT c.relname, p.partmethod, p.colocationid, "
                "column_to_column_name(p.logicalrelid, p.partkey) "
                "FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s",
                (citus_schema,),
            ).fetchall()
        kinds = {r[0]: r for r in rows}
        for t in DISTRIBUTED:
            if t in ("ingest_tasks", "ingest_files") and t not in kinds:
                continue
            assert kinds[t][1] == "h" and kinds[t][3] == "tenant", t
        assert len({kinds[t][2] for t in DISTRIBUTED if t in kinds}) == 1  # co-located
        for t in REFERENCE:
            assert kinds[t][1] == "n", t
    finally:
        idx.close()


def test_tenant_queries_route_to_one_shard(citus, citus_schema):
    """EXPLAIN of each query a tenant's search runs: one task, on one worker."""
    idx = make_index(citus.url, citus_schema, embedder=FakeEmbedder())
    try:
        for key, tenant, groups, title, text in _world()[:16]:
            idx.ingest_sources([text_source(key, title, text)], tenant=tenant, groups=groups)
        statements = _capture_statements(
            idx,
            lambda: (
                [
                    idx.search("battery charging", tenant="acme", groups=("eng",), mode=m)
                    for m in ("bm25", "vector", "hybrid")
                ]
                + [idx.ask("vpn access", tenant="acme", groups=("eng",))]
            ),
        )
        distributed = [s for s in statements if _touches_tenant_tables(s[0])]
        assert len(distributed) >= 4, statements
        for sql, params in distributed:
            plan = _explain(idx, sql, params)
            assert "Task Count: 1" in plan, (sql, plan)
            assert "Router" in plan or "Adaptive" in plan, plan
    finally:
        idx.close()


_TENANT_TABLES = re.compile(r"\b(chunks|documents|bm25_\w+|traces|chunk_parents)\b")


def _touches_tenant_tables(sql: str) -> bool:
    return bool(_TENANT_TABLES.search(sql)) and sql.lstrip().upper().startswith(("SELECT", "WITH"))


def _capture_statements(idx, action) -> list[tuple[str, object]]:
    """Run ``action`` recording every (sql, params) executed on the index's connections."""
    import psycopg

    seen: list[tuple[str, object]] = []
    original = psycopg.Cursor.execute

    def execute(self, query, params=None, **kw):
        if isinstance(query, str):
            seen.append((query, params))
        return original(self, query, params, **kw)

    psycopg.Cursor.execute = execute
    try:
        action()
    finally:
        psycopg.Cursor.execute = original
    return seen


def _explain(idx, sql: str, params) -> str:
    with idx.db.connection() as conn:
        rows = conn.execute("EXPLAIN " + sql, params).fetchall()
        conn.rollback()
    return "\n".join(r[0] for r in rows)


def test_a_stopped_worker_is_a_clear_error(citus, citus_schema):
    """A query whose shard is on a stopped worker fails with a StoreError naming the
    node; it never returns the other workers' rows as if they were all."""
    from ragline.store.distribution import shard_placement

    idx = make_index(citus.url, citus_schema, embedder=FakeEmbedder())
    try:
        for key, tenant, groups, title, text in _world()[:24]:
            idx.ingest_sources([text_source(key, title, text)], tenant=tenant)
        with idx.db.connection() as conn:
            host, port = shard_placement(conn, citus_schema, "acme")
        worker = next(w for w in citus.workers if w.port == port)
        # mid-query: a statement running on every shard (each row sleeps on its worker)
        import threading

        failure: list[BaseException] = []

        def slow_listing() -> None:
            try:
                with idx.db.connection() as conn:
                    conn.execute(
                        "SELECT count(*) FROM documents WHERE pg_sleep(1) IS NOT NULL"
                    ).fetchone()
            except BaseException as exc:  # noqa: BLE001 - examined below
                failure.append(exc)

        t = threading.Thread(target=slow_listing)
        t.start()
        try:
            time.sleep(1.0)
            worker.stop("immediate")
            t.join(60)
            assert failure and isinstance(failure[0], StoreError), failure
            assert "not answered" in str(failure[0])
            for mode in ("bm25", "vector", "hybrid"):
                with pytest.raises(StoreError, match=r"worker|node|127\.0\.0\.1"):
                    idx.search("battery", tenant="acme", mode=mode)
            # a listing across tenants must not silently drop the stopped worker's share
            with pytest.raises(StoreError):
                idx.documents(tenant=None)
        finally:
            t.join(60)
            worker.start()
        assert idx.search("battery", tenant="acme", mode="bm25")  # back once it is up
    finally:
        idx.close()


def test_fixture_nodes_are_separate_servers(citus):
    ports = {n.port for n in citus.nodes}
    assert len(ports) == 3
    dirs = {Path(n.pgdata) for n in citus.nodes}
    assert len(dirs) == 3
    with psycopg.connect(citus.url) as conn:
        assert (
            conn.execute("SELECT count(*) FROM citus_get_active_worker_nodes()").fetchone()[0] == 2
        )


def test_ingest_queue_on_the_cluster(citus, citus_schema):
    """The queue's claims (SKIP LOCKED, routed to the tenant's shard) and a worker's run."""
    import threading

    from ragline.ingest.queue import Worker, enqueue_uploads
    from ragline.store import queue as q

    idx = make_index(citus.url, citus_schema, embedder=FakeEmbedder())
    try:
        for t in TENANTS:
            enqueue_uploads(idx, t, [], [(f"{t}.md", f"# {t}\n\nbattery note of {t}".encode())])
        got: list[tuple[str, int]] = []

        def claimer(name: str) -> None:
            while (task := q.claim(idx.db, name, stale_after=60)) is not None:
                got.append((task.tenant, task.id))
                assert q.finish(idx.db, task, ok=True, report={"added": []})

        threads = [threading.Thread(target=claimer, args=(f"w{i}",)) for i in range(3)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert sorted(got) == sorted(set(got)) and len(got) == len(TENANTS)
        for t in TENANTS:
            enqueue_uploads(idx, t, [], [(f"{t}.md", f"# {t}\n\nbattery note of {t}".encode())])
        assert Worker(idx.db, lambda _c: idx, stale_after=5).run(drain=True) == len(TENANTS)
        for t in TENANTS:
            assert [h.doc_key for h in idx.search("battery", tenant=t, mode="bm25")] == [
                f"upload:{t}.md"
            ]
    finally:
        idx.close()
