"""Exact BM25 top-k that does not read every posting: MaxScore with block-max bounds.

Okapi BM25 in Lucene's form, for each distinct query term t::

    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    s(t, c) = idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))

Every term has an upper bound ``ub(t) >= s(t, c)`` for every chunk c (from the largest
tf and the smallest dl of its postings), and every block of postings has one of its own.
Terms are processed from the highest bound down, term at a time, accumulating partial
scores (lower bounds of the true scores, since every contribution is positive):

1. **Essential terms.** After each term, θ = the k-th best partial score is a lower bound
   of the k-th best true score. Once the bounds of the terms not yet read sum below θ, no
   chunk outside the accumulator can enter the top k (its score is at most that sum), so
   the remaining — common, low-idf — terms are never read in full (MaxScore, Turtle &
   Flood 1995).
2. **Candidates.** Chunks whose partial score plus the remaining bounds can still reach θ
   are kept. For each remaining term, the bound of the block that could hold a candidate
   (block-max, Ding & Suel 2011), taken at the candidate's own length (known from the
   lists it was found in), tightens each candidate's bound; candidates that cannot reach
   θ are dropped, and only the blocks covering the survivors are read.
3. **Exact scores from the chunks' own rows.** Once few candidates are left, they are
   scored from their forward-index rows instead of the lists' blocks, best bound first in
   growing batches: each batch lifts θ, and the candidates whose bound falls below it are
   never read.

At a million chunks a query reads about a sixth of its terms' postings (the rare terms'
lists whole, the common ones only where a candidate may be) and a few hundred chunk rows,
so each step is a few array operations: partial scores summed in a dense array over the
chunk-id range (allocated once with room, since a grown copy costs more than the postings),
θ kept incrementally, candidates found through a dense position array, blocks of one format
decoded together.

The result is exactly the top k of exhaustive scoring (ties broken by chunk id, as the SQL
did), with the same formula. Pure logic over a :class:`PostingSource`;
the SQL behind it is in :mod:`ragline.store.bm25`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

K1 = 1.2
B = 0.75
EPS = 1e-9
"""Slack on every pruning comparison: float sums in another order differ by ~1e-15."""
SMALL_LIST = 4096
"""Lists this short are read whole with the term before them (one round trip)."""

Postings = tuple[np.ndarray, np.ndarray, np.ndarray]  # ids int64, tfs, dls


@dataclass(frozen=True)
class TermStats:
    """A query term over the lists the caller may read: df, and bounds of tf and dl."""

    term: str
    df: int
    max_tf: int
    min_dl: int


@dataclass(frozen=True)
class BlockMeta:
    """Where one block of a list lies and its bounds (``key`` identifies it to the source)."""

    lists: np.ndarray  # list (ACL class) of each block
    n: np.ndarray  # postings in each block
    first: np.ndarray
    last: np.ndarray
    max_tf: np.ndarray
    min_dl: np.ndarray


class PostingSource(Protocol):
    def postings(self, terms: Sequence[str]) -> dict[str, Postings]:
        """Every posting of ``terms`` the caller may read."""
        ...

    def block_meta(self, terms: Sequence[str]) -> dict[str, BlockMeta]:
        """The blocks of ``terms`` (position i of each array = block i)."""
        ...

    def blocks(self, wanted: Mapping[str, tuple[BlockMeta, np.ndarray]]) -> dict[str, Postings]:
        """For each term, the postings of its blocks ``which`` (indexes into its meta),
        concatenated in that order (one round trip for all the terms)."""
        ...

    def forward(self, ids: np.ndarray, terms: Sequence[str]) -> dict[str, Postings]:
        """For the chunks ``ids`` (sorted; each one the lists above returned), the postings
        of ``terms`` among them, read from each chunk's own term list (the forward index;
        one round trip)."""
        ...


@dataclass
class Work:
    """What one query did: how much of the index it read."""

    terms: int = 0
    full_terms: int = 0
    postings: int = 0
    """Postings decoded (the whole lists of essential terms, the chosen blocks of others)."""
    postings_total: int = 0
    """Postings of the query terms in the lists the caller may read (exhaustive cost)."""
    blocks: int = 0
    candidates: int = 0
    verified: int = 0
    forward: int = 0
    """Candidates scored from their own term lists instead of the lists' blocks."""
    rounds: int = 0
    tops: int = 0
    """1: the lists' tops decided the top k; -1: they were tried and could not; 0: not
    tried."""
    detail: dict[str, int] = field(default_factory=dict)


def idf(n_docs: float, df: float) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


def _tf_part(tfs: np.ndarray, dls: np.ndarray, avgdl: float, k1: float, b: float) -> np.ndarray:
    tf = tfs.astype(np.float64)
    norm = np.multiply(dls, k1 * b / avgdl, dtype=np.float64)
    norm += k1 * (1 - b)
    norm += tf
    return np.divide(tf, norm, out=norm)


def _kth(scores: np.ndarray, k: int) -> float:
    if len(scores) < k:
        return 0.0
    return float(np.partition(scores, len(scores) - k)[len(scores) - k])


