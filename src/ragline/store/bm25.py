"""The BM25 index in PostgreSQL: ACL classes, per-term statistics and posting blocks.

Every chunk belongs to one ACL class — (tenant, sorted group set, current or history) of
its collection. Per class, ``bm25_classes`` holds N and the sum of document lengths,
``bm25_terms`` the df of each term with bounds of its tf and dl, and ``bm25_blocks`` the
postings, cut into blocks of at most 512 (:mod:`.bm25_codec`). All three are changed in
the transaction that writes, deletes or re-labels the chunks, so a query reads maintained
statistics instead of counting, and they always equal a recount (:func:`check`).

A caller's statistics are the sums over the classes the caller may read, so no score
depends on a document the caller cannot see; and the postings a query reads are only
those of its classes, which is the permission filter inside the BM25 leg.

Locking: a change to a list takes its ``bm25_terms`` row first (in term order), then the
class rows; readers take no locks (one REPEATABLE READ snapshot per search).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from . import bm25_codec as codec
from . import params
from .bm25_topk import BlockMeta, Postings, TermStats, Tops, Work, top_k, top_k_from_tops
from .bm25_write import (
    FORWARD_PACKED,
    Changes,
    IndexedChunks,
    decode_forward,
    packed_forward_postings,
)

if TYPE_CHECKING:
    from ..core.filters import Filters
    from ..core.types import Principal
    from .collections import Collection
    from .db import Database

TOPS_MAX_TERMS = 3
"""Queries of at most this many distinct terms try the lists' tops first: a 1-term query
is decided by them alone; with more terms the chunks outside every top may score more. At
1M chunks with 3 terms they decide 32 of 92 queries (~4 ms instead of ~15) and cost the
others ~2 ms: p50 of the 1–3-term mix 6.06 → 5.20 ms, mean 10.83 → 11.11 (bench/README,
stop 33). The benchmark's words are resampled independently, so its query terms rarely
meet in one chunk: the hardest case for the tops (not measured on real text this size)."""
FILTER_SET_BELOW = 10000
"""A metadata filter passing fewer chunks than this is applied as an id set; a broader
one by checking the candidates."""


# -- classes --------------------------------------------------------------------------
def class_id(
    conn: Any,
    collection_id: int,
    tenant: str,
    groups: Sequence[str],
    current: bool,
    db: Database | None = None,
) -> int:
    """The ACL class of (tenant, groups, current) in the collection, created on first use
    (with ``db``, in a transaction of its own: an empty class is harmless, and a writer
    then never waits inside its transaction for another to create the same class)."""
    groups = sorted(set(groups))
    find = (
        "SELECT class_id FROM bm25_classes WHERE collection_id = %s AND tenant = %s "
        "AND groups = %s AND is_current = %s"
    )
    args = (collection_id, tenant, groups, current)
    r = conn.execute(find, args).fetchone()
    if r is None:
        create = (
            "INSERT INTO bm25_classes (collection_id, tenant, groups, is_current) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (collection_id, tenant, groups, is_current) DO NOTHING"
        )
        if db is not None:
            with db.connection() as own:
                own.execute(create, args)
        else:
            conn.execute(create, args)
        r = conn.execute(find, args).fetchone()
    return int(r[0])


def visible_classes(
    conn: Any, collection_id: int, principal: Principal, include_history: bool
) -> tuple[list[int], int, int]:
    """The classes ``principal`` may read, with their total N and sum of lengths."""
    cur = "" if include_history else " AND is_current"
    rows = conn.execute(
        "SELECT class_id, n_chunks, sum_dl FROM bm25_classes WHERE collection_id = %s AND tenant = %s "
        f"AND (groups = '{{}}'::text[] OR groups && %s::text[]){cur}",
        (collection_id, principal.tenant, list(principal.groups)),
    ).fetchall()
    return [int(r[0]) for r in rows], sum(int(r[1]) for r in rows), sum(int(r[2]) for r in rows)


def indexed_languages(db: Database, collection: Collection) -> tuple[str, ...]:
    """The languages the collection's chunks are in (any tenant; from the classes' counts)."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT DISTINCT language FROM bm25_languages WHERE collection_id = %s "
            "AND language NOT IN ('', 'und') AND n_chunks > 0 ORDER BY language",
            (collection.id,),
        ).fetchall()
    return tuple(r[0] for r in rows)


