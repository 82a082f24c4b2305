"""Document lifecycle in the store: write a version atomically, delete, look up.

A document's row, chunks, BM25 postings and vectors are written in ONE transaction; a
re-ingest deletes the previous version in that same transaction, so readers see either
the old version or the new one, never a mix, and a killed process leaves the old one.
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


@dataclass(frozen=True)
class DocumentWrite:
    """One new version of a document, ready to store."""

    doc_key: str
    source_uri: str
    title: str
    media_type: str
    content_hash: str
    tenant: str
    groups: Sequence[str]
    metadata: Mapping[str, Any]
    chunks: Sequence[PreparedChunk]
    modified_at: datetime | None = None
    language: str | None = None
    content: Mapping[str, Any] | None = None


def write_document(
    db: Database, collection: Collection, *, keep_versions: int = 0, **fields: Any
) -> DocumentRecord:
    """Store a new version of a document, replacing the current one atomically."""
    (result,) = write_documents(
        db, collection, [DocumentWrite(**fields)], keep_versions=keep_versions
    )
    if isinstance(result, Exception):
        raise result
    return result


DEADLOCK_RETRIES = 3


def write_documents(
    db: Database,
    collection: Collection,
    writes: Sequence[DocumentWrite],
    *,
    keep_versions: int = 0,
) -> list[DocumentRecord | Exception]:
    """Store several documents in one transaction, each one atomically: a document that
    fails (its error is returned in its place) leaves nothing behind, the others commit.

    A batch lets the BM25 index take the batch's postings as one block per list and pays
    one commit. A deadlock with a concurrent writer (both changing the same posting lists)
    is retried; the last try writes each document in a transaction of its own.
    """
    import psycopg

    order = sorted(range(len(writes)), key=lambda i: (writes[i].tenant, writes[i].doc_key))
    for attempt in range(DEADLOCK_RETRIES + 1):
        try:
            if attempt < DEADLOCK_RETRIES:
                got = _write_batch(db, collection, [writes[i] for i in order], keep_versions)
            else:
                got = [_write_batch(db, collection, [writes[i]], keep_versions)[0] for i in order]
        except psycopg.errors.DeadlockDetected:
            if attempt == DEADLOCK_RETRIES:
                raise
            continue
        out: dict[int, DocumentRecord | Exception] = dict(zip(order, got))
        return [out[i] for i in range(len(writes))]
    raise AssertionError("unreachable")


def _write_batch(
    db: Database, collection: Collection, writes: Sequence[DocumentWrite], keep_versions: int
) -> list[DocumentRecord | Exception]:
    import psycopg

    from .bm25_write import Changes

    results: list[DocumentRecord | Exception] = []
    changes: dict[str, Changes] = {}
    with db.connection() as conn:
        # Atomicity is untouched (the transaction is all or nothing); only the fsync wait
        # at commit is skipped: an OS crash may lose the last few commits, which the next
        # ingest of the unchanged sources redoes.
        conn.execute("SET LOCAL synchronous_commit = off")
        for w in writes:
            ch = changes.setdefault(w.tenant, Changes(collection.id, w.tenant))
            mark = (len(ch.removed), len(ch.added))
            try:
                with conn.transaction():
                    doc = _write_one(db, conn, collection, w, keep_versions, ch)
            except psycopg.errors.DeadlockDetected:
                raise
            except psycopg.Error as exc:
                del ch.removed[mark[0] :], ch.added[mark[1] :]  # rolled back with it
                results.append(exc)
                continue
            results.append(doc)
        for tenant in sorted(changes):
            changes[tenant].apply(conn)
    return results


def _write_one(
    db: Database,
    conn: Any,
    collection: Collection,
    w: DocumentWrite,
    keep_versions: int,
    changes: Any,
) -> DocumentRecord:
    """The document row, its chunks and parents, the old version retired or deleted; the
    BM25 changes go to ``changes``, applied with the batch's."""
    from . import bm25

    tenant, groups = w.tenant, sorted(set(w.groups))
    _lock_key(conn, collection, tenant, w.doc_key)
    old = conn.execute(
        "SELECT id, version FROM documents WHERE collection_id = %s AND tenant = %s "
        "AND doc_key = %s AND is_current",
        (collection.id, tenant, w.doc_key),
    ).fetchone()
    version = 1
    if old is not None:
        version = old[1] + 1
        if keep_versions <= 0:
            _delete_documents(conn, [old[0]], changes)
        # keep at most `keep_versions` old versions (a version number is never reused)
        expired = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM documents WHERE collection_id = %s AND tenant = %s AND doc_key = %s "
                "AND NOT is_current AND version <= %s",
                (collection.id, tenant, w.doc_key, version - 1 - keep_versions),
            )
        ]
        _delete_documents(conn, expired, changes)
        # every stored version is readable under the current version's groups, and no other
        history = _version_ids(conn, collection, tenant, w.doc_key)
        _relabel(db, conn, collection, tenant, history, groups, False, changes)
    r = conn.execute(
        "INSERT INTO documents (collection_id, doc_key, source_uri, title, media_type, content_hash, "
        "version, tenant, groups, metadata, language, modified_at, n_chunks, content) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
        f"RETURNING {_DOC_COLS}",
        (
            collection.id,
            w.doc_key,
            w.source_uri,
            w.title,
            w.media_type,
            w.content_hash,
            version,
            tenant,
            groups,
            json.dumps(dict(w.metadata), default=str),
            w.language,
            w.modified_at,
            len(w.chunks),
            None if w.content is None else json.dumps(dict(w.content), default=str),
        ),
    ).fetchone()
    doc = _doc(r)
    klass = bm25.class_id(conn, collection.id, tenant, groups, True, db=db)
    changes.add(klass, _copy_chunks(conn, collection, doc.id, tenant, groups, klass, w.chunks))
    return doc


