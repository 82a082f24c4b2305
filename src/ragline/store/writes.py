"""Writing document versions: atomically, in batches, with their BM25 changes.

A batch of documents is one transaction. New documents (no current version yet) are
written together — one lock statement, one COPY of documents, one of chunks (binary,
vectors included) — under one savepoint; should that fail, each is written on its own so
the failing one is reported and the others commit. Documents that replace a version go
one by one, each under a savepoint. Every document is all or nothing: readers see the old
version or the new one, never a mix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .collections import Collection
from .db import Database
from .documents import _DOC_COLS, DocumentRecord, PreparedChunk, _doc, _lock_key, _version_ids


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
    """The document's own date when it states one, else its source's modification time."""
    language: str | None = None
    content: Mapping[str, Any] | None = None
    source_mtime: datetime | None = None
    """The source file's modification time (what freshness compares against)."""


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

    results: list[DocumentRecord | Exception | None] = [None] * len(writes)
    changes: dict[str, Changes] = {}

    def changes_of(tenant: str) -> Changes:
        return changes.setdefault(tenant, Changes(collection.id, tenant))

    with db.connection() as conn:
        # Atomicity is untouched (the transaction is all or nothing); only the fsync wait
        # at commit is skipped: an OS crash may lose the last few commits, which the next
        # ingest of the unchanged sources redoes.
        conn.execute("SET LOCAL synchronous_commit = off")
        keys = sorted({(w.tenant, w.doc_key) for w in writes})
        conn.execute(  # every document lock of the batch, in key order
            "SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest(%s::text[]) WITH ORDINALITY u(k, o) "
            "ORDER BY o",
            ([f"doc:{collection.id}:{t}:{k}" for t, k in keys],),
        )
        current = {
            (r[0], r[1])
            for r in conn.execute(
                "SELECT d.tenant, d.doc_key FROM documents d JOIN unnest(%s::text[], %s::text[]) u(t, k) "
                "ON d.tenant = u.t AND d.doc_key = u.k WHERE d.collection_id = %s AND d.is_current",
                ([t for t, _ in keys], [k for _, k in keys], collection.id),
            )
        }
        seen: dict[tuple[str, str], int] = {}
        for w in writes:
            seen[(w.tenant, w.doc_key)] = seen.get((w.tenant, w.doc_key), 0) + 1
        new = [
            i
            for i, w in enumerate(writes)
            if (w.tenant, w.doc_key) not in current and seen[(w.tenant, w.doc_key)] == 1
        ]
        new_set = set(new)
        one_by_one = [i for i in range(len(writes)) if i not in new_set]
        if new:
            marks = {t: (len(c.removed), len(c.added)) for t, c in changes.items()}
            try:
                with conn.transaction():
                    docs = _insert_new(db, conn, collection, [writes[i] for i in new], changes_of)
                for i, d in zip(new, docs):
                    results[i] = d
            except psycopg.errors.DeadlockDetected:
                raise
            except psycopg.Error:  # find the document that failed: each on its own
                for t, c in changes.items():
                    r, a = marks.get(t, (0, 0))
                    del c.removed[r:], c.added[a:]
                one_by_one = sorted(one_by_one + new)
        for i in one_by_one:
            w = writes[i]
            ch = changes_of(w.tenant)
            mark = (len(ch.removed), len(ch.added))
            try:
                with conn.transaction():
                    results[i] = _write_one(db, conn, collection, w, keep_versions, ch)
            except psycopg.errors.DeadlockDetected:
                raise
            except psycopg.Error as exc:
                del ch.removed[mark[0] :], ch.added[mark[1] :]  # rolled back with it
                results[i] = exc
        for tenant in sorted(changes):
            changes[tenant].apply(conn)
    return results  # type: ignore[return-value]