def visible_languages(
    db: Database, collection: Collection, principal: Principal, include_history: bool = False
) -> tuple[str, ...]:
    """The languages of the chunks ``principal`` may read (from the classes' counts)."""
    cur = "" if include_history else " AND c.is_current"
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT DISTINCT l.language FROM bm25_languages l JOIN bm25_classes c "
            "ON c.collection_id = l.collection_id AND c.tenant = l.tenant AND c.class_id = l.class_id "
            "WHERE l.collection_id = %s AND l.tenant = %s AND l.language <> '' AND l.n_chunks > 0 "
            f"AND (c.groups = '{{}}'::text[] OR c.groups && %s::text[]){cur} ORDER BY 1",
            (collection.id, principal.tenant, list(principal.groups)),
        ).fetchall()
    return tuple(r[0] for r in rows)


# -- searching ------------------------------------------------------------------------
class _DbSource:
    """Postings of one collection and tenant, restricted to the caller's classes."""

    def __init__(
        self,
        conn: Any,
        collection_id: int,
        tenant: str,
        classes: list[int],
        read: Mapping[str, Postings] | None = None,
        prepare: bool = False,
    ) -> None:
        self.conn, self.cid, self.tenant, self.classes = conn, collection_id, tenant, classes
        self.read = dict(read or {})
        """Terms whose every list the search has read whole already."""
        self.prepare = prepare
        """Whether to prepare the statements (:attr:`ragline.store.db.Database.prepare`)."""

    def postings(self, terms: Sequence[str]) -> dict[str, Postings]:
        out = {t: self.read[t] for t in terms if t in self.read}
        terms = [t for t in terms if t not in self.read]
        if not terms:
            return out
        rows = self.conn.execute(
            "SELECT term, data FROM bm25_blocks WHERE collection_id = %s AND tenant = %s "
            "AND term = ANY(%s) AND class_id = ANY(%s)",
            (self.cid, self.tenant, list(terms), self.classes),
            binary=True,
            prepare=self.prepare,
        ).fetchall()
        by_term: dict[str, list[bytes]] = {}
        for term, data in rows:
            by_term.setdefault(term, []).append(data)
        return out | {t: codec.decode_blocks(d) for t, d in by_term.items()}

    def block_meta(self, terms: Sequence[str]) -> dict[str, BlockMeta]:
        # one row per term, its blocks' columns as arrays in (class, first id) order: a
        # common term has thousands of blocks at 1M chunks, and a row each cost the client
        # more than the values
        cols = ", ".join(
            f"array_agg({c} ORDER BY class_id, first_id)"
            for c in ("class_id", "n", "first_id", "last_id", "max_tf", "min_dl")
        )
        rows = self.conn.execute(
            f"SELECT term, {cols} FROM bm25_blocks WHERE collection_id = %s AND tenant = %s "
            "AND term = ANY(%s) AND class_id = ANY(%s) GROUP BY term",
            (self.cid, self.tenant, list(terms), self.classes),
            binary=True,
            prepare=self.prepare,
        ).fetchall()
        return {r[0]: BlockMeta(*(np.array(a, dtype=np.int64) for a in r[1:])) for r in rows}

    def blocks(self, wanted: Mapping[str, tuple[BlockMeta, np.ndarray]]) -> dict[str, Postings]:
        # a block of a term is identified by its first chunk id alone (a chunk is in one
        # class); one statement per term, sent together
        sql = (
            "SELECT first_id, data FROM bm25_blocks WHERE collection_id = %s AND tenant = %s "
            "AND term = %s AND class_id = ANY(%s) AND first_id = ANY(%s)"
        )
        firsts = {t: meta.first[which] for t, (meta, which) in wanted.items()}
        with self.conn.pipeline():
            cursors = {
                t: self.conn.execute(
                    sql,
                    (self.cid, self.tenant, t, self.classes, f.tolist()),
                    binary=True,
                    prepare=self.prepare,
                )
                for t, f in firsts.items()
            }
        out = {}
        for t, cur in cursors.items():
            rows = cur.fetchall()
            by_first = {int(r[0]): r[1] for r in rows}
            if len(by_first) != len(rows):
                raise RuntimeError(
                    f"two BM25 blocks of {t!r} start at one chunk: the index is inconsistent (ragline.store.bm25.check lists how)"
                )
            try:
                out[t] = codec.decode_blocks([by_first[int(f)] for f in firsts[t].tolist()])
            except KeyError as e:
                raise RuntimeError(f"BM25 block {t}/{e} is missing under the snapshot") from None
        return out

    def forward(self, ids: np.ndarray, terms: Sequence[str]) -> dict[str, Postings]:
        row = self.conn.execute(
            FORWARD_PACKED,
            (self.tenant, params.ints(ids.tolist())),
            binary=True,
            prepare=self.prepare,
        ).fetchone()
        if row is None or row[0] is None:
            return {}
        return packed_forward_postings(
            np.array(row[0], dtype=np.int64),
            np.array(row[1], dtype=np.int64),
            bytes(row[2]),
            bytes(row[3]),
            terms,
        )


