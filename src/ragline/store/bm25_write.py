"""Changing the BM25 index: postings added and removed, statistics kept equal to a recount.

A transaction collects its BM25 changes in a :class:`Changes` while it writes documents
and chunks (new chunks, chunks deleted, chunks moved to another ACL class), then applies
them at once with :meth:`Changes.apply`: one statement locks and updates every affected
``bm25_terms`` row in (term, class) order, then the blocks are written, then the class rows
in class order. Every writer takes these locks in the same global order, after its
document locks, so concurrent writers of one tenant wait for each other but do not
deadlock, and the per-term work of a batch is one statement instead of one per document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from . import bm25_codec as codec
from . import params
from .bm25_topk import Postings

COMPACT_AT = 8
"""A list's small blocks are merged once it has this many."""
MAX_TF = 32767
"""Term frequencies are stored as smallint (a chunk is at most a few hundred tokens)."""

_BLOCK_COPY = (
    "COPY bm25_blocks (collection_id, tenant, term, class_id, first_id, last_id, n, max_tf, "
    "min_dl, data) FROM STDIN (FORMAT BINARY)"
)
_BLOCK_TYPES = ["int4", "text", "text", "int8", "int8", "int8", "int4", "int4", "int4", "bytea"]
_FORWARD = (
    "SELECT c.id, c.bm25_class, c.terms, c.tfs, c.n_terms, coalesce(d.language, '') "
    "FROM chunks c JOIN documents d ON d.tenant = c.tenant AND d.id = c.document_id"
)


@dataclass(frozen=True)
class IndexedChunks:
    """Chunks as the index sees them: ids, their distinct terms with frequencies, and dl."""

    ids: Sequence[int]
    terms: Sequence[Sequence[str]]
    tfs: Sequence[Sequence[int]]
    dls: Sequence[int]
    languages: Sequence[str]
    """The language of each chunk's document ('' when unknown)."""

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def of_rows(cls, rows: Sequence[Any]) -> IndexedChunks:
        """From forward-index rows ``(id, class, terms, tfs, dl, language)``."""
        return cls(
            [int(r[0]) for r in rows],
            [list(r[2]) for r in rows],
            [list(r[3]) for r in rows],
            [int(r[4]) for r in rows],
            [r[5] for r in rows],
        )


def forward_index(terms: dict[str, int]) -> tuple[list[str], list[int]]:
    """A chunk's distinct terms, sorted, and their tf (as stored: :func:`encode_forward`)."""
    keys = sorted(terms)
    tfs = list(map(terms.__getitem__, keys))
    if tfs and max(tfs) > MAX_TF:
        tfs = [min(f, MAX_TF) for f in tfs]
    return keys, tfs


def encode_forward(terms: Sequence[str], tfs: Sequence[int]) -> tuple[str, bytes]:
    """The ``chunks.terms``/``chunks.tfs`` columns: terms joined by spaces (no analyzer term
    holds one) and the frequencies as big-endian uint16 — plain values, cheap to copy."""
    return " ".join(terms), np.asarray(tfs, dtype=">u2").tobytes()


def decode_forward(terms: str, tfs: bytes | memoryview) -> tuple[list[str], list[int]]:
    return (terms.split(" ") if terms else []), np.frombuffer(tfs, dtype=">u2").tolist()


FORWARD_PACKED = (
    "SELECT array_agg(id ORDER BY id), array_agg(n_terms ORDER BY id), "
    "convert_to(string_agg(CASE terms WHEN '' THEN ' ' ELSE ' ' || terms || ' ' END, E'\\n' "
    "ORDER BY id), 'UTF8'), string_agg(tfs, ''::bytea ORDER BY id) "
    "FROM chunks WHERE tenant = %s AND id = ANY(%s::int8[])"
)
"""Forward-index rows of chunk ids, packed by the server into one row: ids, dls, the rows'
terms as one UTF-8 byte string (" t1 t2 … " per row, " " for a row without terms,
newline-separated) and their tfs as one byte string (a value per row costs the client more
than the postings it holds)."""


