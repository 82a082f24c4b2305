"""Named collections: each fixes its embedding model, analyzer and chunker.

A collection's vectors are indexed by a partial HNSW index of its own
(``chunks_hnsw_<id>``, cosine, m=32, ef_construction=128), so collections with models of
different dimensions share one ``chunks`` table.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError, ModelMismatchError, NotFoundError
from .db import Database

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
GRAPH_FROM = 2000
"""A collection gets its HNSW graph once a load leaves it holding this many chunks. Below,
every search scans the permitted rows exactly (:data:`ragline.store.search.EXACT_SCAN_BELOW`
is this number), which is exact and takes a few milliseconds, so a graph would never be
walked and would only cost its build, on the critical path at the end of a small first
load (0.37-0.44 s for 773 chunks). Weaviate's dynamic index and Qdrant's indexing threshold
leave small collections flat for the same reason."""
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 128
"""The HNSW graph's degree and build beam. At 1M chunks of the scale corpus (bench/README,
issue 13) m=16, ef_construction=64 reached recall@10 0.726 / 0.857 / 0.935 at ef_search
100 / 400 / 800; m=32, ef_construction=128 reaches 0.837 / 0.959 at 100 / 400 (p50 3.9 /
7.8 ms) for a 2.8x longer build (469 vs 169 s) and a 4 % larger index."""


@dataclass(frozen=True)
class Collection:
    id: int
    name: str
    embedder: str
    dim: int
    analyzer: str
    chunker: str
    vector_type: str = "vector"
    """What the HNSW index reads the embedding as: ``halfvec`` for collections created
    since migration 0060, ``vector`` (float32) for older ones."""

    @property
    def hnsw_index(self) -> str:
        return f"chunks_hnsw_{self.id}"

    def as_indexed(self, expr: str) -> str:
        """``expr`` (a column or a query parameter) cast to the type the HNSW index reads:
        the index is built on ``as_indexed("embedding")``, and a query must order by the
        same expression, against ``as_indexed`` of its vector, for the planner to use it."""
        return f"{expr}::{self.vector_type}({self.dim})"


def _row(r: Any) -> Collection:
    return Collection(
        id=r[0], name=r[1], embedder=r[2], dim=r[3], analyzer=r[4], chunker=r[5], vector_type=r[6]
    )


_COLS = "id, name, embedder, dim, analyzer, chunker, vector_type"
NEW_VECTOR_TYPE = "halfvec"
"""The index type of a new collection. At 100k chunks (bench/README, issue 13) a halfvec
HNSW index was 112 MB vs 195 MB, recall@10 0.958 vs 0.952 at ef_search 100, p50 of the
bare SQL 1.8 vs 2.4 ms."""


def get_collection(db: Database, name: str) -> Collection:
    with db.connection() as conn:
        r = conn.execute(f"SELECT {_COLS} FROM collections WHERE name = %s", (name,)).fetchone()
        if r is None:
            names = [x[0] for x in conn.execute("SELECT name FROM collections ORDER BY name")]
            raise NotFoundError(
                f"no collection named {name!r}; existing: {', '.join(names) or '(none yet: ingest something first)'}"
            )
        return _row(r)


def find_collection(db: Database, name: str) -> Collection | None:
    with db.connection() as conn:
        r = conn.execute(f"SELECT {_COLS} FROM collections WHERE name = %s", (name,)).fetchone()
        return _row(r) if r else None


def list_collections(db: Database) -> list[Collection]:
    with db.connection() as conn:
        return [_row(r) for r in conn.execute(f"SELECT {_COLS} FROM collections ORDER BY name")]


def ensure_collection(
    db: Database, name: str, *, embedder: str, dim: int, analyzer: str, chunker: str
) -> Collection:
    """Return collection ``name``, creating it (and its HNSW index) on first use.

    Using an existing collection with another embedding model is an error: its stored
    vectors would be meaningless to the new model.
    """
    if not _NAME.match(name):
        raise ConfigError(
            f"invalid collection name {name!r}: use 1-64 letters, digits, '_', '.', '-', starting with a letter or digit"
        )
    with db.connection() as conn:
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('collection:' || %s, 0))", (name,)
        )
        r = conn.execute(f"SELECT {_COLS} FROM collections WHERE name = %s", (name,)).fetchone()
        if r is None:
            r = conn.execute(
                "INSERT INTO collections (name, embedder, dim, analyzer, chunker, vector_type) "
                f"VALUES (%s, %s, %s, %s, %s, %s) RETURNING {_COLS}",
                (name, embedder, dim, analyzer, chunker, NEW_VECTOR_TYPE),
            ).fetchone()
            col = _row(r)
            conn.execute(vector_index_sql(col))
            return col
        col = _row(r)
    if col.embedder != embedder or col.dim != dim:
        raise ModelMismatchError(
            f"collection {name!r} was built with embedder {col.embedder!r} ({col.dim}-d); "
            f"it cannot be used with {embedder!r} ({dim}-d). Use that embedder, or ingest into "
            "another collection (--collection NAME)"
        )
    if col.analyzer != analyzer:
        raise ConfigError(
            f"collection {name!r} was indexed with analyzer {col.analyzer!r}, this ragline uses "
            f"{analyzer!r}; its BM25 terms would not match. Ingest into a new collection "
            "(--collection NAME) or delete the old one"
        )
    return col


def vector_index_sql(col: Collection, *, concurrently: bool = False) -> str:
    """The collection's partial HNSW index (cosine, :data:`HNSW_M`, :data:`HNSW_EF_CONSTRUCTION`)."""
    how = "CONCURRENTLY IF NOT EXISTS" if concurrently else "IF NOT EXISTS"
    return (
        f"CREATE INDEX {how} {col.hnsw_index} ON chunks USING hnsw "
        f"(({col.as_indexed('embedding')}) {col.vector_type}_cosine_ops) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
        f"WHERE collection_id = {col.id}"
    )