def _insert_new(
    db: Database,
    conn: Any,
    collection: Collection,
    writes: Sequence[DocumentWrite],
    changes_of: Any,
) -> list[DocumentRecord]:
    """Version 1 of documents that have no current version: rows, chunks, parents."""
    from . import bm25

    n_chunks = sum(len(w.chunks) for w in writes)
    now, doc_ids, chunk_ids = conn.execute(
        "SELECT now(), "
        "array(SELECT nextval(pg_get_serial_sequence('documents', 'id')) FROM generate_series(1, %s)), "
        "array(SELECT nextval(pg_get_serial_sequence('chunks', 'id')) FROM generate_series(1, %s))",
        (len(writes), n_chunks),
    ).fetchone()
    classes: dict[tuple[str, tuple[str, ...]], int] = {}
    for w in writes:  # before the COPY: the connection runs one statement at a time
        key = (w.tenant, tuple(sorted(set(w.groups))))
        if key not in classes:
            classes[key] = bm25.class_id(conn, collection.id, key[0], key[1], True, db=db)
    records, rows = [], []
    with (
        conn.cursor() as cur,
        cur.copy(
            "COPY documents (id, collection_id, doc_key, source_uri, title, media_type, content_hash, version, "
            "tenant, groups, metadata, language, modified_at, n_chunks, content, ingested_at, "
            "source_mtime) FROM STDIN"
        ) as cp,
    ):
        for doc_id, w in zip(doc_ids, writes):
            groups = tuple(sorted(set(w.groups)))
            meta = json.dumps(dict(w.metadata), default=str)
            cp.write_row(
                (
                    doc_id,
                    collection.id,
                    w.doc_key,
                    w.source_uri,
                    w.title,
                    w.media_type,
                    w.content_hash,
                    1,
                    w.tenant,
                    list(groups),
                    meta,
                    w.language,
                    w.modified_at,
                    len(w.chunks),
                    None if w.content is None else json.dumps(dict(w.content), default=str),
                    now,
                    w.source_mtime,
                )
            )
            records.append(
                DocumentRecord(
                    id=doc_id,
                    doc_key=w.doc_key,
                    source_uri=w.source_uri,
                    title=w.title,
                    media_type=w.media_type,
                    content_hash=w.content_hash,
                    version=1,
                    tenant=w.tenant,
                    groups=groups,
                    n_chunks=len(w.chunks),
                    ingested_at=now,
                    metadata=json.loads(meta),
                    has_content=w.content is not None,
                )
            )
            rows.append(
                (doc_id, w.tenant, list(groups), classes[(w.tenant, groups)], w.chunks, w.language)
            )
    for (tenant, _groups), klass, indexed in _copy_chunks(conn, collection, rows, chunk_ids):
        changes_of(tenant).add(klass, indexed)
    return records


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
            delete_versions(conn, [old[0]], changes)
        # keep at most `keep_versions` old versions (a version number is never reused)
        expired = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM documents WHERE collection_id = %s AND tenant = %s AND doc_key = %s "
                "AND NOT is_current AND version <= %s",
                (collection.id, tenant, w.doc_key, version - 1 - keep_versions),
            )
        ]
        delete_versions(conn, expired, changes)
        # every stored version is readable under the current version's groups, and no other
        history = _version_ids(conn, collection, tenant, w.doc_key)
        _relabel(db, conn, collection, tenant, history, groups, False, changes)
    r = conn.execute(
        "INSERT INTO documents (collection_id, doc_key, source_uri, title, media_type, content_hash, "
        "version, tenant, groups, metadata, language, modified_at, n_chunks, content, source_mtime) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
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
            w.source_mtime,
        ),
    ).fetchone()
    doc = _doc(r)
    klass = bm25.class_id(conn, collection.id, tenant, groups, True, db=db)
    ids = [
        x[0]
        for x in conn.execute(
            "SELECT nextval(pg_get_serial_sequence('chunks', 'id')) FROM generate_series(1, %s)",
            (len(w.chunks),),
        )
    ]
    for _key, k, indexed in _copy_chunks(
        conn, collection, [(doc.id, tenant, groups, klass, w.chunks, w.language)], ids
    ):
        changes.add(k, indexed)
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
            "UPDATE documents SET groups = %s, is_current = %s WHERE id = %s",
            (groups, target, doc_id),
        )
        conn.execute(
            "UPDATE chunks SET groups = %s, is_current = %s, bm25_class = %s WHERE document_id = %s",
            (groups, target, klass, doc_id),
        )
        changes.add(klass, IndexedChunks.of_rows(rows))


