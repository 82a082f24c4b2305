"""The pruned BM25 top-k equals exhaustive scoring exactly, on random corpora (no database).

The posting source here is in memory but cuts lists into blocks with the real codec, so
block bounds, overlapping blocks of interleaved writers and several ACL lists per term are
all exercised against a brute-force reference.
"""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ragline.store import bm25_codec as codec
from ragline.store.bm25_topk import (
    BlockMeta,
    TermStats,
    Tops,
    Work,
    _Accumulator,
    top_k,
    top_k_from_tops,
)
from ragline.store.bm25_write import (
    decode_forward,
    encode_forward,
    forward_index,
    packed_forward_postings,
)


def pack_forward(rows):
    """Forward rows ``(id, dl, terms, tfs)`` (sorted by id) packed into one, as
    :data:`ragline.store.bm25_write.FORWARD_PACKED` has the server pack them."""
    return (
        np.array([r[0] for r in rows], dtype=np.int64),
        np.array([r[1] for r in rows], dtype=np.int64),
        "\n".join([f" {r[2]} " if r[2] else " " for r in rows]).encode(),
        b"".join([bytes(r[3]) for r in rows]),
    )


def row_postings(rows, terms):
    """The postings of ``terms`` among forward ``rows`` ``(id, dl, terms, tfs)``, each row
    decoded on its own: the reference for the packed read."""
    wanted, found = set(terms), {}
    for cid, dl, text, tfs in rows:
        for term, tf in zip(*decode_forward(text, tfs)):
            if term in wanted:
                found.setdefault(term, []).append((cid, tf, dl))
    return {t: tuple(np.array(c, dtype=np.int64) for c in zip(*p)) for t, p in found.items()}


class MemorySource:
    """Lists per (list id, term) stored as real encoded blocks."""

    def __init__(self, lists: dict[tuple[int, str], list[tuple[int, int, int]]], batches: int = 1):
        self.lists: dict[str, list[tuple[int, int, int, int, int, bytes]]] = {}
        for (lst, term), posts in lists.items():
            posts = sorted(posts)
            # several "writers": the list arrives in interleaved batches, as concurrent
            # ingests produce, so blocks of one list may overlap in id range
            for part in range(batches):
                chunk = posts[part::batches]
                if not chunk:
                    continue
                ids = np.array([p[0] for p in chunk], dtype=np.int64)
                tfs = np.array([p[1] for p in chunk])
                dls = np.array([p[2] for p in chunk])
                for blk in codec.cut_blocks(ids, tfs, dls):
                    self.lists.setdefault(term, []).append((lst, *blk))
        self.reads = 0
        self.forward_rows = 0
        self.docs: dict[int, dict[str, int]] = {}
        self.dls: dict[int, int] = {}
        for (_lst, term), posts in lists.items():
            for cid, tf, dl in posts:
                self.docs.setdefault(cid, {})[term] = tf
                self.dls[cid] = dl

    def postings(self, terms):
        out = {}
        for t in terms:
            blks = self.lists.get(t, [])
            self.reads += len(blks)
            out[t] = codec.decode_blocks([b[-1] for b in blks])
        return out

    def block_meta(self, terms):
        out = {}
        for t in terms:
            blks = self.lists.get(t, [])
            if blks:
                out[t] = BlockMeta(
                    lists=np.array([b[0] for b in blks]),
                    n=np.array([b[3] for b in blks]),
                    first=np.array([b[1] for b in blks], dtype=np.int64),
                    last=np.array([b[2] for b in blks], dtype=np.int64),
                    max_tf=np.array([b[4] for b in blks]),
                    min_dl=np.array([b[5] for b in blks]),
                )
        return out

    def forward(self, ids, terms):
        """From each chunk's own terms, encoded and decoded as the chunks table holds them."""
        rows = [
            (int(i), self.dls[int(i)], *encode_forward(*forward_index(self.docs[int(i)])))
            for i in ids
        ]
        self.forward_rows += len(rows)
        return packed_forward_postings(*pack_forward(rows), terms)

    def blocks(self, wanted):
        out = {}
        for term, (_meta, which) in wanted.items():
            blks = self.lists[term]
            self.reads += len(which)
            out[term] = codec.decode_blocks([blks[i][-1] for i in which])
        return out