def search(
    db: Database,
    collection: Collection,
    terms: Sequence[str],
    principal: Principal,
    k: int,
    *,
    k1: float,
    b: float,
    include_history: bool = False,
    filters: Filters | None = None,
    work: Work | None = None,
) -> list[tuple[int, float]]:
    """(chunk id, BM25 score) of the exact top ``k`` chunks ``principal`` may read."""
    from .filters import acl_sql

    uniq = sorted(set(terms))
    if not uniq or k <= 0:
        return []
    acl, acl_params = acl_sql(principal, "c", include_history=include_history, filters=filters)
    cur = "" if include_history else " AND is_current"
    tops_wanted = filters is None and len(uniq) <= TOPS_MAX_TERMS
    args = {
        "cid": collection.id,
        "tenant": principal.tenant,
        "groups": list(principal.groups),
        "terms": uniq,
        "top": codec.TOP_POSTINGS,
        "tops": tops_wanted,
    }
    classes_sql = (
        "SELECT class_id, n_chunks, sum_dl FROM bm25_classes WHERE collection_id = %(cid)s "
        "AND tenant = %(tenant)s AND (groups = '{}'::text[] OR groups && %(groups)s::text[])"
        f"{cur}"
    )
    # the statements below are the same text for every query: prepared, each is parsed and
    # planned once per connection (a replica's pool has the primary's setting)
    prepare = bool(getattr(db, "prepare", False))
    with db.connection() as conn:
        # one snapshot for every statement of the search; BEGIN, SET, the classes, and the
        # statistics of each (term, class) with the top of a long list and the blocks of a
        # short one go to the server in one round trip. Plain statements summed here: a CTE
        # aggregating by term, and the short lists in a join of their own, cost 0.6 ms more
        # per query at 1M chunks (bench/README, stop 33). (A longer query reads its short
        # lists as MaxScore needs them: at 1 % visible every list is short, and reading all
        # of them whole cost 3.3 → 4.2 ms.)
        with conn.pipeline():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            classes_cur = conn.execute(classes_sql, args, binary=True, prepare=prepare)
            terms_cur = conn.execute(
                "SELECT t.term, t.class_id, t.df, t.max_tf, t.min_dl, "
                "CASE WHEN %(tops)s AND t.df > %(top)s THEN t.top END, "
                "CASE WHEN %(tops)s AND t.df > %(top)s THEN t.top_rest END, "
                "CASE WHEN %(tops)s AND t.df <= %(top)s THEN ARRAY(SELECT b.data FROM bm25_blocks b "
                "WHERE b.collection_id = %(cid)s AND b.tenant = %(tenant)s AND b.term = t.term "
                "AND b.class_id = t.class_id) END "
                "FROM bm25_terms t WHERE t.collection_id = %(cid)s AND t.tenant = %(tenant)s "
                f"AND t.term = ANY(%(terms)s) AND t.class_id IN (SELECT class_id FROM ({classes_sql}) v)",
                args,
                binary=True,
                prepare=prepare,
            )
        class_rows = classes_cur.fetchall()
        classes = [int(r[0]) for r in class_rows]
        n_docs = sum(int(r[1]) for r in class_rows)
        sum_dl = sum(int(r[2]) for r in class_rows)
        if not classes or n_docs <= 0:
            return []
        lists: dict[str, _TermLists] = {}
        for term, klass, df, max_tf, min_dl, top, rest, blocks in terms_cur.fetchall():
            lists.setdefault(term, _TermLists()).add(
                int(klass), int(df), int(max_tf), int(min_dl), top, rest, blocks
            )
        stats = [TermStats(t, x.df, x.max_tf, x.min_dl) for t, x in sorted(lists.items())]
        short = {
            t: codec.decode_blocks([b for _, b in x.shorts]) for t, x in lists.items() if x.shorts
        }
        # a term whose every list is short is read whole already
        read = {t: short[t] for t, x in lists.items() if x.all_short and t in short}
        source = _DbSource(conn, collection.id, principal.tenant, classes, read, prepare)
        avgdl = sum_dl / n_docs
        # the tops decide when every term's long lists have one (a query of short lists
        # alone is read whole by MaxScore, from what this round trip brought)
        if (
            tops_wanted
            and all(x.all_topped for x in lists.values())
            and any(x.tops for x in lists.values())
        ):
            got = top_k_from_tops(
                stats,
                n_docs,
                avgdl,
                k,
                {t: _tops(x, short.get(t)) for t, x in lists.items()},
                source,
                k1=k1,
                b=b,
                work=work,
            )
            if got is not None:
                return got
            if work is not None:
                work.tops = -1
        verify = None
        if filters is not None:
            verify = _filter_check(conn, collection.id, acl, acl_params)
        return top_k(stats, n_docs, avgdl, k, source, k1=k1, b=b, verify=verify, work=work)