def _relabel(
    db: Database | None,
    conn: Any,
    collection: Collection,
    tenant: str,
    doc_ids: Sequence[int],
    groups: Sequence[str],
    current: bool | None,
    changes: Any,
) -> None:
    """Give documents ``groups`` (and ``current`` when given): rows, chunks and the BM25
    class their postings are in."""
    from . import bm25
    from .bm25_write import IndexedChunks

    groups = sorted(set(groups))
    docs = conn.execute(
        "SELECT id, is_current, groups FROM documents WHERE id = ANY(%s) ORDER BY id",
        (list(doc_ids),),
    ).fetchall()
    for doc_id, is_cur, old_groups in docs:
        target = is_cur if current is None else current
        if list(old_groups) == groups and is_cur == target:
            continue
        rows = changes.remove_documents(conn, [doc_id])
        klass = bm25.class_id(conn, collection.id, tenant, groups, target, db=db)
        conn.execute(
            "UPDATE documents SET groups = %s, is_current = %s WHERE id = %s", (groups, target, doc_id)
        )
        conn.execute(
            "UPDATE chunks SET groups = %s, is_current = %s, bm25_class = %s WHERE document_id = %s",
            (groups, target, klass, doc_id),
        )
        changes.add(klass, IndexedChunks.of_rows(rows))


def _copy_chunks(
    conn: Any,
    collection: Collection,
    doc_id: int,
    tenant: str,
    groups: Sequence[str],
    klass: int,
    chunks: Sequence[PreparedChunk],
) -> Any:
    from .bm25_write import IndexedChunks, forward_index

    if not chunks:
        return IndexedChunks([], [], [], [])
    ids = [
        x[0]
        for x in conn.execute(
            "SELECT nextval(pg_get_serial_sequence('chunks', 'id')) FROM generate_series(1, %s)",
            (len(chunks),),
        )
    ]
    fwd = [forward_index(pc.terms) for pc in chunks]
    dls = [sum(pc.terms.values()) for pc in chunks]
    with conn.cursor() as cur:
        with cur.copy(
            "COPY chunks (id, document_id, collection_id, tenant, groups, ordinal, heading_path, "
            "page, char_start, char_end, header, text, token_count, n_terms, text_hash, embedding, "
            "parent_ordinal, terms, tfs, bm25_class) FROM STDIN"
        ) as cp:
            for cid, pc, (terms, tfs), dl in zip(ids, chunks, fwd, dls):
                c = pc.chunk
                cp.write_row(
                    (
                        cid,
                        doc_id,
                        collection.id,
                        tenant,
                        groups,
                        c.ordinal,
                        list(c.heading_path),
                        c.page,
                        c.char_start,
                        c.char_end,
                        c.header,
                        c.text,
                        c.token_count,
                        dl,
                        pc.text_hash,
                        pc.embedding,
                        c.parent.ordinal if c.parent is not None else None,
                        terms,
                        tfs,
                        klass,
                    )
                )
        parents = {
            pc.chunk.parent.ordinal: pc.chunk.parent for pc in chunks if pc.chunk.parent is not None
        }
        if parents:
            with cur.copy(
                "COPY chunk_parents (document_id, ordinal, heading_path, page, char_start, "
                "char_end, header, text, token_count) FROM STDIN"
            ) as cp:
                for p in parents.values():
                    cp.write_row(
                        (
                            doc_id,
                            p.ordinal,
                            list(p.heading_path),
                            p.page,
                            p.char_start,
                            p.char_end,
                            p.header,
                            p.text,
                            p.token_count,
                        )
                    )
    return IndexedChunks(ids, [f[0] for f in fwd], [f[1] for f in fwd], dls)


