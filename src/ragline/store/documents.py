"""Document lifecycle in the store: look up, delete, purge, re-label, rename.

Writing versions is :mod:`.writes`. A document's row, chunks, BM25 postings and vectors
are written in ONE transaction; a re-ingest deletes the previous version in that same
transaction, so readers see either the old version or the new one, never a mix, and a
killed process leaves the old one.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.types import Chunk
from .collections import Collection
from .db import Database
from .params import vector_binary
from .traces import purge_for

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class DocumentRecord:
    id: int
    doc_key: str
    source_uri: str
    title: str
    media_type: str
    content_hash: str
    version: int
    tenant: str
    groups: tuple[str, ...]
    n_chunks: int
    ingested_at: datetime
    metadata: Mapping[str, Any] = field(default_factory=dict)
    has_content: bool = True
    """The parsed document is stored (index versions rebuild from it)."""


@dataclass(frozen=True)
class PreparedChunk:
    """A chunk ready to store: its vector, its BM25 terms and its text hash."""

    chunk: Chunk
    embedding: np.ndarray | None
    terms: Counter[str]
    text_hash: str


_DOC_COLS = (
    "id, doc_key, source_uri, title, media_type, content_hash, version, tenant, groups, "
    "n_chunks, ingested_at, metadata, content IS NOT NULL"
)


def _doc(r: Any) -> DocumentRecord:
    return DocumentRecord(
        id=r[0],
        doc_key=r[1],
        source_uri=r[2],
        title=r[3],
        media_type=r[4],
        content_hash=r[5],
        version=r[6],
        tenant=r[7],
        groups=tuple(r[8]),
        n_chunks=r[9],
        ingested_at=r[10],
        metadata=r[11] or {},
        has_content=bool(r[12]),
    )


def _lock_key(conn: Any, collection: Collection, tenant: str, doc_key: str) -> None:
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
        (f"doc:{collection.id}:{tenant}:{doc_key}",),
    )


def get_document(
    db: Database, collection: Collection, tenant: str, doc_key: str
) -> DocumentRecord | None:
    with db.connection() as conn:
        r = conn.execute(
            f"SELECT {_DOC_COLS} FROM documents WHERE collection_id = %s AND tenant = %s "
            "AND doc_key = %s AND is_current",
            (collection.id, tenant, doc_key),
        ).fetchone()
        return _doc(r) if r else None


def get_document_by_id(
    db: Database, collection: Collection, tenant: str, doc_id: int
) -> DocumentRecord | None:
    """The current document ``doc_id`` if it belongs to ``tenant`` (else None, the same as
    a missing id)."""
    if not -(2**63) <= doc_id < 2**63:
        return None
    with db.connection() as conn:
        r = conn.execute(
            f"SELECT {_DOC_COLS} FROM documents WHERE id = %s AND collection_id = %s "
            "AND tenant = %s AND is_current",
            (doc_id, collection.id, tenant),
        ).fetchone()
        return _doc(r) if r else None


def current_documents(
    db: Database, collection: Collection, tenant: str, keys: Sequence[str]
) -> dict[str, DocumentRecord]:
    """The current versions of ``keys`` by key (one query for a batch of sources)."""
    if not keys:
        return {}
    with db.connection() as conn:
        rows = conn.execute(
            f"SELECT {_DOC_COLS} FROM documents WHERE collection_id = %s AND tenant = %s "
            "AND doc_key = ANY(%s) AND is_current",
            (collection.id, tenant, list(keys)),
        ).fetchall()
    return {r[1]: _doc(r) for r in rows}


def current_versions(
    db: Database, collection: Collection, tenant: str, keys: Sequence[str]
) -> dict[str, tuple[str, tuple[str, ...]]]:
    """``doc_key → (content_hash, groups)`` of the current versions of ``keys`` (one query
    for a batch, instead of listing the tenant's every document)."""
    if not keys:
        return {}
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT doc_key, content_hash, groups FROM documents WHERE collection_id = %s "
            "AND tenant = %s AND doc_key = ANY(%s) AND is_current",
            (collection.id, tenant, list(keys)),
        ).fetchall()
    return {r[0]: (r[1], tuple(r[2])) for r in rows}