def reference(docs: dict[int, Counter], query: list[str], k: int, allowed=None, k1=1.2, b=0.75):
    n = len(docs)
    avgdl = sum(sum(c.values()) for c in docs.values()) / n
    df = Counter(t for c in docs.values() for t in c)
    scores = {}
    for cid, c in docs.items():
        if allowed is not None and cid not in allowed:
            continue
        dl = sum(c.values())
        s = 0.0
        for t in set(query):
            if c[t]:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * c[t] / (c[t] + k1 * (1 - b + b * dl / avgdl))
        if s > 0:
            scores[cid] = s
    return sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:k], n, avgdl, df


def _world(seed: int, n_docs: int, vocab: int, n_lists: int):
    rng = random.Random(seed)
    # Zipf-like vocabulary so lists range from one posting to most documents
    words = [f"w{i}" for i in range(vocab)]
    weights = [1 / (i + 1) for i in range(vocab)]
    docs: dict[int, Counter] = {}
    cid = rng.randint(1, 10**6)
    for _ in range(n_docs):
        cid += rng.choice((1, 1, 1, 2, 7, 300))
        docs[cid] = Counter(rng.choices(words, weights, k=rng.randint(1, 60)))
    lists = {cid: rng.randrange(n_lists) for cid in docs}
    return rng, words, weights, docs, lists


def _source(docs, lists, batches):
    by_list: dict[tuple[int, str], list[tuple[int, int, int]]] = {}
    for cid, c in docs.items():
        dl = sum(c.values())
        for t, tf in c.items():
            by_list.setdefault((lists[cid], t), []).append((cid, tf, dl))
    return MemorySource(by_list, batches)


def _stats(docs, query):
    out = []
    for t in dict.fromkeys(query):
        tfs = [c[t] for c in docs.values() if c[t]]
        dls = [sum(c.values()) for c in docs.values() if c[t]]
        if tfs:
            out.append(TermStats(t, len(tfs), max(tfs), min(dls)))
    return out


def _check(got, ref):
    """Same scores position by position; same ids, except that chunks whose scores are
    equal (but were summed in another order, so differ in the last bit) may swap, and a
    tie across the k-th place may keep either."""
    assert len(got) == len(ref)
    for (_, a), (_, b) in zip(got, ref):
        assert a == pytest.approx(b, abs=1e-9)

    def canonical(hits):
        return [c for c, s in sorted(hits, key=lambda h: (-round(h[1], 9), h[0]))]

    last = round(ref[-1][1], 9) if ref else None
    cut = [c for c, s in ref if round(s, 9) != last]  # everything above the last tie group
    assert canonical(got)[: len(cut)] == canonical(ref)[: len(cut)]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10**9),
    n_docs=st.integers(1, 1500),
    k=st.sampled_from([1, 3, 10, 50]),
    n_lists=st.integers(1, 4),
    batches=st.integers(1, 3),
)
def test_top_k_equals_exhaustive(seed, n_docs, k, n_lists, batches):
    rng, words, weights, docs, lists = _world(seed, n_docs, 400, n_lists)
    src = _source(docs, lists, batches)
    for _ in range(5):
        query = rng.choices(words, weights, k=rng.randint(1, 12)) + rng.sample(words, 2)
        ref, n, avgdl, _ = reference(docs, query, k)
        got = top_k(_stats(docs, query), n, avgdl, k, src)
        _check(got, ref)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10**9),
    n_docs=st.integers(1, 1200),
    k=st.sampled_from([1, 5, 10]),
    keep=st.floats(0.0, 1.0),
)
def test_filtered_top_k_equals_filter_then_score(seed, n_docs, k, keep):
    """With a metadata filter the statistics stay the caller's (unfiltered) and only the
    candidates are restricted: the result is the exhaustive top k of the allowed chunks."""
    rng, words, weights, docs, lists = _world(seed, n_docs, 300, 2)
    src = _source(docs, lists, 2)
    allowed = {c for c in docs if rng.random() < keep}
    calls = []

    def verify(ids):
        calls.append(len(ids))
        return np.array([int(i) in allowed for i in ids], dtype=bool)

    for _ in range(4):
        query = rng.choices(words, weights, k=rng.randint(1, 10))
        ref, n, avgdl, _ = reference(docs, query, k, allowed=allowed)
        got = top_k(_stats(docs, query), n, avgdl, k, src, verify=verify)
        _check(got, ref)