@dataclass
class _TermLists:
    """One query term's lists in the caller's classes, as the first round trip read them:
    the statistics summed over them, the top and rest frontier of each long list that has
    them, the blocks of each short list."""

    df: int = 0
    max_tf: int = 0
    min_dl: int = 2**63 - 1
    all_topped: bool = True
    """Every long list has its top (none is waiting for a refresh)."""
    all_short: bool = True
    tops: list[tuple[int, bytes, bytes]] = field(default_factory=list)
    shorts: list[tuple[int, bytes]] = field(default_factory=list)

    def add(
        self,
        klass: int,
        df: int,
        max_tf: int,
        min_dl: int,
        top: bytes | None,
        rest: bytes | None,
        blocks: Sequence[bytes] | None,
    ) -> None:
        self.df += df
        self.max_tf = max(self.max_tf, max_tf)
        self.min_dl = min(self.min_dl, min_dl)
        long = df > codec.TOP_POSTINGS
        self.all_short = self.all_short and not long
        self.all_topped = self.all_topped and (not long or top is not None)
        if top is not None and rest is not None:
            self.tops.append((klass, top, rest))
        self.shorts.extend((klass, d) for d in blocks or ())


def _tops(lists: _TermLists, short: Postings | None) -> Tops:
    """One term's :class:`Tops`: the tops of its long lists and its short lists whole
    (``short``: their blocks decoded), with each posting's class."""
    parts = [codec.decode_blocks([t for _, t, _ in lists.tops])]
    parts += [short] if short is not None else []
    owners = [c for c, _, _ in lists.tops] + [c for c, _ in lists.shorts]
    sizes = codec.block_sizes([t for _, t, _ in lists.tops] + [d for _, d in lists.shorts])
    ids = np.concatenate([p[0] for p in parts])
    order = np.argsort(ids, kind="stable")
    known = (
        ids[order],
        np.concatenate([p[1] for p in parts])[order],
        np.concatenate([p[2] for p in parts])[order],
    )
    owner = np.repeat(np.array(owners, dtype=np.int64), sizes)[order]
    rest = {c: codec.decode_frontier(r) for c, _, r in lists.tops}
    return Tops(known, owner, rest)