def _accumulate(
    ids: np.ndarray,
    scores: np.ndarray,
    dls: np.ndarray,
    new_ids: np.ndarray,
    new_scores: np.ndarray,
    new_dls: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted unique ids with summed scores and their lengths, of the accumulator and new
    postings."""
    all_ids = np.concatenate((ids, new_ids))
    all_scores = np.concatenate((scores, new_scores))
    uniq, inv = np.unique(all_ids, return_inverse=True)
    out_dls = np.zeros(len(uniq), dtype=np.int64)
    out_dls[inv] = np.concatenate((dls, new_dls))  # one length per chunk: any write wins
    return uniq, np.bincount(inv, weights=all_scores, minlength=len(uniq)), out_dls


DENSE_SPAN = 1 << 24
"""Partial scores are summed in a dense array over the chunk ids' range while it is at most
this wide (8 bytes per id: 128 MB at most, 8 MB for a million chunks); beyond, in sorted
arrays."""
DENSE_PER_POSTING = 32
"""... and while the range is at most this many ids per posting the query may read (a
reader who sees 1 % of a collection reads a few sparse lists: sorting them is cheaper than
a pass over the whole range)."""


SCRATCH_MAX = 1 << 21
"""Dense arrays up to this many ids are reused between queries (16 MB of scores, 8 of
lengths and 8 of positions at most); wider ones are allocated per query."""
SCRATCH_KEEP = 4
"""Arrays of each kind kept for reuse, however many threads search (at most ~128 MB in
all; a query over a million ids touches ~16 MB of them)."""


class _Scratch:
    """Zeroed arrays reused between queries, shared by the threads. A fresh array is zero
    pages that the kernel maps and clears on first write: a query scattering postings over
    a million ids touches nearly every page of it, ~1 ms per 8 MB; a reused one is cleaned
    by zeroing only the entries the query wrote (O(postings))."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.free: dict[str, list[np.ndarray]] = {}

    def take(self, key: str, n: int, dtype: type) -> tuple[np.ndarray, bool]:
        """A zeroed array of ``n`` entries, and whether it is a reused one (then it must be
        given back with :meth:`give_back`, zeroed again)."""
        if n > SCRATCH_MAX:
            return np.zeros(n, dtype=dtype), False
        with self.lock:
            stack = self.free.get(key)
            have = stack.pop() if stack else None
        if have is None or len(have) < n:
            size = min(max(n, 2 * len(have) if have is not None else n), SCRATCH_MAX)
            have = np.zeros(size, dtype=dtype)
        return have[:n], True

    def give_back(self, key: str, view: np.ndarray) -> None:
        """``view`` (from :meth:`take`) is all zeros again: its array may serve another
        query (or is dropped, when enough are kept)."""
        whole = view.base if isinstance(view.base, np.ndarray) else view
        with self.lock:
            stack = self.free.setdefault(key, [])
            if len(stack) < SCRATCH_KEEP:
                stack.append(whole)


_SCRATCH = _Scratch()


FORWARD_COST = 300
"""What scoring one candidate from its own term list costs, in postings read from blocks
(a row fetched by id and its terms searched, against decoding and scoring postings):
once the candidates left are fewer than the postings their blocks hold / this, the rest of
the query reads the candidates' rows instead of the blocks. A row is a random visit to the
chunks table (~15–20 µs at 1M chunks: 300 rows 4.6–6.6 ms) and a posting ~0.07 µs; 300
instead of 40 (chosen when the forward read came, at 100k) cut the long queries' mean 7 % and their p95
16 % at 1M, and the mean 4–7 % at 100k, with the same p50 (bench/README, stop 32)."""
SEEDS = 64
"""Candidates scored exactly first (those with the best bounds), whose k-th best score
lifts θ before the candidates are pruned."""


def _block_cost(meta: BlockMeta, candidates: int) -> float:
    """Postings expected in the blocks of a list that hold one of ``candidates`` chunks
    spread over it: a block holds none with probability (1 - 1/blocks)^candidates."""
    blocks = len(meta.n)
    if blocks == 0 or candidates == 0:
        return 0.0
    return float(meta.n.sum()) * -math.expm1(-candidates / blocks)


def _dense_ok(lo: int, hi: int, postings: int) -> bool:
    return hi - lo < min(DENSE_SPAN, DENSE_PER_POSTING * max(postings, 1))


class _Accumulator:
    """Partial scores by chunk id over whole lists (each list holds a chunk at most once).

    Summing in a dense array costs O(postings) per list instead of a sort of everything
    read so far; every contribution is positive, so the ids touched are the nonzero ones.
    θ is kept as the k-th best partial score: scores only grow, so the k best after a list
    are among the k best before it and the chunks of that list."""

    def __init__(self, k: int, span: int = DENSE_SPAN, postings: int | None = None) -> None:
        self.k, self.span, self.postings = k, span, postings
        self.lo = 0
        self.dense: np.ndarray | None = None
        self.dense_dl = np.empty(0, dtype=np.uint32)  # each chunk's length, beside ``dense``
        self.kept = False  # dense arrays reused from :data:`_SCRATCH` (:meth:`release`)
        self.written: list[np.ndarray] = []  # offsets written into them
        self.ids = np.empty(0, dtype=np.int64)
        self.scores = np.empty(0, dtype=np.float64)
        self.dls = np.empty(0, dtype=np.int64)
        self.best = np.empty(0, dtype=np.int64)  # ids of the k best partial scores
        self.theta = 0.0

    def add(self, ids: np.ndarray, scores: np.ndarray, dls: np.ndarray) -> None:
        """Add one list's partial scores of ``ids``, whose lengths are ``dls``."""
        if len(ids) == 0:
            return
        lo, hi = int(ids.min()), int(ids.max())
        if (
            self.dense is None
            and len(self.ids) == 0
            and hi - lo < self.span
            and (self.postings is None or _dense_ok(lo, hi, self.postings))
        ):
            # room beyond the first list's range, so that later lists rarely grow it (a
            # grown array is a fresh copy, every page of it written: ~6 ms for a million
            # ids; pages of the room never touched cost nothing)
            room = min((hi - lo + 1) // 8, (self.span - 1 - (hi - lo)) // 2, lo)
            lo, hi = lo - room, hi + room
            self.lo = lo
            self.dense, self.kept = _SCRATCH.take("scores", hi - lo + 1, np.float64)
            self.dense_dl, kept_dl = _SCRATCH.take("lengths", hi - lo + 1, np.uint32)
            self.kept = self.kept and kept_dl  # (both are, up to the same size)
        elif self.dense is not None:
            old_hi = self.lo + len(self.dense) - 1
            new_lo, new_hi = min(self.lo, lo), max(old_hi, hi)
            if new_hi - new_lo >= self.span:
                self.ids, self.scores = self.arrays()
                self.dls = self.lengths(self.ids)
                self.release()
                self.dense = None
            elif (new_lo, new_hi) != (self.lo, old_hi):
                # grow with room again on the side that needs it, for the same reason
                extra = len(self.dense) // 8
                if new_lo < self.lo:
                    new_lo = max(0, new_lo - extra, new_hi - self.span + 1)
                if new_hi > old_hi:
                    new_hi = min(new_hi + extra, new_lo + self.span - 1)
                grown = np.zeros(new_hi - new_lo + 1, dtype=np.float64)
                grown[self.lo - new_lo : old_hi - new_lo + 1] = self.dense
                grown_dl = np.zeros(new_hi - new_lo + 1, dtype=np.uint32)
                grown_dl[self.lo - new_lo : old_hi - new_lo + 1] = self.dense_dl
                self.release()
                self.lo, self.dense, self.dense_dl = new_lo, grown, grown_dl
        if self.dense is None:
            self.ids, self.scores, self.dls = _accumulate(
                self.ids, self.scores, self.dls, ids, scores, dls
            )
            self.theta = _kth(self.scores, self.k)
            return
        before = self.dense[self.best - self.lo]
        off = ids - self.lo
        if self.kept:
            self.written.append(off)
        summed = self.dense[off] + scores  # one gather and one scatter (ids are unique)
        self.dense[off] = summed
        self.dense_dl[off] = dls
        after = self.dense[self.best - self.lo]
        kept = after == before  # best ids not in this list
        pool = np.concatenate((ids, self.best[kept]))
        values = np.concatenate((summed, after[kept]))
        if len(pool) > self.k:
            top = np.argpartition(-values, self.k - 1)[: self.k]
            pool, values = pool[top], values[top]
        self.best = pool
        self.theta = float(values.min()) if len(values) >= self.k else 0.0

    def drop(self, ids: np.ndarray) -> None:
        """Forget ``ids`` (verified not to pass the filter)."""
        if self.dense is None:
            keep = ~_in_sorted(np.sort(ids), self.ids)[0]
            self.ids, self.scores, self.dls = self.ids[keep], self.scores[keep], self.dls[keep]
        else:
            inside = (ids >= self.lo) & (ids < self.lo + len(self.dense))
            self.dense[ids[inside] - self.lo] = 0.0
        self.best = np.setdiff1d(self.best, ids)

    def arrays(self, at_least: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Sorted ids with their partial scores, of those scoring at least ``at_least``."""
        if self.dense is None:
            if at_least <= 0:
                return self.ids, self.scores
            keep = self.scores >= at_least
            return self.ids[keep], self.scores[keep]
        nz = np.flatnonzero(self.dense >= at_least) if at_least > 0 else np.flatnonzero(self.dense)
        return nz + self.lo, self.dense[nz]

    def release(self) -> None:
        """Zero what was written into the reused arrays and give them back (the
        accumulator keeps no dense arrays after; call once it is no longer used)."""
        if self.kept and self.dense is not None:
            for off in self.written:
                self.dense[off] = 0.0
                self.dense_dl[off] = 0
            _SCRATCH.give_back("scores", self.dense)
            _SCRATCH.give_back("lengths", self.dense_dl)
            self.dense, self.dense_dl = None, np.empty(0, dtype=np.uint32)
        self.kept, self.written = False, []

    def lengths(self, ids: np.ndarray) -> np.ndarray:
        """The lengths (dl) of chunks ``ids`` (sorted; each one added before)."""
        if self.dense is None:
            return self.dls[np.searchsorted(self.ids, ids)]
        return self.dense_dl[ids - self.lo].astype(np.int64)


def _best(ids: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k best scores, best first (ties: smaller id first)."""
    if len(scores) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        sel = np.flatnonzero(scores >= kth)
    else:
        sel = np.arange(len(scores))
    return sel[np.lexsort((ids[sel], -scores[sel]))][:k]


def _in_sorted(sorted_ids: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ``ids``: a mask of those in ``sorted_ids`` and their positions there."""
    if len(sorted_ids) == 0:
        return np.zeros(len(ids), dtype=bool), np.zeros(len(ids), dtype=np.int64)
    pos = np.searchsorted(sorted_ids, ids)
    pos_c = np.minimum(pos, len(sorted_ids) - 1)
    return sorted_ids[pos_c] == ids, pos_c


class _Positions:
    """Where each candidate chunk id sits in the candidate arrays, as a dense array over
    the ids' range (a lookup per posting instead of a binary search), or by binary search
    where the range is too wide for that (:func:`_dense_ok`). The array holds position + 1
    (0: not a candidate), so it starts as zeros (reused, or fresh)."""

    def __init__(self, lo: int, hi: int, postings: int) -> None:
        self.lo = lo
        self.where: np.ndarray | None = None
        self.kept = False
        if _dense_ok(lo, hi, postings):
            self.where, self.kept = _SCRATCH.take("positions", hi - lo + 1, np.int32)
        self.ids = np.empty(0, dtype=np.int64)

    def release(self) -> None:
        """Zero the positions written and give the scratch array back."""
        if self.where is not None and self.kept:
            self.where[self.ids - self.lo] = 0
            _SCRATCH.give_back("positions", self.where)
        self.where, self.kept = None, False

    def set(self, ids: np.ndarray) -> None:
        """The candidates are now ``ids`` (sorted)."""
        if self.where is not None:
            self.where[self.ids - self.lo] = 0
            self.where[ids - self.lo] = np.arange(1, len(ids) + 1, dtype=np.int32)
        self.ids = ids

    def find(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For ``ids`` (inside the range): a mask of the candidates and their positions."""
        if self.where is None:
            return _in_sorted(self.ids, ids)
        pos = self.where[ids - self.lo] - 1
        return pos >= 0, pos


class _BlockBounds:
    """The blocks of one list, per ACL class sorted by first id (built once per query), to
    find for candidate chunks the bound of the block that may hold each and the blocks to
    read for them.

    A candidate's bound is its block's largest tf at the candidate's own length (known
    from the lists it was found in): tighter than the block's bound, which takes its
    shortest chunk, and still a bound, since a score grows with tf."""

    def __init__(self, meta: BlockMeta, weight: float, score: Callable[..., np.ndarray]) -> None:
        self.n_blocks = len(meta.first)
        self.weight, self.score = weight, score
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]] = []
        for lst in np.unique(meta.lists):
            sel = np.flatnonzero(meta.lists == lst)
            order = sel[np.argsort(meta.first[sel], kind="stable")]
            first, last = meta.first[order], meta.last[order]
            overlap = len(order) > 1 and bool(np.any(first[1:] <= np.maximum.accumulate(last)[:-1]))
            self.parts.append((order, first, last, meta.max_tf[order], overlap))

    def find(self, ids: np.ndarray, dls: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """For each of ``ids`` (of lengths ``dls``): the bound of its score for the term
        from the block that may hold it (0 if none; without ``dls``, 0 for all), and for
        each block whether it may hold one of them.

        Blocks of one class do not overlap unless two writers interleaved chunk ids; where
        they do, the class's largest tf stands for every block in its range (still a
        bound), and all its blocks in the range are read."""
        max_tf = np.zeros(len(ids), dtype=np.int64)
        needed = np.zeros(self.n_blocks, dtype=bool)
        for order, first, last, tfs, overlap in self.parts:
            if overlap:
                inside = (ids >= first[0]) & (ids <= last.max())
                max_tf[inside] = np.maximum(max_tf[inside], tfs.max())
                if inside.any():
                    needed[order] = True
                continue
            pos = np.searchsorted(first, ids, side="right") - 1
            ok = pos >= 0
            ok[ok] = ids[ok] <= last[pos[ok]]
            max_tf[ok] = np.maximum(max_tf[ok], tfs[pos[ok]])
            needed[order[pos[ok]]] = True
        bound = np.zeros(len(ids), dtype=np.float64)
        if dls is None:
            return bound, needed
        held = max_tf > 0
        bound[held] = self.weight * self.score(max_tf[held], dls[held])
        return bound, needed


def _from_rows(
    source: PostingSource,
    ids: np.ndarray,
    terms: Sequence[TermStats],
    idfs: Mapping[str, float],
    acc: np.ndarray,
    avgdl: float,
    k1: float,
    b: float,
    work: Work,
) -> np.ndarray:
    """``acc`` plus the exact scores of ``terms`` for the chunks ``ids`` (sorted), from the
    chunks' own term lists (one round trip), added term by term in that order, as every
    path adds them: the same sums to the bit."""
    got = source.forward(ids, [s.term for s in terms])
    work.rounds += 1
    work.forward += len(ids)
    for s in terms:
        pids, tfs, dls = got.get(s.term, (np.empty(0, np.int64),) * 3)
        part = np.zeros(len(ids), dtype=np.float64)
        part[np.searchsorted(ids, pids)] = idfs[s.term] * _tf_part(tfs, dls, avgdl, k1, b)
        acc = acc + part
    return acc


def _plan(
    stats: Sequence[TermStats], n_docs: int, avgdl: float, k1: float, b: float
) -> tuple[list[TermStats], dict[str, float], dict[str, float]]:
    """The query's terms in the order their scores are added (highest bound first), with
    their idf and bound: every path adds a chunk's term scores in this order, so equal
    scores are equal to the bit whichever path found them."""
    terms = [s for s in stats if s.df > 0]
    idfs = {s.term: idf(n_docs, s.df) for s in terms}
    ubs = {
        s.term: idfs[s.term]
        * float(_tf_part(np.array([s.max_tf]), np.array([s.min_dl]), avgdl, k1, b)[0])
        for s in terms
    }
    return sorted(terms, key=lambda s: (-ubs[s.term], s.df, s.term)), idfs, ubs


def top_k(
    stats: Sequence[TermStats],
    n_docs: int,
    avgdl: float,
    k: int,
    source: PostingSource,
    *,
    k1: float = K1,
    b: float = B,
    verify: Callable[[np.ndarray], np.ndarray] | None = None,
    work: Work | None = None,
) -> list[tuple[int, float]]:
    """The exact top ``k`` ``(chunk id, score)``, best first (ties: smaller id first).

    ``verify`` (metadata filters) maps candidate ids to a mask of those that qualify; the
    pruning threshold then counts only verified candidates, so the result equals
    filtering first and scoring after.
    """
    held: list[_Accumulator | _Positions] = []  # reused arrays, given back however it ends
    try:
        return _top_k(stats, n_docs, avgdl, k, source, k1, b, verify, work, held)
    finally:
        for h in held:
            h.release()


def _top_k(
    stats: Sequence[TermStats],
    n_docs: int,
    avgdl: float,
    k: int,
    source: PostingSource,
    k1: float,
    b: float,
    verify: Callable[[np.ndarray], np.ndarray] | None,
    work: Work | None,
    held: list[_Accumulator | _Positions],
) -> list[tuple[int, float]]:
    work = work if work is not None else Work()
    if k <= 0 or n_docs <= 0 or avgdl <= 0:
        return []
    order, idfs, ubs = _plan(stats, n_docs, avgdl, k1, b)
    if not order:
        return []
    rest_ub = [0.0] * (len(order) + 1)
    for i in range(len(order) - 1, -1, -1):
        rest_ub[i] = rest_ub[i + 1] + ubs[order[i].term]
    work.terms = len(order)
    work.postings_total = sum(s.df for s in order)

    accumulator = _Accumulator(k, postings=work.postings_total)
    held.append(accumulator)
    ok_ids = np.empty(0, dtype=np.int64)  # verified to pass the filter (sorted)
    bad_ids = np.empty(0, dtype=np.int64)  # verified to fail it (sorted)

    def threshold() -> float:
        """θ: the k-th best partial score of candidates that qualify (all of them without
        a filter; with one, the best unverified candidates are verified first)."""
        nonlocal ok_ids, bad_ids
        if verify is None:
            return accumulator.theta
        acc_ids, acc = accumulator.arrays()
        known = _in_sorted(ok_ids, acc_ids)[0]
        top = np.argsort(-acc, kind="stable")
        need = top[~known[top]][: max(2 * k, 64)]
        if len(need):
            cand = acc_ids[need]
            mask = np.asarray(verify(cand), dtype=bool)
            work.verified += len(cand)
            ok_ids = np.union1d(ok_ids, cand[mask])
            bad_ids = np.union1d(bad_ids, cand[~mask])
            accumulator.drop(cand[~mask])
            acc_ids, acc = accumulator.arrays()
        known = _in_sorted(ok_ids, acc_ids)[0]
        return _kth(acc[known], k)

    # 1. essential terms, whole lists, highest bound first
    i = 0
    theta = 0.0
    while i < len(order):
        batch = [order[i]]
        i += 1
        while (
            i < len(order) and order[i].df <= SMALL_LIST and sum(s.df for s in batch) <= SMALL_LIST
        ):
            batch.append(order[i])
            i += 1
        lists = source.postings([s.term for s in batch])
        work.rounds += 1
        for s in batch:
            ids, tfs, dls = lists.get(s.term, (np.empty(0, np.int64), np.empty(0), np.empty(0)))
            if verify is not None and len(bad_ids):
                keep = ~_in_sorted(bad_ids, ids)[0]
                ids, tfs, dls = ids[keep], tfs[keep], dls[keep]
            work.postings += len(ids)
            work.full_terms += 1
            accumulator.add(ids, idfs[s.term] * _tf_part(tfs, dls, avgdl, k1, b), dls)
        theta = threshold()
        if rest_ub[i] < theta - EPS:
            break

    # 2. candidates that can still reach θ, refined with the block bounds of every
    # remaining term; the best few are scored exactly first, which lifts θ
    rest = order[i:]
    if rest:
        cand_ids, cand = accumulator.arrays(theta - rest_ub[i] - EPS)
        cand_dls = accumulator.lengths(cand_ids)
        metas = source.block_meta([s.term for s in rest])
        work.rounds += 1
        rest = [s for s in rest if s.term in metas]
        covers = [
            _BlockBounds(
                metas[s.term],
                idfs[s.term],
                lambda tfs_, dls_: _tf_part(tfs_, dls_, avgdl, k1, b),
            )
            for s in rest
        ]
        # per remaining term: which blocks were read, and their postings (each once)
        seen = [np.zeros(len(metas[s.term].first), dtype=bool) for s in rest]
        pool: list[list[Postings]] = [[] for _ in rest]

        def read(which: dict[int, np.ndarray]) -> None:
            """Read the blocks ``which[j]`` of the terms ``rest[j]`` not read yet, in one
            round trip."""
            wanted = {j: w[~seen[j][w]] for j, w in which.items()}
            wanted = {j: w for j, w in wanted.items() if len(w)}
            if not wanted:
                return
            got = source.blocks({rest[j].term: (metas[rest[j].term], w) for j, w in wanted.items()})
            work.rounds += 1
            for j, todo in wanted.items():
                seen[j][todo] = True
                postings = got[rest[j].term]
                work.blocks += len(todo)
                work.postings += len(postings[0])
                pool[j].append(postings)

        def contribution(j: int, ids_: np.ndarray, where: _Positions | None = None) -> np.ndarray:
            """Term ``rest[j]``'s scores of ``ids_``, from its blocks read so far (they must
            include every block that may hold one of ``ids_``; ``where``: the positions of
            ``ids_``, when they are the candidates)."""
            out = np.zeros(len(ids_), dtype=np.float64)
            if not pool[j]:
                return out
            if len(pool[j]) > 1:
                parts = pool[j]
                pool[j] = [
                    (
                        np.concatenate([p[0] for p in parts]),
                        np.concatenate([p[1] for p in parts]),
                        np.concatenate([p[2] for p in parts]),
                    )
                ]
            pids, tfs, dls = pool[j][0]
            hit, pos = where.find(pids) if where is not None else _in_sorted(ids_, pids)
            # a chunk has one posting per term, so each position is hit at most once
            out[pos[hit]] = idfs[rest[j].term] * _tf_part(tfs[hit], dls[hit], avgdl, k1, b)
            return out

        # each remaining term's block bound of each candidate, term by term: a candidate
        # whose bound, with the terms not yet bounded at their list's bound, falls below θ
        # is dropped before the next term's blocks are searched for it
        rows: list[np.ndarray] = []
        reach = cand + sum(ubs[s.term] for s in rest)
        for j, s in enumerate(rest):
            row = covers[j].find(cand_ids, cand_dls)[0]
            reach = reach - ubs[s.term] + row
            alive = reach >= theta - EPS
            if not alive.all():
                cand_ids, cand, cand_dls, reach, row = (
                    cand_ids[alive],
                    cand[alive],
                    cand_dls[alive],
                    reach[alive],
                    row[alive],
                )
                rows = [r[alive] for r in rows]
            rows.append(row)
        bounds = np.array(rows, dtype=np.float64).reshape(len(rest), len(cand_ids))
        alive = cand + bounds.sum(axis=0) >= theta - EPS
        cand_ids, cand, bounds = cand_ids[alive], cand[alive], bounds[:, alive]

        def from_forward(ids_: np.ndarray, js: Sequence[int], acc_: np.ndarray) -> np.ndarray:
            """``acc_`` plus the exact scores of the terms ``rest[js]`` for ``ids_``."""
            terms_ = [rest[j] for j in js]
            return _from_rows(source, ids_, terms_, idfs, acc_, avgdl, k1, b, work)

        # candidates whose score is exact already (scored from their own rows)
        done = np.zeros(len(cand_ids), dtype=bool)

        def prune() -> None:
            """Lift θ with the candidates' scores (without a filter: with one, only verified
            scores may) and drop the candidates whose bound cannot reach it."""
            nonlocal cand_ids, cand, bounds, done, theta
            if verify is None:
                theta = max(theta, _kth(cand, k))
            alive = cand + bounds.sum(axis=0) >= theta - EPS
            cand_ids, cand, bounds, done = (
                cand_ids[alive],
                cand[alive],
                bounds[:, alive],
                done[alive],
            )

        def resolve(js: range, first: int, grow: bool) -> None:
            """Score candidates exactly from their own rows for the terms ``rest[js]``, best
            bound first: ``first`` of them, then (``grow``) twice as many each round, each
            round lifting θ and dropping the candidates whose bound fell below it, until
            every candidate left is exact (a few round trips instead of every row)."""
            size = first
            while True:
                ub = cand + bounds.sum(axis=0)
                todo = np.flatnonzero(~done)
                if len(todo) == 0:
                    return
                if len(todo) > 2 * size:  # else all of them now, not a small last round
                    todo = todo[np.argsort(-ub[todo], kind="stable")[:size]]
                todo = np.sort(todo)
                cand[todo] = from_forward(cand_ids[todo], js, cand[todo].copy())
                bounds[:, todo] = 0.0
                done[todo] = True
                prune()
                if not grow:
                    return
                size *= 2

        if verify is None and len(cand_ids) > k:
            # the best few first: their k-th best score lifts θ before the rest is pruned
            resolve(range(len(rest)), max(k, SEEDS), grow=False)

        where: _Positions | None = None
        for j, s in enumerate(rest):
            if len(cand_ids) == 0 or done.all():
                break
            left = int((~done).sum())
            if left * FORWARD_COST < sum(_block_cost(metas[r.term], left) for r in rest[j:]):
                # few candidates left: their own rows cost less than the lists' blocks; best
                # bound first (without a filter), so that θ prunes most before they are read
                resolve(
                    range(j, len(rest)),
                    max(k, SEEDS) if verify is None else len(cand_ids),
                    grow=verify is None,
                )
                break
            if where is None:
                where = _Positions(
                    min([int(cand_ids[0])] + [int(metas[r.term].first.min()) for r in rest]),
                    max([int(cand_ids[-1])] + [int(metas[r.term].last.max()) for r in rest]),
                    sum(r.df for r in rest),
                )
                held.append(where)
            open_ = ~done
            where.set(cand_ids[open_])
            _, needed = covers[j].find(cand_ids[open_])
            which = np.flatnonzero(needed)
            read({j: which})
            cand[open_] = cand[open_] + contribution(j, cand_ids[open_], where)
            bounds[j] = 0.0
            prune()
        acc_ids, acc = cand_ids, cand
    else:
        acc_ids, acc = accumulator.arrays(theta - EPS)
    work.candidates = len(acc_ids)

    if verify is not None and len(acc_ids):
        # exact scores now: walk them best first and keep the first k that qualify
        ranked = np.lexsort((acc_ids, -acc))
        chosen: list[int] = []
        step = max(4 * k, 256)
        for start in range(0, len(ranked), step):
            part = ranked[start : start + step]
            ids = acc_ids[part]
            known = _in_sorted(ok_ids, ids)[0]
            bad = _in_sorted(bad_ids, ids)[0]
            mask = known.copy()
            todo = ~known & ~bad
            if todo.any():
                mask[todo] = np.asarray(verify(ids[todo]), dtype=bool)
                work.verified += int(todo.sum())
            chosen.extend(int(j) for j in part[mask])
            if len(chosen) >= k:
                break
        sel = np.array(chosen[:k], dtype=np.int64)
        return [(int(acc_ids[j]), float(acc[j])) for j in sel if acc[j] > 0]

    return [(int(acc_ids[j]), float(acc[j])) for j in _best(acc_ids, acc, k) if acc[j] > 0]


TOPS_MAX_FORWARD = 512
"""The tops path gives up (for :func:`top_k`) when more candidates than this would have to
be scored from their rows: a query whose top k the tops do not decide."""
TOPS_REACH = 0.25
"""... or at once when θ (the k-th best lower bound) would have to rise more than this
share of the way to the k-th best upper bound to pass the chunks outside every top."""


@dataclass(frozen=True)
class Tops:
    """What the tops of a query's lists say of one term, list (ACL class) by list:
    ``known`` — postings whose score for the term is known (the tops of its long lists and
    its short lists whole, ids sorted), ``lists`` — the list of each, and ``rest`` — for
    each list with postings not among them, the (tf, dl) frontier of those. A list in
    neither is known whole, or holds no posting of the term."""

    known: Postings
    lists: np.ndarray
    rest: Mapping[int, tuple[np.ndarray, np.ndarray]]


def _sorted_unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values sorted, and the position in ``values`` of each one's first
    occurrence (a sort: numpy's hash-based unique cost ~4x more on a query's few thousand
    ids)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    first = np.ones(len(ordered), dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first], order[first]


def top_k_from_tops(
    stats: Sequence[TermStats],
    n_docs: int,
    avgdl: float,
    k: int,
    tops: Mapping[str, Tops],
    source: PostingSource,
    *,
    k1: float = K1,
    b: float = B,
    work: Work | None = None,
) -> list[tuple[int, float]] | None:
    """The exact top ``k`` as :func:`top_k` finds it, from each term's best postings alone
    and a bound of the rest, or None when they do not decide it (then :func:`top_k` must).

    Every chunk in a top is a candidate; its score for a term is known where the chunk is
    in that term's known postings; where not, it is 0 if the term's list in the chunk's
    own class is known whole, else at most that list's rest bound at the chunk's length.
    Candidates are scored exactly from their own rows (the forward index), best upper
    bound first, until none left unscored can reach θ, the k-th best score. A chunk in no
    top scores at most the best sum, over one class and one length, of the rest bounds of
    that class's lists: below θ, the top k is exact; else the tops cannot decide. It gives
    up early (None) when that is unlikely (:data:`TOPS_REACH`) or costs more rows than
    :data:`TOPS_MAX_FORWARD`."""
    work = work if work is not None else Work()
    if k <= 0 or n_docs <= 0 or avgdl <= 0:
        return []
    order, idfs, _ = _plan(stats, n_docs, avgdl, k1, b)
    if not order or any(s.term not in tops for s in order):
        return [] if not order else None
    work.terms = len(order)
    work.postings_total = sum(s.df for s in order)
    rests = [tops[s.term].rest for s in order]

    def rest_bound(j: int, front: tuple[np.ndarray, np.ndarray], dls: np.ndarray) -> np.ndarray:
        """Term ``order[j]``'s best score for chunks of lengths ``dls`` whose posting is
        among the postings ``front`` bounds: one of them is beaten by a frontier point, so
        its tf is at most the largest of the points no longer than the chunk."""
        tf_p, dl_p = front  # tf and dl both descending
        out = np.zeros(len(dls), dtype=np.float64)
        if len(tf_p) == 0:
            return out
        first = len(dl_p) - np.searchsorted(dl_p[::-1], dls, side="right")
        ok = first < len(dl_p)
        out[ok] = idfs[order[j].term] * _tf_part(tf_p[first[ok]], dls[ok], avgdl, k1, b)
        return out

    # a chunk in no top: in its class, the best sum of the rest bounds at one length (the
    # sum is highest at the length of some frontier point, where a term's bound steps up)
    outside = 0.0
    for lst in sorted(set().union(*rests)):
        fronts = [(j, r[lst]) for j, r in enumerate(rests) if lst in r]
        lengths = _sorted_unique(np.concatenate([f[1] for _, f in fronts]))[0]
        if len(lengths):
            total = np.zeros(len(lengths), dtype=np.float64)
            for j, f in fronts:
                total += rest_bound(j, f, lengths)
            outside = max(outside, float(total.max()))
    known = [tops[s.term].known for s in order]
    cand, at = _sorted_unique(np.concatenate([p[0] for p in known]))
    cand_list = np.concatenate([tops[s.term].lists for s in order])[at]
    work.postings = sum(len(p[0]) for p in known)
    if len(cand) == 0:
        return [] if outside == 0.0 else None
    lower = np.zeros(len(cand), dtype=np.float64)
    held = np.zeros((len(order), len(cand)), dtype=bool)
    cand_dl = np.zeros(len(cand), dtype=np.int64)
    for j, (s, (ids, tfs, dls)) in enumerate(zip(order, known)):
        part = np.zeros(len(cand), dtype=np.float64)
        pos = np.searchsorted(cand, ids)
        part[pos] = idfs[s.term] * _tf_part(tfs, dls, avgdl, k1, b)
        lower = lower + part  # term by term, in the order every path adds them
        held[j, pos] = True
        cand_dl[pos] = dls
    missing = np.zeros(len(cand), dtype=np.float64)
    for j in range(len(order)):
        for lst, front in rests[j].items():
            lacking = ~held[j] & (cand_list == lst)
            if len(front[0]) and lacking.any():
                missing[lacking] += rest_bound(j, front, cand_dl[lacking])
    upper = lower + missing
    exact = missing == 0.0
    theta = _kth(lower, k)
    if outside > 0.0 and outside >= _kth(upper, k) - EPS:
        return None  # θ can never pass the chunks outside every top
    if outside > theta + TOPS_REACH * (_kth(upper, k) - theta):
        return None  # θ would have to rise most of the way its bounds allow
    size = max(k, SEEDS)
    scored = 0
    while True:
        # a candidate bounded below the outside need not be scored: the tops decide only
        # once θ passes the outside, and then it is below θ too
        todo = np.flatnonzero(~exact & (upper >= max(theta, outside) - EPS))
        if len(todo) == 0:
            break
        if len(todo) > 2 * size:  # best bound first; else all of them now
            todo = np.sort(todo[np.argsort(-upper[todo], kind="stable")[:size]])
        if scored + len(todo) > TOPS_MAX_FORWARD:
            return None
        scored += len(todo)
        acc = _from_rows(source, cand[todo], order, idfs, np.zeros(len(todo)), avgdl, k1, b, work)
        lower[todo] = acc
        upper[todo] = acc
        exact[todo] = True
        theta = max(theta, _kth(lower, k))
        if outside > 0.0 and outside >= _kth(upper, k) - EPS:
            return None  # the bounds came down: θ cannot pass the outside now
        size *= 2
    if outside > 0.0 and outside >= theta - EPS:
        return None
    ids, scores = cand[exact], lower[exact]
    work.candidates = len(ids)
    work.tops = 1
    return [(int(ids[j]), float(scores[j])) for j in _best(ids, scores, k) if scores[j] > 0]