@settings(max_examples=40, deadline=None)
@given(
    cost=st.sampled_from([0.0, 1e12]),
    seed=st.integers(0, 10**9),
    n_docs=st.integers(1, 1500),
    k=st.sampled_from([1, 10]),
)
def test_forward_and_block_scoring_agree(cost, seed, n_docs, k):
    """Scoring the candidates from their own term lists (always, or never) gives the
    exhaustive top k, unfiltered and filtered (one list per round, so that lists are left
    for the candidate phase even in small worlds)."""
    import ragline.store.bm25_topk as topk

    old = topk.FORWARD_COST, topk.SMALL_LIST
    topk.FORWARD_COST, topk.SMALL_LIST = cost, 0
    work = Work()  # the candidate phase runs (seeds by row either way)
    try:
        rng, words, weights, docs, lists = _world(seed, n_docs, 300, 2)
        src = _source(docs, lists, 2)
        allowed = {c for c in docs if rng.random() < 0.5}

        def verify(ids):
            return np.array([int(i) in allowed for i in ids], dtype=bool)

        for _ in range(3):
            query = rng.choices(words, weights, k=rng.randint(1, 12))
            ref, n, avgdl, _ = reference(docs, query, k)
            _check(top_k(_stats(docs, query), n, avgdl, k, src, work=work), ref)
            ref, n, avgdl, _ = reference(docs, query, k, allowed=allowed)
            _check(top_k(_stats(docs, query), n, avgdl, k, src, verify=verify, work=work), ref)
    finally:
        topk.FORWARD_COST, topk.SMALL_LIST = old


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.dictionaries(
            st.sampled_from(["a", "ab", "b", "ba", "abc", "cab", "é", "éa", "жук", "x1"]),
            st.integers(1, 40000),
            max_size=8,
        ),
        max_size=12,
    ),
    query=st.lists(st.sampled_from(["a", "ab", "b", "abc", "é", "жук", "zz"]), max_size=5),
)
def test_packed_forward_postings_equal_decoding_each_row(rows, query):
    """Terms found by substring search in the joined rows are exactly each row's own (no
    term matched inside another, at a row's edge or across rows), with its tf and dl."""
    table = [
        (10 + 3 * i, 100 + i, *encode_forward(*forward_index(terms)))
        for i, terms in enumerate(rows)
    ]
    got = packed_forward_postings(*pack_forward(table), list(dict.fromkeys(query)))
    for t in dict.fromkeys(query):
        want = [
            (10 + 3 * i, min(terms[t], 32767), 100 + i)
            for i, terms in enumerate(rows)
            if t in terms
        ]
        have = list(zip(*(a.tolist() for a in got[t]))) if t in got else []
        assert have == want


def test_pruning_reads_a_fraction_of_the_postings():
    """A long query over a skewed corpus: the common terms' lists are not read whole (only
    the rare terms are; the common ones only in the blocks that can hold a candidate)."""
    rng, words, weights, docs, lists = _world(3, 20000, 3000, 1)
    src = _source(docs, lists, 1)
    query = [words[0], words[1], words[2], words[5], words[40], words[700], words[2500]]
    ref, n, avgdl, _ = reference(docs, query, 10)
    work = Work()
    got = top_k(_stats(docs, query), n, avgdl, 10, src, work=work)
    _check(got, ref)
    assert work.full_terms == 3 and work.postings < 0.8 * work.postings_total, work
    assert 0 < work.forward < 0.01 * work.postings_total, work  # the last candidates by row