def packed_forward_postings(
    ids: np.ndarray, dls: np.ndarray, text: bytes, tfs: bytes, terms: Sequence[str]
) -> dict[str, Postings]:
    """The postings of ``terms`` among chunks ``ids`` (sorted, with lengths ``dls``), given
    their forward rows packed as :data:`FORWARD_PACKED` returns them.

    Array work, not a loop over rows: each query term is found in the text by substring
    search, and the term's position in its row (its tf's index) is the count of spaces
    between the row's start and the hit."""
    if len(ids) == 0:
        return {}
    tf_all = np.frombuffer(tfs, dtype=">u2")
    chars = np.frombuffer(text, dtype=np.uint8)
    spaces = np.flatnonzero(chars == 32)
    row_start = np.concatenate(([0], np.flatnonzero(chars == 10) + 1))
    spaces_before_row = np.searchsorted(spaces, row_start)
    # a row " t1 … tn " has n + 1 spaces and n tfs: row r's tfs start at its spaces before,
    # less one per earlier row
    tf_start = spaces_before_row - np.arange(len(row_start))
    out: dict[str, Postings] = {}
    for t in terms:
        pat = f" {t} ".encode()
        hits, at = [], text.find(pat)
        while at >= 0:
            hits.append(at)
            at = text.find(pat, at + 1)
        if not hits:
            continue
        offs = np.array(hits, dtype=np.int64)
        row = np.searchsorted(row_start, offs, side="right") - 1
        pos = np.searchsorted(spaces, offs) - spaces_before_row[row]
        out[t] = (ids[row], tf_all[tf_start[row] + pos].astype(np.int64), dls[row])
    return out


def forward_rows(conn: Any, tenant: str, *, document_ids: Sequence[int]) -> list[Any]:
    """The indexed chunks of ``document_ids`` as ``(id, class, terms, tfs, dl, language)``."""
    rows = conn.execute(
        f"{_FORWARD} WHERE c.tenant = %s AND c.document_id = ANY(%s) "
        "AND c.bm25_class IS NOT NULL ORDER BY c.id",
        (tenant, list(document_ids)),
    ).fetchall()
    return [(r[0], r[1], *decode_forward(r[2], r[3]), r[4], r[5]) for r in rows]


@dataclass
class Changes:
    """The BM25 changes of one transaction in one (collection, tenant)."""

    collection_id: int
    tenant: str
    removed: list[Any] = field(default_factory=list)
    """Forward-index rows ``(id, class, terms, tfs, dl)`` of chunks leaving their class."""
    added: list[tuple[int, IndexedChunks]] = field(default_factory=list)
    """(class, chunks) entering a class."""

    def remove_documents(self, conn: Any, document_ids: Sequence[int]) -> list[Any]:
        """Take the chunks of ``document_ids`` out (call before deleting or moving them)."""
        rows = forward_rows(conn, self.tenant, document_ids=document_ids) if document_ids else []
        self.removed.extend(rows)
        return rows

    def add(self, klass: int, chunks: IndexedChunks) -> None:
        if len(chunks):
            self.added.append((klass, chunks))

    def apply(self, conn: Any) -> None:
        """Write every collected change; then the collection is as if recounted."""
        added_keys = {(i, k) for k, c in self.added for i in c.ids}
        cancelled = {(int(r[0]), int(r[1])) for r in self.removed} & added_keys
        removed = [r for r in self.removed if (int(r[0]), int(r[1])) not in cancelled]
        by_class: dict[int, list[IndexedChunks]] = {}
        for k, c in self.added:
            keep = [j for j, i in enumerate(c.ids) if (i, k) not in cancelled]
            if keep:
                by_class.setdefault(k, []).append(_subset(c, keep))
        # one list per (term, class) for the whole transaction, not one per document
        added = [(k, _concat(parts)) for k, parts in sorted(by_class.items())]
        self.removed, self.added = [], []
        if removed or added:
            _apply(conn, self.collection_id, self.tenant, removed, added)


def _concat(parts: Sequence[IndexedChunks]) -> IndexedChunks:
    if len(parts) == 1:
        return parts[0]
    return IndexedChunks(
        [i for p in parts for i in p.ids],
        [t for p in parts for t in p.terms],
        [f for p in parts for f in p.tfs],
        [d for p in parts for d in p.dls],
        [g for p in parts for g in p.languages],
    )


def _subset(c: IndexedChunks, keep: list[int]) -> IndexedChunks:
    if len(keep) == len(c.ids):
        return c
    return IndexedChunks(
        [c.ids[j] for j in keep],
        [c.terms[j] for j in keep],
        [c.tfs[j] for j in keep],
        [c.dls[j] for j in keep],
        [c.languages[j] for j in keep],
    )