def _filter_check(conn: Any, collection_id: int, acl: str, params: dict[str, Any]) -> Any:
    """The candidate check of a filtered search: an id set when the filter is selective,
    else a query per batch of candidates."""
    p = {"cid": collection_id, "cap": FILTER_SET_BELOW, **params}
    ids = [
        r[0]
        for r in conn.execute(
            f"SELECT c.id FROM chunks c WHERE c.collection_id = %(cid)s AND {acl} LIMIT %(cap)s", p
        )
    ]
    if len(ids) < FILTER_SET_BELOW:
        allowed = np.sort(np.array(ids, dtype=np.int64))
        return lambda cand: np.isin(cand, allowed)

    def check_batch(cand: np.ndarray) -> np.ndarray:
        ok = {
            r[0]
            for r in conn.execute(
                f"SELECT c.id FROM chunks c WHERE c.id = ANY(%(ids)s) AND {acl}",
                {**p, "ids": cand.tolist()},
            )
        }
        return np.array([int(i) in ok for i in cand], dtype=bool)

    return check_batch


# -- maintenance ----------------------------------------------------------------------
def build_pending(conn: Any) -> None:
    """Build the blocks of collections migrated from the per-row postings table."""
    pending = [r[0] for r in conn.execute("SELECT collection_id FROM bm25_pending ORDER BY 1")]
    for cid in pending:
        groups = conn.execute(
            "SELECT DISTINCT tenant, groups, is_current FROM chunks WHERE collection_id = %s",
            (cid,),
        ).fetchall()
        for tenant, grp, cur in groups:
            klass = class_id(conn, cid, tenant, grp, cur)
            raw = conn.execute(
                "UPDATE chunks SET bm25_class = %s WHERE collection_id = %s AND tenant = %s "
                "AND groups = %s AND is_current = %s RETURNING id, bm25_class, terms, tfs, n_terms, "
                "(SELECT coalesce(language, '') FROM documents d WHERE d.tenant = chunks.tenant AND d.id = document_id)",
                (klass, cid, tenant, grp, cur),
            ).fetchall()
            rows = sorted(
                ((r[0], r[1], *decode_forward(r[2], r[3]), r[4], r[5]) for r in raw),
                key=lambda r: r[0],
            )
            for start in range(0, len(rows), 5000):
                changes = Changes(cid, tenant)
                changes.add(klass, IndexedChunks.of_rows(rows[start : start + 5000]))
                changes.apply(conn)
        conn.execute("DELETE FROM bm25_pending WHERE collection_id = %s", (cid,))