def list_documents(
    db: Database, collection: Collection, tenant: str | None = None
) -> list[DocumentRecord]:
    with db.connection() as conn:
        if tenant is None:
            rows = conn.execute(
                f"SELECT {_DOC_COLS} FROM documents WHERE collection_id = %s AND is_current ORDER BY doc_key",
                (collection.id,),
            )
        else:
            rows = conn.execute(
                f"SELECT {_DOC_COLS} FROM documents WHERE collection_id = %s AND tenant = %s "
                "AND is_current ORDER BY doc_key",
                (collection.id, tenant),
            )
        return [_doc(r) for r in rows]


def list_versions(
    db: Database, collection: Collection, tenant: str, doc_key: str
) -> list[DocumentRecord]:
    """Every stored version of a document, newest first."""
    with db.connection() as conn:
        rows = conn.execute(
            f"SELECT {_DOC_COLS} FROM documents WHERE collection_id = %s AND tenant = %s AND doc_key = %s "
            "ORDER BY version DESC",
            (collection.id, tenant, doc_key),
        )
        return [_doc(r) for r in rows]


def update_groups(
    db: Database, collection: Collection, tenant: str, doc_key: str, groups: Sequence[str]
) -> bool:
    """Change who may read a document without re-embedding it: every stored version, its
    chunks and its BM25 postings together."""
    from .bm25_write import Changes

    with db.connection() as conn:
        _lock_key(conn, collection, tenant, doc_key)
        ids = _version_ids(conn, collection, tenant, doc_key)
        if not conn.execute(
            "SELECT 1 FROM documents WHERE id = ANY(%s) AND is_current", (ids,)
        ).fetchone():
            return False
        changes = Changes(collection.id, tenant)
        from .writes import _relabel

        _relabel(db, conn, collection, tenant, ids, groups, None, changes)
        changes.apply(conn)
        return True


def delete_document(db: Database, collection: Collection, tenant: str, doc_key: str) -> int:
    """Delete every version of a document and everything derived from it; returns rows removed."""
    from .bm25_write import Changes
    from .writes import delete_versions

    with db.connection() as conn:
        _lock_key(conn, collection, tenant, doc_key)
        changes = Changes(collection.id, tenant)
        removed = delete_versions(conn, _version_ids(conn, collection, tenant, doc_key), changes)
        changes.apply(conn)
        return removed


def _version_ids(conn: Any, collection: Collection, tenant: str, doc_key: str) -> list[int]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT id FROM documents WHERE collection_id = %s AND tenant = %s AND doc_key = %s",
            (collection.id, tenant, doc_key),
        )
    ]


def cached_embeddings(
    db: Database, model_id: str, tenant: str, hashes: Iterable[str]
) -> dict[str, np.ndarray]:
    """Vectors ``model_id`` made for these text hashes of ``tenant`` before. The cache is
    per tenant: a hit never tells a tenant that another one holds the same text."""
    hashes = list(set(hashes))
    if not hashes:
        return {}
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT text_hash, embedding FROM embedding_cache WHERE model_id = %s "
            "AND tenant = %s AND text_hash = ANY(%s)",
            (model_id, tenant, hashes),
        )
        return {h: v for h, v in rows}