def _postings(
    chunks: IndexedChunks,
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The chunks' postings sorted by (term, chunk id): vocabulary, list starts, ids, tf, dl."""
    flat = list(chain.from_iterable(chunks.terms))
    vocab = {t: i for i, t in enumerate(dict.fromkeys(flat))}
    t_idx = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    lens = np.fromiter((len(t) for t in chunks.terms), dtype=np.int64, count=len(chunks))
    ids = np.repeat(np.asarray(chunks.ids, dtype=np.int64), lens)
    dls = np.repeat(np.asarray(chunks.dls, dtype=np.int64), lens)
    tfs = np.fromiter(chain.from_iterable(chunks.tfs), dtype=np.int64, count=len(flat))
    order = np.lexsort((ids, t_idx))
    t_idx, ids, tfs, dls = t_idx[order], ids[order], tfs[order], dls[order]
    starts = np.flatnonzero(np.diff(t_idx, prepend=-1))
    names = list(vocab)
    return [names[i] for i in t_idx[starts]], starts, ids, tfs, dls


def _copy_blocks(
    conn: Any, collection_id: int, tenant: str, rows: Sequence[tuple[Any, ...]]
) -> None:
    if not rows:
        return
    with conn.cursor() as cur, cur.copy(_BLOCK_COPY) as cp:
        cp.set_types(_BLOCK_TYPES)
        for r in rows:
            cp.write_row((collection_id, tenant, *r))


def _apply(
    conn: Any,
    collection_id: int,
    tenant: str,
    removed: Sequence[Any],
    added: Sequence[tuple[int, IndexedChunks]],
) -> None:
    # per (term, class): [df, max_tf, min_dl, id span, small blocks] changes
    terms: list[str] = []
    classes: list[int] = []
    cols: list[list[int]] = [[], [], [], [], []]
    per_class: dict[int, list[int]] = {}
    langs: dict[tuple[int, str], int] = {}
    # additions: encode the new blocks first (their bounds go into the term rows)
    new_blocks: list[tuple[Any, ...]] = []
    for klass, chunks in added:
        c = per_class.setdefault(klass, [0, 0])
        c[0] += len(chunks)
        c[1] += int(sum(chunks.dls))
        for lang in chunks.languages:
            langs[(klass, lang)] = langs.get((klass, lang), 0) + 1
        if not any(len(t) for t in chunks.terms):
            continue
        names, starts, ids, tfs, dls = _postings(chunks)
        blocks = codec.encode_lists(starts, ids, tfs, dls)
        new_blocks.extend(
            (names[lst], klass, first, last, n, mt, md, data)
            for lst, first, last, n, mt, md, data in blocks.rows()
        )
        lists, *stats = blocks.per_list()
        terms.extend(names[i] for i in lists.tolist())
        classes.extend([klass] * len(lists))
        for col, values in zip(cols, stats):
            col.extend(values.tolist())
    # removals: the lists each removed chunk leaves
    leaving: dict[tuple[str, int], list[int]] = {}
    for cid, klass, chunk_terms, _tfs, dl, lang in removed:
        c = per_class.setdefault(int(klass), [0, 0])
        c[0] -= 1
        c[1] -= int(dl)
        langs[(int(klass), lang)] = langs.get((int(klass), lang), 0) - 1
        for t in chunk_terms:
            leaving.setdefault((t, int(klass)), []).append(int(cid))
    if leaving:
        row_of = {k: i for i, k in enumerate(zip(terms, classes))}  # one class per addition
        for key, cids in leaving.items():
            i = row_of.get(key)
            if i is None:
                terms.append(key[0])
                classes.append(key[1])
                for col, v in zip(cols, (0, 0, 2**31 - 1, 0, 0)):
                    col.append(v)
                i = len(terms) - 1
            cols[0][i] -= len(cids)
    if terms:
        df, max_tf, min_dl, span, small_new = cols
        rows = conn.execute(
            # returns only the rows the rest needs: lists to compact, and with removals all
            "WITH up AS (INSERT INTO bm25_terms AS t (collection_id, tenant, term, class_id, df, "
            "max_tf, min_dl, max_span, small_blocks) "
            "SELECT %s, %s, u.term, u.cls, u.df, u.max_tf, u.min_dl, u.span, u.small FROM "
            "unnest(string_to_array(%s, ' '), %s::int8[], %s::int[], %s::int[], %s::int[], %s::int8[], "
            "%s::int[]) AS u(term, cls, df, max_tf, min_dl, span, small) ORDER BY u.term, u.cls "
            "ON CONFLICT (collection_id, tenant, term, class_id) DO UPDATE SET "
            "df = t.df + EXCLUDED.df, max_tf = greatest(t.max_tf, EXCLUDED.max_tf), "
            "min_dl = least(t.min_dl, EXCLUDED.min_dl), max_span = greatest(t.max_span, EXCLUDED.max_span), "
            "small_blocks = t.small_blocks + EXCLUDED.small_blocks, top = NULL, top_rest = NULL "
            "RETURNING term, class_id, small_blocks, max_span) "
            "SELECT term, class_id, small_blocks, max_span FROM up WHERE small_blocks >= %s OR %s",
            (
                collection_id,
                tenant,
                params.words(terms),
                *map(params.ints, (classes, df, max_tf, min_dl, span, small_new)),
                COMPACT_AT,
                bool(leaving),  # a removal needs its lists' spans and small-block counts
            ),
        ).fetchall()
        spans = {(r[0], int(r[1])): int(r[3]) for r in rows}
        small = {(r[0], int(r[1])): int(r[2]) for r in rows}
        # the term rows are locked now: their lists can change
        if leaving:
            small_fix = _remove_postings(conn, collection_id, tenant, leaving, spans)
            for k, v in small_fix.items():
                small[k] += v
        _copy_blocks(conn, collection_id, tenant, new_blocks)
        if leaving:
            fix = sorted(leaving)
            conn.execute(
                "UPDATE bm25_terms t SET small_blocks = u.small FROM unnest(%s::text[], %s::int8[], %s::int[]) "
                "AS u(term, cls, small) WHERE t.collection_id = %s AND t.tenant = %s AND t.term = u.term "
                "AND t.class_id = u.cls AND t.small_blocks <> u.small",
                (
                    [k[0] for k in fix],
                    [k[1] for k in fix],
                    [small[k] for k in fix],
                    collection_id,
                    tenant,
                ),
            )
            conn.execute(
                "DELETE FROM bm25_terms t USING unnest(%s::text[], %s::int8[]) AS u(term, cls) "
                "WHERE t.collection_id = %s AND t.tenant = %s AND t.term = u.term AND t.class_id = u.cls "
                "AND t.df <= 0",
                ([k[0] for k in fix], [k[1] for k in fix], collection_id, tenant),
            )
        crowded = sorted(k for k, n in small.items() if n >= COMPACT_AT)
        if crowded:
            _compact(conn, collection_id, tenant, crowded)
    for klass in sorted(per_class):
        n, dl = per_class[klass]
        if n or dl:
            conn.execute(
                "UPDATE bm25_classes SET n_chunks = n_chunks + %s, sum_dl = sum_dl + %s "
                "WHERE collection_id = %s AND tenant = %s AND class_id = %s",
                (n, dl, collection_id, tenant, klass),
            )
    changed = sorted(k for k, v in langs.items() if v)
    if changed:
        conn.execute(
            "INSERT INTO bm25_languages AS l (collection_id, tenant, class_id, language, n_chunks) "
            "SELECT %s, %s, u.cls, u.lang, u.n FROM unnest(%s::int8[], %s::text[], %s::int8[]) "
            "AS u(cls, lang, n) ORDER BY u.cls, u.lang "
            "ON CONFLICT (collection_id, tenant, class_id, language) "
            "DO UPDATE SET n_chunks = l.n_chunks + EXCLUDED.n_chunks",
            (
                collection_id,
                tenant,
                [k[0] for k in changed],
                [k[1] for k in changed],
                [langs[k] for k in changed],
            ),
        )
        conn.execute(
            "DELETE FROM bm25_languages WHERE collection_id = %s AND tenant = %s AND n_chunks <= 0",
            (collection_id, tenant),
        )


def _remove_postings(
    conn: Any,
    collection_id: int,
    tenant: str,
    leaving: dict[tuple[str, int], list[int]],
    spans: dict[tuple[str, int], int],
) -> dict[tuple[str, int], int]:
    """Rewrite the blocks holding the leaving chunks; returns the change in small blocks."""
    keys = sorted(leaving)
    found = conn.execute(
        # a block holding chunk x has first_id <= x <= last_id and last_id - first_id <= span
        "SELECT b.term, b.class_id, b.first_id, b.n, b.data FROM "
        "unnest(%s::text[], %s::int8[], %s::int8[], %s::int8[], %s::int8[]) AS u(term, cls, lo, hi, span) "
        "JOIN bm25_blocks b ON b.collection_id = %s AND b.tenant = %s AND b.term = u.term "
        "AND b.class_id = u.cls AND b.first_id BETWEEN u.lo - u.span AND u.hi AND b.last_id >= u.lo",
        (
            [k[0] for k in keys],
            [k[1] for k in keys],
            [min(leaving[k]) for k in keys],
            [max(leaving[k]) for k in keys],
            [spans.get(k, 0) for k in keys],
            collection_id,
            tenant,
        ),
    ).fetchall()
    gone: list[tuple[str, int, int]] = []
    new: list[tuple[Any, ...]] = []
    small_delta: dict[tuple[str, int], int] = {}
    for term, klass, first, n, data in found:
        key = (term, int(klass))
        ids, tfs, dls = codec.decode_block(data)
        keep = ~np.isin(ids, leaving[key])
        if keep.all():
            continue
        gone.append((term, int(klass), int(first)))
        small_delta[key] = small_delta.get(key, 0) - (n < codec.SMALL_BLOCK)
        if keep.any():
            for b in codec.cut_blocks(ids[keep], tfs[keep], dls[keep]):
                new.append((term, int(klass), *b))
                small_delta[key] += b[2] < codec.SMALL_BLOCK
    if gone:
        conn.execute(
            "DELETE FROM bm25_blocks b USING unnest(%s::text[], %s::int8[], %s::int8[]) AS u(term, cls, first) "
            "WHERE b.collection_id = %s AND b.tenant = %s AND b.term = u.term AND b.class_id = u.cls "
            "AND b.first_id = u.first",
            (
                [g[0] for g in gone],
                [g[1] for g in gone],
                [g[2] for g in gone],
                collection_id,
                tenant,
            ),
        )
    _copy_blocks(conn, collection_id, tenant, new)
    return small_delta


def _compact(conn: Any, collection_id: int, tenant: str, keys: Sequence[tuple[str, int]]) -> None:
    """Merge the small blocks of each (term, class) list in ``keys`` (rows locked)."""
    rows = conn.execute(
        "DELETE FROM bm25_blocks b USING unnest(%s::text[], %s::int8[]) AS u(term, cls) "
        "WHERE b.collection_id = %s AND b.tenant = %s AND b.term = u.term AND b.class_id = u.cls "
        "AND b.n < %s RETURNING b.term, b.class_id, b.data",
        ([k[0] for k in keys], [k[1] for k in keys], collection_id, tenant, codec.SMALL_BLOCK),
    ).fetchall()
    by_list: dict[tuple[str, int], list[bytes]] = {}
    for term, klass, data in rows:
        by_list.setdefault((term, int(klass)), []).append(data)
    new: list[tuple[Any, ...]] = []
    small: dict[tuple[str, int], int] = {}
    span: dict[tuple[str, int], int] = {}
    for key, datas in by_list.items():
        ids, tfs, dls = codec.decode_blocks(datas)
        order = np.argsort(ids, kind="stable")
        for first, last, n, mt, md, data in codec.cut_blocks(ids[order], tfs[order], dls[order]):
            new.append((key[0], key[1], first, last, n, mt, md, data))
            small[key] = small.get(key, 0) + (n < codec.SMALL_BLOCK)
            span[key] = max(span.get(key, 0), last - first)
    _copy_blocks(conn, collection_id, tenant, new)
    if by_list:
        ks = sorted(by_list)
        conn.execute(
            "UPDATE bm25_terms t SET small_blocks = u.small, max_span = greatest(t.max_span, u.span) "
            "FROM unnest(%s::text[], %s::int8[], %s::int[], %s::int8[]) AS u(term, cls, small, span) "
            "WHERE t.collection_id = %s AND t.tenant = %s AND t.term = u.term AND t.class_id = u.cls",
            (
                [k[0] for k in ks],
                [k[1] for k in ks],
                [small.get(k, 0) for k in ks],
                [span.get(k, 0) for k in ks],
                collection_id,
                tenant,
            ),
        )