def check(conn: Any, collection_id: int) -> list[str]:
    """Differences between the maintained index and a recount from the chunks (empty when
    consistent): class sizes, every term's df and bounds, and every posting."""
    problems: list[str] = []
    want_classes = {
        (int(r[0])): (int(r[1]), int(r[2]))
        for r in conn.execute(
            "SELECT bm25_class, count(*), coalesce(sum(n_terms), 0) FROM chunks WHERE collection_id = %s "
            "AND bm25_class IS NOT NULL GROUP BY bm25_class",
            (collection_id,),
        )
    }
    for klass, n, dl, grp, cur, tenant in conn.execute(
        "SELECT class_id, n_chunks, sum_dl, groups, is_current, tenant FROM bm25_classes WHERE collection_id = %s",
        (collection_id,),
    ):
        if want_classes.pop(int(klass), (0, 0)) != (int(n), int(dl)):
            problems.append(f"class {klass}: n/sum_dl {n}/{dl} differ from the chunks")
        bad = conn.execute(
            "SELECT count(*) FROM chunks WHERE bm25_class = %s AND (groups <> %s OR is_current <> %s "
            "OR tenant <> %s)",
            (klass, list(grp), cur, tenant),
        ).fetchone()[0]
        if bad:
            problems.append(f"class {klass}: {bad} chunks with other groups/tenant/currency")
    problems.extend(f"class {k}: missing" for k in want_classes)
    unindexed = conn.execute(
        "SELECT count(*) FROM chunks WHERE collection_id = %s AND bm25_class IS NULL",
        (collection_id,),
    ).fetchone()[0]
    if unindexed:
        problems.append(f"{unindexed} chunks not in the index")
    want: dict[tuple[str, int], dict[int, tuple[int, int]]] = {}
    for cid, klass, terms, tfs, dl in conn.execute(
        "SELECT id, bm25_class, terms, tfs, n_terms FROM chunks WHERE collection_id = %s "
        "AND bm25_class IS NOT NULL",
        (collection_id,),
    ):
        for t, f in zip(*decode_forward(terms, tfs)):
            want.setdefault((t, int(klass)), {})[int(cid)] = (int(f), int(dl))
    got: dict[tuple[str, int], dict[int, tuple[int, int]]] = {}
    for term, klass, first, last, n, mt, md, data in conn.execute(
        "SELECT term, class_id, first_id, last_id, n, max_tf, min_dl, data FROM bm25_blocks "
        "WHERE collection_id = %s",
        (collection_id,),
    ):
        ids, tfs, dls = codec.decode_block(data)
        if (first, last, n, mt, md) != (ids[0], ids[-1], len(ids), tfs.max(), dls.min()):
            problems.append(f"block {term}/{klass}/{first}: header differs from its postings")
        lst = got.setdefault((term, int(klass)), {})
        for i, f, d in zip(ids.tolist(), tfs.tolist(), dls.tolist()):
            if i in lst:
                problems.append(f"{term}/{klass}: chunk {i} twice")
            lst[i] = (f, d)
    if want != got:
        diff = sorted(set(want) ^ set(got)) + sorted(
            k for k in set(want) & set(got) if want[k] != got[k]
        )
        problems.append(f"postings differ from the forward index for {diff[:5]} …")
    for term, klass, df, mt, md in conn.execute(
        "SELECT term, class_id, df, max_tf, min_dl FROM bm25_terms WHERE collection_id = %s",
        (collection_id,),
    ):
        lst = want.pop((term, int(klass)), {})
        if df != len(lst):
            problems.append(f"term {term}/{klass}: df {df}, recount {len(lst)}")
        elif lst and (mt < max(f for f, _ in lst.values()) or md > min(d for _, d in lst.values())):
            problems.append(f"term {term}/{klass}: bounds do not bound its postings")
    problems.extend(f"term {t}/{c}: no statistics row" for t, c in want)
    problems.extend(_check_tops(conn, collection_id, got))
    want_langs = {
        (int(r[0]), r[1]): int(r[2])
        for r in conn.execute(
            "SELECT c.bm25_class, coalesce(d.language, ''), count(*) FROM chunks c JOIN documents d "
            "ON d.tenant = c.tenant AND d.id = c.document_id WHERE c.collection_id = %s AND c.bm25_class IS NOT NULL GROUP BY 1, 2",
            (collection_id,),
        )
    }
    got_langs = {
        (int(r[0]), r[1]): int(r[2])
        for r in conn.execute(
            "SELECT class_id, language, n_chunks FROM bm25_languages WHERE collection_id = %s",
            (collection_id,),
        )
    }
    if want_langs != got_langs:
        problems.append(f"languages per class {got_langs} differ from a recount {want_langs}")
    return problems


# -- tops -----------------------------------------------------------------------------
def _check_tops(
    conn: Any, collection_id: int, lists: Mapping[tuple[str, int], Mapping[int, tuple[int, int]]]
) -> list[str]:
    """Tops that are not their list's postings, or frontiers that do not bound the rest."""
    problems = []
    for term, klass, top, rest in conn.execute(
        "SELECT term, class_id, top, top_rest FROM bm25_terms WHERE collection_id = %s "
        "AND top IS NOT NULL",
        (collection_id,),
    ):
        postings = lists.get((term, int(klass)), {})
        ids, tfs, dls = codec.decode_block(top)
        known = dict(zip(ids.tolist(), zip(tfs.tolist(), dls.tolist())))
        if any(postings.get(i) != v for i, v in known.items()):
            problems.append(f"term {term}/{klass}: its top holds postings the list does not")
        f_tf, f_dl = codec.decode_frontier(rest)
        for i, (tf, dl) in postings.items():
            if i not in known and not np.any((f_tf >= tf) & (f_dl <= dl)):
                problems.append(f"term {term}/{klass}: chunk {i} is above its top's frontier")
                break
    return problems


TOPS_BATCH_POSTINGS = 1_000_000
"""Postings of the lists whose tops one transaction computes (their term rows stay locked
for it: a writer of those terms waits, and a list being written is skipped)."""