def build_memory_bytes(n_vectors: int, dim: int) -> int:
    """``maintenance_work_mem`` for building an HNSW graph of ``n_vectors`` in memory
    (pgvector spills to a much slower on-disk build when it does not fit): the vectors,
    two layers of neighbour lists and slack, capped at a quarter of the machine's RAM."""
    from .server import machine_memory_bytes

    need = int(n_vectors * (dim * 4 + HNSW_M * 2 * 8 * 2 + 128) * 1.3) + (64 << 20)
    return max(64 << 20, min(need, machine_memory_bytes() // 4))


def vector_index_state(db: Database, col: Collection) -> str:
    """The collection's HNSW index: ``"ready"``; ``"building"`` (a build is running);
    ``"invalid"`` (a concurrent build was interrupted, e.g. the process was killed: the
    planner never uses it, yet every write still updates it); ``"exact"`` (none, and none
    needed: the collection holds fewer than :data:`GRAPH_FROM` chunks, scanned exactly);
    or ``"missing"`` (none, for more chunks than that: a load that did not reach its end)."""
    with db.connection() as conn:
        state = _index_state(conn, col.hnsw_index)
        if state == "missing" and _below_graph(conn, col):
            return "exact"
        return state


def _below_graph(conn: Any, col: Collection) -> bool:
    """Whether the collection holds fewer than :data:`GRAPH_FROM` chunks (reads at most
    that many rows)."""
    n = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM chunks WHERE collection_id = %s LIMIT %s) s",
        (col.id, GRAPH_FROM),
    ).fetchone()[0]
    return int(n) < GRAPH_FROM


def _index_state(conn: Any, name: str) -> str:
    r = conn.execute(
        "SELECT i.indisvalid, EXISTS (SELECT 1 FROM pg_stat_progress_create_index p "
        "WHERE p.index_relid = c.oid) "
        "FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
        "WHERE c.relname = %s "
        "AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())",
        (name,),
    ).fetchone()
    if r is None:
        return "missing"
    valid, building = r
    return "building" if building else "ready" if valid else "invalid"