_CHUNK_COPY = (
    "COPY chunks (id, document_id, collection_id, tenant, groups, ordinal, heading_path, page, "
    "char_start, char_end, header, text, token_count, n_terms, text_hash, embedding, parent_ordinal, "
    "terms, tfs, bm25_class) FROM STDIN (FORMAT BINARY)"
)
_CHUNK_TYPES = [
    "int8", "int8", "int4", "text", "bytea", "int4", "bytea", "int4", "int4", "int4", "text",
    "text", "int4", "int4", "text", "bytea", "int4", "text", "bytea", "int8",
]  # fmt: skip
"""The embedding goes as bytes already in pgvector's binary format (:func:`.params.vector_binary`),
the groups and heading path as binary ``text[]`` (:func:`.params.text_array_binary`): COPY
hands a binary field to the column type's receive function as it is."""


def _copy_chunks(
    conn: Any,
    collection: Collection,
    docs: Sequence[tuple[int, str, Sequence[str], int, Sequence[PreparedChunk], str | None]],
    ids: Sequence[int],
) -> list[tuple[tuple[str, tuple[str, ...]], int, Any]]:
    """COPY the chunks (binary: vectors as they are) and parents of ``docs`` — (document id,
    tenant, groups, class, chunks) each — with the chunk ids ``ids``; returns what to index,
    per (tenant, groups) and class."""
    from .bm25_write import IndexedChunks, encode_forward, forward_index
    from .params import text_array_binary, vector_binary

    out: dict[tuple[tuple[str, tuple[str, ...]], int], list[Any]] = {}
    next_id = iter(ids)
    parents_rows: list[tuple[Any, ...]] = []
    with conn.cursor() as cur:
        with cur.copy(_CHUNK_COPY) as cp:
            cp.set_types(_CHUNK_TYPES)
            for doc_id, tenant, groups, klass, chunks, language in docs:
                acc = out.setdefault(((tenant, tuple(groups)), klass), [[], [], [], [], []])
                groups_value = text_array_binary(tuple(groups))
                for pc in chunks:
                    c = pc.chunk
                    cid = next(next_id)
                    terms, tfs = forward_index(pc.terms)
                    dl = sum(pc.terms.values())
                    stored_terms, stored_tfs = encode_forward(terms, tfs)
                    cp.write_row(
                        (
                            cid,
                            doc_id,
                            collection.id,
                            tenant,
                            groups_value,
                            c.ordinal,
                            text_array_binary(tuple(c.heading_path)),
                            c.page,
                            c.char_start,
                            c.char_end,
                            c.header,
                            c.text,
                            c.token_count,
                            dl,
                            pc.text_hash,
                            vector_binary(pc.embedding),
                            c.parent.ordinal if c.parent is not None else None,
                            stored_terms,
                            stored_tfs,
                            klass,
                        )
                    )
                    acc[0].append(cid)
                    acc[1].append(terms)
                    acc[2].append(tfs)
                    acc[3].append(dl)
                    acc[4].append(language or "")
                parents = {
                    pc.chunk.parent.ordinal: pc.chunk.parent
                    for pc in chunks
                    if pc.chunk.parent is not None
                }
                parents_rows.extend(
                    (
                        tenant,
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
                    for p in parents.values()
                )
        if parents_rows:
            with cur.copy(
                "COPY chunk_parents (tenant, document_id, ordinal, heading_path, page, char_start, "
                "char_end, header, text, token_count) FROM STDIN"
            ) as cp:
                for row in parents_rows:
                    cp.write_row(row)
    return [(key, klass, IndexedChunks(*acc)) for (key, klass), acc in out.items()]


def delete_versions(conn: Any, doc_ids: Sequence[int], changes: Any) -> int:
    """Delete document versions with everything derived from them (their BM25 postings
    leave with ``changes``)."""
    if not doc_ids:
        return 0
    changes.remove_documents(conn, doc_ids)
    ids = list(doc_ids)
    # the traces citing them go too (the trigger of migration 0021 does it on one server;
    # on Citus it cannot run on shards, see store/distribution.py)
    conn.execute(
        "DELETE FROM traces WHERE tenant = %s AND document_ids && %s::bigint[]",
        (changes.tenant, ids),
    )
    return conn.execute(
        "DELETE FROM documents WHERE tenant = %s AND id = ANY(%s)", (changes.tenant, ids)
    ).rowcount