def store_embeddings(
    db: Database, model_id: str, tenant: str, items: Mapping[str, np.ndarray]
) -> None:
    if not items:
        return
    with db.connection() as conn, conn.cursor() as cur:
        cur.execute(
            "CREATE TEMP TABLE IF NOT EXISTS _emb_in (text_hash text, embedding vector) ON COMMIT DELETE ROWS"
        )
        with cur.copy("COPY _emb_in (text_hash, embedding) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["text", "bytea"])  # the vector as pgvector's binary format
            for h, v in items.items():
                cp.write_row((h, vector_binary(v)))
        cur.execute(
            "INSERT INTO embedding_cache (model_id, tenant, text_hash, embedding) "
            "SELECT %s, %s, text_hash, embedding FROM _emb_in ON CONFLICT DO NOTHING",
            (model_id, tenant),
        )


def chunks_without_embeddings(
    db: Database, collection: Collection, limit: int = 256
) -> list[tuple[int, str, str]]:
    """(chunk id, tenant, indexed text) of chunks stored without a vector (BM25-only
    ingests)."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT id, tenant, CASE WHEN header = '' THEN text ELSE header || E'\\n\\n' || text END "
            "FROM chunks WHERE collection_id = %s AND embedding IS NULL ORDER BY id LIMIT %s",
            (collection.id, limit),
        ).fetchall()
    return [(int(r[0]), r[1], r[2]) for r in rows]


def set_embeddings(db: Database, ids: Sequence[int], vectors: Sequence[np.ndarray]) -> None:
    with db.connection() as conn, conn.cursor() as cur:
        cur.executemany("UPDATE chunks SET embedding = %s WHERE id = %s", list(zip(vectors, ids)))


def rename_document(
    db: Database,
    collection: Collection,
    tenant: str,
    old_key: str,
    new_key: str,
    source_uri: str,
    modified_at: datetime | None,
) -> bool:
    """Move a document to a new key/path in place: its chunks and vectors stay as they are."""
    with db.connection() as conn:
        for key in sorted((old_key, new_key)):
            _lock_key(conn, collection, tenant, key)
        r = conn.execute(
            "UPDATE documents SET doc_key = %s, source_uri = %s, source_mtime = coalesce(%s, source_mtime) "
            "WHERE collection_id = %s AND tenant = %s AND doc_key = %s AND is_current RETURNING id",
            (new_key, source_uri, modified_at, collection.id, tenant, old_key),
        ).fetchone()
        return r is not None


def purge_document(
    db: Database, collection: Collection, tenant: str, doc_key: str, *, erase: bool = True
) -> dict[str, Any]:
    """Erase a document completely ("right to be forgotten").

    Deletes every version with its chunks, BM25 postings and vectors, the traces that
    mention it, the tenant's cached vectors of its chunk texts and its key in the tenant's
    job and failure records; then (``erase``) rewrites the tables so no byte of it stays in
    any file (:func:`ragline.store.erasure.erase_dead_rows`). Purging several documents,
    pass ``erase=False`` and call that once at the end.
    """
    from .bm25_write import Changes
    from .erasure import erase_dead_rows, scrub_records
    from .writes import delete_versions

    with db.connection() as conn:
        _lock_key(conn, collection, tenant, doc_key)
        hashes = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT c.text_hash FROM chunks c "
                "JOIN documents d ON d.tenant = c.tenant AND d.id = c.document_id "
                "WHERE d.collection_id = %s AND d.tenant = %s AND d.doc_key = %s",
                (collection.id, tenant, doc_key),
            )
        ]
        rows = conn.execute(
            "SELECT id, source_uri FROM documents WHERE collection_id = %s AND tenant = %s "
            "AND doc_key = %s",
            (collection.id, tenant, doc_key),
        ).fetchall()
        ids = [r[0] for r in rows]
        traces = purge_for(db, ids, conn)  # before the delete, whose trigger would too
        changes = Changes(collection.id, tenant)
        docs = delete_versions(conn, ids, changes)
        changes.apply(conn)
        cache = conn.execute(
            "DELETE FROM embedding_cache WHERE model_id = %s AND tenant = %s "
            "AND text_hash = ANY(%s)",
            (collection.embedder, tenant, hashes),
        ).rowcount
        if docs:
            upload = [doc_key.removeprefix("upload:")] if doc_key.startswith("upload:") else []
            scrub_records(conn, tenant, [doc_key, *(r[1] for r in rows)], upload)
    out: dict[str, Any] = {"versions": docs, "cache_entries": cache, "traces": traces}
    if docs and erase:
        out["erasure"] = erase_dead_rows(db)
    return out


def merge_metadata(
    db: Database, collection: Collection, tenant: str, doc_key: str, extra: Mapping[str, Any]
) -> bool:
    """Merge user metadata into the current version of a document (no re-embedding)."""
    with db.connection() as conn:
        _lock_key(conn, collection, tenant, doc_key)
        r = conn.execute(
            "UPDATE documents SET metadata = metadata || %s::jsonb WHERE collection_id = %s AND tenant = %s "
            "AND doc_key = %s AND is_current RETURNING id",
            (json.dumps(dict(extra), default=str), collection.id, tenant, doc_key),
        ).fetchone()
        return r is not None
