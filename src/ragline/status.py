"""``ragline status``: what an index holds, which version serves, and how fresh it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .store import collections as _collections
from .store.collections import collection_overview, vector_index_state
from .store.freshness import freshness
from .store.versions import list_versions


def index_status(index: Any, *, check_sources: bool = True) -> dict[str, Any]:
    if index.collection is None:
        return {
            "collection": index.settings.collection,
            "embedder": "auto (chosen at first ingest)",
            "documents": 0,
            "chunks": 0,
        }
    over = collection_overview(index.db, index.collection.id)
    docs, chunks, size = over["documents"], over["chunks"], over["size_bytes"]
    tenants, cache, version = (
        over["tenants"],
        over["embedding_cache_entries"],
        over["schema_version"],
    )
    return {
        "collection": index.collection.name,
        "embedder": index.collection.embedder,
        "dim": index.collection.dim,
        "analyzer": index.collection.analyzer,
        **_analyzer_upgrade(index.collection.analyzer),
        "chunker": index.collection.chunker,
        "documents": docs,
        "chunks": int(chunks),
        "tenants": tenants,
        "embedding_cache_entries": cache,
        "schema_version": version,
        "database": index.settings.database_url
        and "external"
        or f"embedded ({Path(index.settings.data_dir).resolve()})",
        "database_bytes": size,
        "index_version": next(
            (
                v.version
                for v in list_versions(index.db, index.settings.collection)
                if v.state == "active"
            ),
            1,
        ),
        **_vector_index(index, int(chunks)),
        "freshness": freshness(index.db, index.collection, check_sources=check_sources),
        **_replication(index),
        **embedder_coverage(index),
    }


def _vector_index(index: Any, chunks: int) -> dict[str, Any]:
    """The HNSW index's state, and what to do when a killed load left it out."""
    state = vector_index_state(index.db, index.collection)
    out: dict[str, Any] = {"vector_index": state}
    if state == "exact":
        graph_from = _collections.GRAPH_FROM
        out["vector_index_note"] = (
            f"no HNSW graph under {graph_from:,} chunks: vector search compares every "
            f"permitted chunk (exact); the load that reaches {graph_from:,} builds the graph"
        )
    if chunks and state in ("missing", "invalid"):
        out["vector_index_warning"] = (
            f"the vector index is {state} (a load was interrupted before building it): "
            "vector search reads every chunk until it is rebuilt; the next ingest or sync "
            "rebuilds it, even of unchanged files (e.g. `ragline ingest DIR` again)"
        )
    return out


def _replication(index: Any) -> dict[str, Any]:
    """Replica lag (the read-your-writes gap) when reads go to replicas, the ingest
    queue, the Citus workers."""
    out: dict[str, Any] = {}
    urls = index.settings.read_urls()
    if urls:
        if index.read_db is index.db:
            out["replicas"] = {"reads_from": "primary (read_from_primary)", "urls": len(urls)}
        else:
            out["replicas"] = index.read_db.lag()
    from .store.queue import queue_status

    tasks = queue_status(index.db)
    if tasks:
        out["ingest_queue"] = tasks
    if index.db.distributed:
        with index.db.connection() as conn:
            workers = conn.execute(
                "SELECT node_name || ':' || node_port FROM citus_get_active_worker_nodes() ORDER BY 1"
            ).fetchall()
        out["citus_workers"] = [w[0] for w in workers]
    return out


def _analyzer_upgrade(stored: str) -> dict[str, str]:
    """A note when the collection was built with an older analysis than this ragline's."""
    from .analysis.analyzer import ANALYSIS_VERSION, MultiAnalyzer

    built = MultiAnalyzer.from_name(stored)
    if built is None or built.version >= ANALYSIS_VERSION:
        return {}
    better = []
    if built.version < 3:
        better.append("Czech and Hungarian better (inflections, text typed without accents)")
    better.append("words with invisible characters inside (zero-width space, soft hyphen) whole")
    return {
        "analyzer_upgrade": f"built with analysis v{built.version}; v{ANALYSIS_VERSION} analyzes "
        + " and ".join(better)
        + ": `ragline index build` re-indexes into it, `ragline index activate` switches"
    }


def embedder_coverage(index: Any) -> dict[str, Any]:
    """A warning when the collection holds documents in languages its embedder does not
    cover (an English-only model under Hungarian documents), with the fix; {} otherwise."""
    from .embed import embedder_languages

    if index.collection is None:
        return {}
    covered = embedder_languages(index.collection.embedder)
    if covered is None:
        return {}
    with index.db.connection() as conn:
        rows = conn.execute(
            "SELECT language, count(*) FROM documents WHERE collection_id = %s AND is_current "
            "AND language IS NOT NULL AND language NOT IN ('und', '') GROUP BY language "
            "ORDER BY count(*) DESC, language",
            (index.collection.id,),
        ).fetchall()
    outside = {lang: n for lang, n in rows if lang not in covered}
    if not outside:
        return {}
    n = sum(outside.values())
    langs = ", ".join(f"{lang} ({k})" for lang, k in outside.items())
    return {
        "embedder_warning": (
            f"{n} document{'s' if n != 1 else ''} in {langs} but the embedder "
            f"{index.collection.embedder} covers only {', '.join(sorted(covered))}: the vector "
            "leg finds them poorly (BM25 still does). Fix: `ragline index build --embedder e5` "
            "builds a multilingual version beside this one, then `ragline index activate "
            "VERSION` switches to it"
        ),
        "languages_not_covered": outside,
    }