def _delete_documents(conn: Any, doc_ids: Sequence[int], changes: Any) -> int:
    """Delete document versions with everything derived from them (their BM25 postings
    leave with ``changes``)."""
    if not doc_ids:
        return 0
    changes.remove_documents(conn, doc_ids)
    return conn.execute("DELETE FROM documents WHERE id = ANY(%s)", (list(doc_ids),)).rowcount


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
        _relabel(db, conn, collection, tenant, ids, groups, None, changes)
        changes.apply(conn)
        return True


def delete_document(db: Database, collection: Collection, tenant: str, doc_key: str) -> int:
    """Delete every version of a document and everything derived from it; returns rows removed."""
    from .bm25_write import Changes

    with db.connection() as conn:
        _lock_key(conn, collection, tenant, doc_key)
        changes = Changes(collection.id, tenant)
        removed = _delete_documents(conn, _version_ids(conn, collection, tenant, doc_key), changes)
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


def cached_embeddings(db: Database, model_id: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
    hashes = list(set(hashes))
    if not hashes:
        return {}
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT text_hash, embedding FROM embedding_cache WHERE model_id = %s AND text_hash = ANY(%s)",
            (model_id, hashes),
        )
        return {h: v for h, v in rows}


def store_embeddings(db: Database, model_id: str, items: Mapping[str, np.ndarray]) -> None:
    if not items:
        return
    with db.connection() as conn, conn.cursor() as cur:
        cur.execute(
            "CREATE TEMP TABLE IF NOT EXISTS _emb_in (text_hash text, embedding vector) ON COMMIT DELETE ROWS"
        )
        with cur.copy("COPY _emb_in (text_hash, embedding) FROM STDIN") as cp:
            for h, v in items.items():
                cp.write_row((h, v))
        cur.execute(
            "INSERT INTO embedding_cache (model_id, text_hash, embedding) "
            "SELECT %s, text_hash, embedding FROM _emb_in ON CONFLICT DO NOTHING",
            (model_id,),
        )


def chunks_without_embeddings(
    db: Database, collection: Collection, limit: int = 256
) -> list[tuple[int, str]]:
    """(chunk id, indexed text) of chunks stored without a vector (BM25-only ingests)."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT id, CASE WHEN header = '' THEN text ELSE header || E'\\n\\n' || text END "
            "FROM chunks WHERE collection_id = %s AND embedding IS NULL ORDER BY id LIMIT %s",
            (collection.id, limit),
        ).fetchall()
    return [(int(r[0]), r[1]) for r in rows]


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
            "UPDATE documents SET doc_key = %s, source_uri = %s, modified_at = coalesce(%s, modified_at) "
            "WHERE collection_id = %s AND tenant = %s AND doc_key = %s AND is_current RETURNING id",
            (new_key, source_uri, modified_at, collection.id, tenant, old_key),
        ).fetchone()
        return r is not None


def purge_document(
    db: Database, collection: Collection, tenant: str, doc_key: str
) -> dict[str, int]:
    """Erase a document completely ("right to be forgotten").

    Deletes every version with its chunks, BM25 postings and vectors, removes the vectors of
    its chunk texts from the embedding cache, then VACUUMs the affected tables so the
    deleted rows are physically reclaimed rather than left as dead tuples.
    """
    from .bm25_write import Changes

    with db.connection() as conn:
        _lock_key(conn, collection, tenant, doc_key)
        hashes = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT c.text_hash FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE d.collection_id = %s AND d.tenant = %s AND d.doc_key = %s",
                (collection.id, tenant, doc_key),
            )
        ]
        ids = _version_ids(conn, collection, tenant, doc_key)
        changes = Changes(collection.id, tenant)
        docs = _delete_documents(conn, ids, changes)
        changes.apply(conn)
        traces = purge_for(db, ids, conn)
        cache = conn.execute(
            "DELETE FROM embedding_cache WHERE model_id = %s AND text_hash = ANY(%s)",
            (collection.embedder, hashes),
        ).rowcount
        # report this transaction's dead rows at commit, so the VACUUM below sees them
        # counted (statistics are otherwise flushed up to a second later)
        conn.execute("SELECT pg_stat_force_next_flush()")
    if docs:
        with db.connection() as conn:
            conn.autocommit = True
            try:
                for table in (
                    "bm25_blocks",
                    "bm25_terms",
                    "chunks",
                    "documents",
                    "embedding_cache",
                    "traces",
                ):
                    conn.execute(f"VACUUM {table}")
            finally:
                conn.autocommit = False
    return {"versions": docs, "cache_entries": cache, "traces": traces}


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