def build_vector_index(db: Database, col: Collection, *, workers: int | None = None) -> None:
    """(Re)build the collection's HNSW index with memory sized for it, without blocking
    writers of other collections (CONCURRENTLY)."""
    import os

    with db.connection() as conn:
        n = conn.execute(
            "SELECT count(*) FROM chunks WHERE collection_id = %s AND embedding IS NOT NULL",
            (col.id,),
        ).fetchone()[0]
        conn.commit()
        conn.autocommit = True
        try:
            if _index_state(conn, col.hnsw_index) == "invalid":  # IF NOT EXISTS would keep it
                conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {col.hnsw_index}")
            mem_mb = build_memory_bytes(int(n), col.dim) >> 20
            conn.execute(f"SET maintenance_work_mem = '{mem_mb}MB'")
            par = workers if workers is not None else max(0, min(3, (os.cpu_count() or 1) - 1))
            conn.execute(f"SET max_parallel_maintenance_workers = {int(par)}")
            # PostgreSQL plans no worker for a heap under min_parallel_table_scan_size (8 MB),
            # a rule sized for scans: an HNSW insert costs ~0.5 ms a row, so a small first
            # load's build gains as much (773 rows 0.45-0.67 -> 0.37-0.44 s, 3,000 rows
            # 2.9-3.5 -> 1.65-1.9 s on 2 cores; bench/README, stop 36)
            conn.execute("SET min_parallel_table_scan_size = 0")
            conn.execute(vector_index_sql(col, concurrently=True))
        finally:
            # the connection goes back to the pool: a query planned on it later must not
            # see these (parallel scans of small tables, a build-sized work memory)
            if not conn.closed and not conn.broken:
                for name in _BUILD_SETTINGS:
                    conn.execute(f"RESET {name}")
            conn.autocommit = False


_BUILD_SETTINGS = (
    "maintenance_work_mem",
    "max_parallel_maintenance_workers",
    "min_parallel_table_scan_size",
)


@contextmanager
def deferred_vector_index(db: Database, col: Collection) -> Iterator[dict[str, float]]:
    """Loading into an empty collection: drop its vector index for the load and build it
    once at the end (even when the load fails part-way, so the index is never left out),
    if the collection then holds :data:`GRAPH_FROM` chunks or more. A collection that
    holds chunks keeps its index, updated row by row; one without (it was smaller) gets
    it at the end of the load that brings it to that size. An index a killed process left
    missing or invalid is built at the end of the next load (one running in another
    process is left to finish). Yields a dict whose ``seconds`` is the build time, once
    the block has ended."""
    import time

    with db.connection() as conn:
        empty = conn.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM chunks WHERE collection_id = %s)", (col.id,)
        ).fetchone()[0]
        if empty:
            conn.execute(f"DROP INDEX IF EXISTS {col.hnsw_index}")
    timing = {"seconds": 0.0}
    try:
        yield timing
    finally:
        if vector_index_state(db, col) in ("missing", "invalid"):
            t = time.perf_counter()
            build_vector_index(db, col)
            timing["seconds"] = time.perf_counter() - t


def collection_counts(db: Database, collection_id: int) -> tuple[int, int]:
    """(current documents, their chunks) of a collection."""
    with db.connection() as conn:
        r = conn.execute(
            "SELECT count(*), coalesce(sum(n_chunks), 0) FROM documents "
            "WHERE collection_id = %s AND is_current",
            (collection_id,),
        ).fetchone()
    return int(r[0]), int(r[1])


def collection_overview(db: Database, collection_id: int) -> dict[str, Any]:
    """What ``ragline status`` shows of the database: counts per tenant, cache entries,
    schema version and size."""
    docs, chunks = collection_counts(db, collection_id)
    with db.connection() as conn:
        tenants = conn.execute(
            "SELECT tenant, count(*) FROM documents WHERE collection_id = %s AND is_current "
            "GROUP BY tenant ORDER BY tenant",
            (collection_id,),
        ).fetchall()
        cache = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
        version = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    return {
        "documents": docs,
        "chunks": chunks,
        "tenants": {t: n for t, n in tenants},
        "embedding_cache_entries": cache,
        "schema_version": version,
        "size_bytes": size,
    }