def test_codec_round_trip_and_widths():
    rng = np.random.default_rng(1)
    for dense in (1, 40, 70000, 2**40):
        ids = np.cumsum(rng.integers(1, dense + 1, size=700)).astype(np.int64) + 5
        tfs = rng.integers(1, 300, size=700)
        dls = rng.integers(1, 70000, size=700)
        blocks = list(codec.cut_blocks(ids, tfs, dls))
        assert sum(b[2] for b in blocks) == 700
        assert all(len(b[5]) <= codec.BLOCK_BYTES for b in blocks)
        got = codec.decode_blocks([b[5] for b in blocks])
        assert np.array_equal(got[0], ids) and np.array_equal(got[1], tfs)
        assert np.array_equal(got[2], dls)
        for first, last, cnt, max_tf, min_dl, data in blocks:
            i, t, d = codec.decode_block(data)
            assert (first, last, cnt, max_tf, min_dl) == (i[0], i[-1], len(i), t.max(), d.min())
    with pytest.raises(ValueError):
        codec.encode_block(np.array([3, 3]), np.array([1, 1]), np.array([1, 1]))


@settings(max_examples=60, deadline=None)
@given(
    spec=st.lists(
        st.tuples(
            st.one_of(  # postings: full blocks share a length, partial ones do not
                st.sampled_from([1, 5, 512, 512, 512]), st.integers(1, 600)
            ),
            st.sampled_from([1, 300, 70000, 2**33]),  # id gaps: every id-delta width
            st.sampled_from([2, 300]),  # tf range: both tf widths
            st.sampled_from([500, 70000]),  # dl range: both dl widths
        ),
        max_size=14,
    ),
    seed=st.integers(0, 10**6),
)
def test_decode_blocks_equals_decoding_each(spec, seed):
    """Blocks decoded together (per format, whatever their lengths) come back in their
    given order, equal to decoding each block on its own."""
    rng = np.random.default_rng(seed)
    blocks, want = [], []
    for n, gap, tf_hi, dl_hi in spec:
        ids = np.cumsum(rng.integers(1, gap + 1, size=n)).astype(np.int64) + int(
            rng.integers(0, 10**9)
        )
        tfs, dls = rng.integers(1, tf_hi, size=n), rng.integers(1, dl_hi, size=n)
        data = codec.encode_block(ids, tfs, dls)
        blocks.append(data)
        want.append(codec.decode_block(data))
    got = codec.decode_blocks(blocks)
    for i in range(3):
        expect = np.concatenate([w[i] for w in want]) if want else np.empty(0)
        assert got[i].tolist() == expect.tolist()


@settings(max_examples=50, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 1300), min_size=1, max_size=12),
    gap=st.sampled_from([1, 3, 300, 70000, 2**33]),
    big=st.booleans(),
)
@example(lengths=[285], gap=2**33, big=True)  # 3,993 bytes exactly, 284 postings by width
def test_encode_lists_equals_cutting_each_list(lengths, gap, big):
    rng = np.random.default_rng(sum(lengths) + gap)
    starts, ids, tfs, dls = [], [], [], []
    for n in lengths:
        starts.append(len(ids))
        ids.extend((np.cumsum(rng.integers(1, gap + 1, size=n)) + 10).tolist())
        tfs.extend(rng.integers(1, 400 if big else 9, size=n).tolist())
        dls.extend(rng.integers(1, 90000 if big else 300, size=n).tolist())
    ids_a, tfs_a, dls_a = np.array(ids, np.int64), np.array(tfs), np.array(dls)
    got = list(codec.encode_lists(np.array(starts), ids_a, tfs_a, dls_a).rows())
    want = []
    for i, n in enumerate(lengths):
        lo = starts[i]
        want.extend(
            (i, *b)
            for b in codec.cut_blocks(ids_a[lo : lo + n], tfs_a[lo : lo + n], dls_a[lo : lo + n])
        )
    assert got == sorted(want)  # in (list, first id) order
    per_list: dict[int, list[int]] = {}
    for lst, first, last, cnt, max_tf, min_dl, _data in want:
        a = per_list.setdefault(lst, [0, 0, 2**62, 0, 0])
        a[0] += cnt
        a[1], a[2], a[3] = max(a[1], max_tf), min(a[2], min_dl), max(a[3], last - first)
        a[4] += cnt < codec.SMALL_BLOCK
    cols = codec.encode_lists(np.array(starts), ids_a, tfs_a, dls_a).per_list()
    assert {r[0]: list(r[1:]) for r in zip(*(c.tolist() for c in cols))} == per_list