def refresh_tops(
    db: Database,
    collection_id: int,
    *,
    tenant: str | None = None,
    seconds: float | None = None,
    k1: float = 1.2,
    b: float = 0.75,
) -> int:
    """Compute the top and rest frontier (:func:`.bm25_codec.split_top`) of every list
    longer than :data:`.bm25_codec.TOP_POSTINGS` that has none (a write cleared it), the
    longest lists first, until done or ``seconds`` have passed; returns the lists done.

    Each batch locks its term rows (SKIP LOCKED: a list a writer holds is left for the
    next refresh), so the postings it reads are the list's, and a write that comes after
    clears what it stored."""
    import time

    deadline = None if seconds is None else time.monotonic() + seconds
    with db.connection() as conn:
        tenants = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT tenant FROM bm25_classes WHERE collection_id = %s ORDER BY 1",
                (collection_id,),
            )
            if tenant is None or r[0] == tenant
        ]
    done = 0
    for t in tenants:
        while deadline is None or time.monotonic() < deadline:
            with db.connection() as conn:
                todo = conn.execute(
                    "SELECT term, class_id, df FROM bm25_terms WHERE collection_id = %s AND tenant = %s "
                    "AND top IS NULL AND df > %s ORDER BY df DESC, term, class_id LIMIT 256",
                    (collection_id, t, codec.TOP_POSTINGS),
                ).fetchall()
                if not todo:
                    break
                batch: list[tuple[str, int]] = []
                size = 0
                for term, klass, df in todo:
                    if batch and size + df > TOPS_BATCH_POSTINGS:
                        break
                    batch.append((term, int(klass)))
                    size += int(df)
                batch.sort()
                locked = conn.execute(
                    "SELECT t.term, t.class_id FROM bm25_terms t JOIN unnest(%s::text[], %s::int8[]) "
                    "AS u(term, cls) ON t.term = u.term AND t.class_id = u.cls "
                    "WHERE t.collection_id = %s AND t.tenant = %s AND t.top IS NULL "
                    "ORDER BY t.term, t.class_id FOR UPDATE OF t SKIP LOCKED",
                    ([k[0] for k in batch], [k[1] for k in batch], collection_id, t),
                ).fetchall()
                if not locked:
                    # every list left is being written: the writes clear them again anyway
                    break
                done += _store_tops(conn, collection_id, t, locked, k1, b)
    return done


def _store_tops(
    conn: Any, collection_id: int, tenant: str, lists: Sequence[Any], k1: float, b: float
) -> int:
    """Compute and store the tops of ``lists`` ((term, class) rows locked by the caller)."""
    avgdl = {
        int(r[0]): int(r[2]) / max(int(r[1]), 1)
        for r in conn.execute(
            "SELECT class_id, n_chunks, sum_dl FROM bm25_classes WHERE collection_id = %s AND tenant = %s",
            (collection_id, tenant),
        )
    }
    data: dict[tuple[str, int], list[bytes]] = {}
    for term, klass, blob in conn.execute(
        "SELECT b.term, b.class_id, b.data FROM bm25_blocks b JOIN unnest(%s::text[], %s::int8[]) "
        "AS u(term, cls) ON b.term = u.term AND b.class_id = u.cls "
        "WHERE b.collection_id = %s AND b.tenant = %s",
        ([r[0] for r in lists], [int(r[1]) for r in lists], collection_id, tenant),
        binary=True,
    ):
        data.setdefault((term, int(klass)), []).append(blob)
    keys, tops, rests = [], [], []
    for key, blobs in data.items():
        ids, tfs, dls = codec.decode_blocks(blobs)
        order = np.argsort(ids, kind="stable")
        top, rest = codec.split_top(
            ids[order], tfs[order], dls[order], avgdl.get(key[1], 1.0) or 1.0, k1, b
        )
        keys.append(key)
        tops.append(top)
        rests.append(rest)
    if keys:
        conn.execute(
            "UPDATE bm25_terms t SET top = u.top, top_rest = u.rest FROM unnest(%s::text[], %s::int8[], "
            "%s::bytea[], %s::bytea[]) AS u(term, cls, top, rest) WHERE t.collection_id = %s "
            "AND t.tenant = %s AND t.term = u.term AND t.class_id = u.cls",
            (
                [k[0] for k in keys],
                [k[1] for k in keys],
                tops,
                rests,
                collection_id,
                tenant,
            ),
        )
    return len(keys)