@settings(max_examples=80, deadline=None)
@given(
    lists=st.lists(
        st.lists(st.integers(0, 5000), unique=True, max_size=300), min_size=1, max_size=8
    ),
    k=st.sampled_from([1, 3, 10]),
    span=st.sampled_from([50, 2000, 1 << 24]),
    base=st.sampled_from([0, 10**12]),
)
def test_accumulator_equals_summing(lists, k, span, base):
    """Partial scores summed densely (growing the range, or falling back to sorted arrays
    when it passes ``span``) equal a dictionary sum, θ is their k-th best, and each chunk's
    length is kept."""
    rng = random.Random(len(lists))
    acc = _Accumulator(k, span=span)
    want: dict[int, float] = {}

    def length(i: int) -> int:
        return 1 + (i * 7919) % 997

    for ids in lists:
        scores = [rng.uniform(0.01, 5) for _ in ids]
        acc.add(
            np.array(ids, dtype=np.int64) + base,
            np.array(scores),
            np.array([length(i) for i in ids], dtype=np.int64),
        )
        for i, x in zip(ids, scores):
            want[i + base] = want.get(i + base, 0.0) + x
        values = sorted(want.values(), reverse=True)
        assert acc.theta == pytest.approx(values[k - 1] if len(values) >= k else 0.0)
    ids, scores = acc.arrays()
    assert ids.tolist() == sorted(want)
    assert scores == pytest.approx([want[i] for i in ids.tolist()])
    assert acc.lengths(ids).tolist() == [length(i - base) for i in ids.tolist()]
    cut = sorted(want.values())[len(want) // 2] if want else 0.0
    ids, scores = acc.arrays(cut)
    assert ids.tolist() == sorted(i for i, x in want.items() if x >= cut)
    acc.release()  # gives the thread's scratch arrays back, zeroed


def test_scratch_arrays_are_zero_after_every_query_even_a_failed_one():
    """The dense arrays reused between queries are handed back all zeros, also when the
    source fails in the middle of a query, and none is lost; queries from several threads
    at once stay exact."""
    import threading

    import ragline.store.bm25_topk as topk

    rng, words, weights, docs, lists = _world(11, 3000, 400, 3)
    src = _source(docs, lists, 2)

    def kept() -> int:
        for key, arrays in topk._SCRATCH.free.items():
            for a in arrays:
                assert not a.any(), key
        return sum(len(v) for v in topk._SCRATCH.free.values())

    class Failing:
        def __init__(self, after: int) -> None:
            self.calls, self.after = 0, after

        def __getattr__(self, name):
            def call(*args):
                self.calls += 1
                if self.calls > self.after:
                    raise RuntimeError("connection lost")
                return getattr(src, name)(*args)

            return call

    queries = [rng.choices(words, weights, k=rng.randint(1, 12)) for _ in range(30)]
    for query in queries:
        ref, n, avgdl, _ = reference(docs, query, 10)
        counting = Failing(10**9)
        top_k(_stats(docs, query), n, avgdl, 10, counting)
        before = kept()
        if counting.calls:  # fail at one of the query's calls
            with pytest.raises(RuntimeError):
                top_k(_stats(docs, query), n, avgdl, 10, Failing(rng.randrange(counting.calls)))
            assert kept() >= before
        _check(top_k(_stats(docs, query), n, avgdl, 10, src), ref)
        assert kept() >= before
    assert kept(), "the queries reused arrays"

    errors: list[BaseException] = []

    def worker(offset: int) -> None:
        try:
            for query in queries[offset::4]:
                ref, n, avgdl, _ = reference(docs, query, 10)
                _check(top_k(_stats(docs, query), n, avgdl, 10, src), ref)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert 0 < kept() <= topk.SCRATCH_KEEP * 3


def _tops(docs, lists, query, size):
    """Each term's Tops as the store keeps them: per list, its ``size`` best postings and the
    frontier of the rest (lists of at most ``size`` postings known whole)."""
    avgdl = sum(sum(c.values()) for c in docs.values()) / len(docs)
    out = {}
    for t in dict.fromkeys(query):
        parts, owners, rests = [], [], {}
        for lst in sorted(set(lists.values())):
            posts = sorted(
                (cid, c[t], sum(c.values()))
                for cid, c in docs.items()
                if c[t] and lists[cid] == lst
            )
            if not posts:
                continue
            ids, tfs, dls = (np.array(x, dtype=np.int64) for x in zip(*posts))
            top, rest = codec.split_top(ids, tfs, dls, avgdl * (1 + lst) / 2, 1.2, 0.75, size)
            parts.append(codec.decode_block(top))
            owners.append(np.full(len(parts[-1][0]), lst, dtype=np.int64))
            if len(ids) > size:
                rests[lst] = codec.decode_frontier(rest)
        if not parts:
            continue
        ids = np.concatenate([p[0] for p in parts])
        order = np.argsort(ids)
        known = tuple(np.concatenate([p[j] for p in parts])[order] for j in range(3))
        out[t] = Tops(known, np.concatenate(owners)[order], rests)
    return out


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10**9),
    n_docs=st.integers(1, 1500),
    k=st.sampled_from([1, 3, 10]),
    n_lists=st.integers(1, 3),
    size=st.sampled_from([1, 4, 16, 64]),
)
def test_top_k_from_tops_equals_exhaustive_when_it_decides(seed, n_docs, k, n_lists, size):
    """Whatever the tops (chosen at any avgdl, of any size), a top k they decide is the
    exhaustive one; and a 1-term query whose k-th best score is strictly above every
    posting outside the tops is decided without reading a chunk row."""
    rng, words, weights, docs, lists = _world(seed, n_docs, 300, n_lists)
    src = _source(docs, lists, 1)
    decided = 0
    for _ in range(6):
        query = rng.choices(words, weights, k=rng.randint(1, 3))
        ref, n, avgdl, _ = reference(docs, query, k)
        work = Work()
        got = top_k_from_tops(
            _stats(docs, query), n, avgdl, k, _tops(docs, lists, query, size), src, work=work
        )
        if got is None:
            continue
        decided += 1
        _check(got, ref)
        if len(set(query)) == 1:
            assert work.forward == 0
    if n_docs >= 200 and size >= 16 and k <= 3:
        assert decided > 0


def test_top_k_from_tops_bounds_a_chunk_by_the_lists_of_its_own_class():
    """A term whose list in a chunk's class is known whole scores that chunk exactly (0
    when the chunk is not in it), and the chunks outside every top are bounded class by
    class: "pump" is common in class 0 only and "valve" in class 1 only, so no chunk has
    both, and the tops decide without reading a chunk row. Bounds merged over the classes
    would have to score candidates from their rows (each could hold the other term)."""
    docs = {}
    for i in range(1, 4001):
        if i % 2:
            docs[i] = Counter({"pump": 1 + i % 5, "x": 1 + i % 11})
        else:
            docs[i] = Counter({"valve": 1 + i % 7, "y": 1 + i % 13})
    lists = {i: i % 2 for i in docs}
    src = _source(docs, lists, 1)
    ref, n, avgdl, _ = reference(docs, ["pump", "valve"], 10)
    work = Work()
    got = top_k_from_tops(
        _stats(docs, ["pump", "valve"]),
        n,
        avgdl,
        10,
        _tops(docs, lists, ["pump", "valve"], 64),
        src,
        work=work,
    )
    assert got is not None
    _check(got, ref)
    assert work.forward == 0 and work.tops == 1


def test_top_k_from_tops_reads_a_one_term_query_from_its_top():
    docs = {i: Counter({"pump": 1 + i % 7, "x": 1 + i % 13}) for i in range(1, 3001)}
    lists = {i: 0 for i in docs}
    src = _source(docs, lists, 1)
    ref, n, avgdl, _ = reference(docs, ["pump"], 10)
    work = Work()
    got = top_k_from_tops(
        _stats(docs, ["pump"]), n, avgdl, 10, _tops(docs, lists, ["pump"], 64), src, work=work
    )
    assert got is not None
    _check(got, ref)
    assert work.postings == 64 and work.forward == 0 and work.tops == 1
