"""The byte format of a BM25 posting block, and how postings are cut into blocks.

A posting list of one term in one ACL class is stored as blocks of at most
:data:`BLOCK_POSTINGS` postings, each block one row (``bm25_blocks``). A block holds its
postings sorted by chunk id:

    byte 0      format: bits 0-1 id-delta width (1, 2, 4, 8 bytes), bit 2 tf width
                (1 or 2 bytes), bit 3 document-length width (2 or 4 bytes)
    bytes 1-2   n, the number of postings (little-endian uint16)
    bytes 3-10  the first chunk id (int64)
    then        n - 1 id deltas, n term frequencies, n document lengths (dl = the
                chunk's number of terms), each array little-endian at its width

Each array takes the narrowest width its values fit, so a dense list of a common term
costs 1 + 1 + 2 bytes per posting and a sparse one 4 + 1 + 2. A block never exceeds
:data:`BLOCK_BYTES`, so a row stays inline in its heap page (the column is STORAGE
PLAIN: no TOAST lookup, no decompression on the query path).

Pure functions on numpy arrays; no I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

BLOCK_POSTINGS = 512
"""Postings per full block: a query decodes a list in blocks of this size, and deleting a
chunk rewrites one block per term of the chunk."""
BLOCK_BYTES = 4000
"""Upper bound of one encoded block (a heap page holds 8 kB)."""
SMALL_BLOCK = BLOCK_POSTINGS // 4
"""Blocks with fewer postings are compacted with the list's other small blocks."""

_HEADER = struct.Struct("<BHq")
_ID_WIDTHS = (np.dtype("<u1"), np.dtype("<u2"), np.dtype("<u4"), np.dtype("<u8"))
_TF_WIDTHS = (np.dtype("<u1"), np.dtype("<u2"))
_DL_WIDTHS = (np.dtype("<u2"), np.dtype("<u4"))
MAX_TF = 65535
MAX_DL = 2**32 - 1


def _width(maximum: int, widths: Sequence[np.dtype]) -> int:
    for i, w in enumerate(widths):
        if maximum <= np.iinfo(w).max:
            return i
    raise ValueError(f"value {maximum} does not fit the block format")


def encode_block(ids: np.ndarray, tfs: np.ndarray, dls: np.ndarray) -> bytes:
    """One block of postings (``ids`` strictly increasing)."""
    n = len(ids)
    if n == 0 or n > 65535:
        raise ValueError(f"a block holds 1..65535 postings, got {n}")
    ids = np.asarray(ids, dtype=np.int64)
    deltas = np.diff(ids)
    if n > 1 and int(deltas.min()) <= 0:
        raise ValueError("block ids must be strictly increasing")
    iw = _width(int(deltas.max()) if n > 1 else 0, _ID_WIDTHS)
    tw = _width(int(np.max(tfs)), _TF_WIDTHS)
    dw = _width(int(np.max(dls)), _DL_WIDTHS)
    head = _HEADER.pack(iw | (tw << 2) | (dw << 3), n, int(ids[0]))
    return b"".join(
        (
            head,
            deltas.astype(_ID_WIDTHS[iw]).tobytes(),
            np.asarray(tfs).astype(_TF_WIDTHS[tw]).tobytes(),
            np.asarray(dls).astype(_DL_WIDTHS[dw]).tobytes(),
        )
    )


def decode_block(data: bytes | memoryview) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids int64, tfs, dls) of one block."""
    fmt, n, first = _HEADER.unpack_from(data, 0)
    iw, tw, dw = _ID_WIDTHS[fmt & 3], _TF_WIDTHS[(fmt >> 2) & 1], _DL_WIDTHS[(fmt >> 3) & 1]
    off = _HEADER.size
    deltas = np.frombuffer(data, dtype=iw, count=n - 1, offset=off)
    off += (n - 1) * iw.itemsize
    tfs = np.frombuffer(data, dtype=tw, count=n, offset=off)
    off += n * tw.itemsize
    dls = np.frombuffer(data, dtype=dw, count=n, offset=off)
    ids = np.empty(n, dtype=np.int64)
    ids[0] = first
    if n > 1:
        np.cumsum(deltas, dtype=np.int64, out=ids[1:])
        ids[1:] += first
    return ids, tfs, dls


def decode_blocks(
    blocks: Sequence[bytes | memoryview],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The postings of several blocks, concatenated in their order (ids sorted within each
    block only). The blocks of one format are decoded together whatever their lengths:
    each array's bytes are joined across the blocks and read once, so a list's partial
    and compacted blocks cost a slice each instead of a few array operations each."""
    if not blocks:
        e = np.empty(0, dtype=np.int64)
        return e, e.astype(np.int32), e.astype(np.int32)
    if len(blocks) == 1:
        return decode_block(blocks[0])
    heads = [_HEADER.unpack_from(b, 0) for b in blocks]
    fmts = {h[0] for h in heads}
    if len(fmts) == 1:
        return _decode_one_format(blocks, heads)
    # several formats: each decoded as one run, then put back in the blocks' order
    n = np.fromiter((h[1] for h in heads), dtype=np.int64, count=len(heads))
    out_at = np.cumsum(n) - n
    total = int(n.sum())
    ids = np.empty(total, dtype=np.int64)
    tfs = np.empty(total, dtype=_TF_WIDTHS[-1])
    dls = np.empty(total, dtype=_DL_WIDTHS[-1])
    fmt_of = np.fromiter((h[0] for h in heads), dtype=np.int64, count=len(heads))
    for f in sorted(fmts):
        sel = np.flatnonzero(fmt_of == f)
        members = sel.tolist()
        got = _decode_one_format([blocks[i] for i in members], [heads[i] for i in members])
        cnt = n[sel]
        dest = np.repeat(out_at[sel] - (np.cumsum(cnt) - cnt), cnt) + np.arange(int(cnt.sum()))
        ids[dest], tfs[dest], dls[dest] = got
    return ids, tfs, dls


def _decode_one_format(
    blocks: Sequence[bytes | memoryview], heads: Sequence[tuple[int, int, int]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The postings of ``blocks``, all of one format (``heads``: their headers),
    concatenated in their order."""
    fmt = heads[0][0]
    iw, tw, dw = _ID_WIDTHS[fmt & 3], _TF_WIDTHS[(fmt >> 2) & 1], _DL_WIDTHS[(fmt >> 3) & 1]
    d_parts, t_parts, l_parts = [], [], []
    for b, (_fmt, n, _first) in zip(blocks, heads):
        t0 = _HEADER.size + (n - 1) * iw.itemsize
        l0 = t0 + n * tw.itemsize
        d_parts.append(b[_HEADER.size : t0])
        t_parts.append(b[t0:l0])
        l_parts.append(b[l0 : l0 + n * dw.itemsize])
    tfs = np.frombuffer(b"".join(t_parts), dtype=tw)
    dls = np.frombuffer(b"".join(l_parts), dtype=dw)
    counts = np.fromiter((h[1] for h in heads), dtype=np.int64, count=len(heads))
    firsts = np.fromiter((h[2] for h in heads), dtype=np.int64, count=len(heads))
    # each block's first id, then its deltas: one running sum over them all, less what
    # the blocks before each one summed to
    at = np.cumsum(counts) - counts
    steps = np.empty(len(tfs), dtype=np.int64)
    rest = np.ones(len(tfs), dtype=bool)
    rest[at] = False
    steps[rest] = np.frombuffer(b"".join(d_parts), dtype=iw)
    steps[at] = firsts
    run = np.cumsum(steps)
    return run - np.repeat(run[at] - firsts, counts), tfs, dls


def block_sizes(blocks: Sequence[bytes | memoryview]) -> np.ndarray:
    """The number of postings in each block."""
    return np.array([_HEADER.unpack_from(b, 0)[1] for b in blocks], dtype=np.int64)


def _bytes_per_posting(ids: np.ndarray, tfs: np.ndarray, dls: np.ndarray) -> int:
    d = int(np.diff(ids).max()) if len(ids) > 1 else 0
    return (
        _ID_WIDTHS[_width(d, _ID_WIDTHS)].itemsize
        + _TF_WIDTHS[_width(int(tfs.max()), _TF_WIDTHS)].itemsize
        + _DL_WIDTHS[_width(int(dls.max()), _DL_WIDTHS)].itemsize
    )


def cut_blocks(
    ids: np.ndarray, tfs: np.ndarray, dls: np.ndarray
) -> Iterator[tuple[int, int, int, int, int, bytes]]:
    """Cut one sorted posting list into blocks: ``(first_id, last_id, n, max_tf, min_dl,
    data)`` each, full blocks of :data:`BLOCK_POSTINGS` (fewer when wide values would pass
    :data:`BLOCK_BYTES`), the remainder last."""
    n = len(ids)
    start = 0
    while start < n:
        end = min(n, start + BLOCK_POSTINGS)
        width = _bytes_per_posting(ids[start:end], tfs[start:end], dls[start:end])
        cap = max(1, (BLOCK_BYTES - _HEADER.size) // width)
        end = min(end, start + cap)
        i, t, d = ids[start:end], tfs[start:end], dls[start:end]
        yield (
            int(i[0]),
            int(i[-1]),
            end - start,
            int(t.max()),
            int(d.min()),
            encode_block(i, t, d),
        )
        start = end


@dataclass(frozen=True)
class EncodedBlocks:
    """The blocks of many posting lists, as columns sorted by (list, first id): the list
    each block belongs to, its bounds and count, and its bytes."""

    lists: np.ndarray
    first: np.ndarray
    last: np.ndarray
    n: np.ndarray
    max_tf: np.ndarray
    min_dl: np.ndarray
    data: list[bytes]

    def __len__(self) -> int:
        return len(self.data)

    def rows(self) -> Iterator[tuple[int, int, int, int, int, int, bytes]]:
        """``(list, first_id, last_id, n, max_tf, min_dl, data)`` per block."""
        cols = (self.lists, self.first, self.last, self.n, self.max_tf, self.min_dl)
        return zip(*(c.tolist() for c in cols), self.data)

    def per_list(self) -> tuple[np.ndarray, ...]:
        """One row per list present: ``(list, postings, max_tf, min_dl, longest id span,
        small blocks)``."""
        at = np.flatnonzero(np.diff(self.lists, prepend=-1))
        return (
            self.lists[at],
            np.add.reduceat(self.n, at),
            np.maximum.reduceat(self.max_tf, at),
            np.minimum.reduceat(self.min_dl, at),
            np.maximum.reduceat(self.last - self.first, at),
            np.add.reduceat((self.n < SMALL_BLOCK).astype(np.int64), at),
        )


def encode_lists(
    starts: np.ndarray, ids: np.ndarray, tfs: np.ndarray, dls: np.ndarray
) -> EncodedBlocks:
    """Blocks of many posting lists at once, exactly as :func:`cut_blocks` would cut every
    list.

    The postings are sorted by (list, id); list ``i`` starts at ``starts[i]``. A batch of
    chunks holds tens of thousands of lists, most of one or two postings, so the widths
    and bounds are computed for all blocks at once and only the bytes are joined per block.
    """
    n = len(ids)
    if n == 0:
        e = np.empty(0, dtype=np.int64)
        return EncodedBlocks(e, e, e, e, e, e, [])
    ids = np.asarray(ids, dtype=np.int64)
    tfs = np.asarray(tfs, dtype=np.int64)
    dls = np.asarray(dls, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.diff(np.append(starts, n))
    list_of = np.repeat(np.arange(len(starts)), lengths)
    pos = np.arange(n) - starts[list_of]
    bs = np.flatnonzero(pos % BLOCK_POSTINGS == 0)  # block starts
    be = np.append(bs[1:], n)
    counts = be - bs
    delta = np.zeros(n, dtype=np.int64)
    delta[1:] = ids[1:] - ids[:-1]
    delta[bs] = 0
    max_d = np.maximum.reduceat(delta, bs)
    max_tf = np.maximum.reduceat(tfs, bs)
    min_dl = np.minimum.reduceat(dls, bs)
    max_dl = np.maximum.reduceat(dls, bs)
    iw = np.searchsorted(np.array([255, 65535, 2**32 - 1]), max_d)
    tw = (max_tf > 255).astype(np.int64)
    dw = (max_dl > 65535).astype(np.int64)
    # a block holds at most (BLOCK_BYTES - header) // width postings, as cut_blocks counts
    # them (the first id too), so a block that passes goes to cut_blocks and is cut the same
    width = np.array([1, 2, 4, 8])[iw] + (tw + 1) + 2 * (dw + 1)
    too_big = counts > (BLOCK_BYTES - _HEADER.size) // width
    slow = np.zeros(len(starts), dtype=bool)
    slow[list_of[bs[too_big]]] = True
    if int(tfs.max()) > MAX_TF or int(dls.max()) > MAX_DL:
        raise ValueError("term frequency or document length out of range for the block format")
    fmt = iw | (tw << 2) | (dw << 3)
    fast = ~slow[list_of[bs]]
    data: list[bytes | None] = [None] * len(bs)  # every fast block gets its bytes below
    for f in np.unique(fmt[fast]).tolist():
        sel = np.flatnonzero((fmt == f) & fast)
        idt, tdt, ddt = _ID_WIDTHS[f & 3], _TF_WIDTHS[(f >> 2) & 1], _DL_WIDTHS[(f >> 3) & 1]
        cnt = counts[sel]
        offs = np.cumsum(cnt) - cnt  # where each selected block starts in `elems`
        elems = np.repeat(bs[sel] - offs, cnt) + np.arange(int(cnt.sum()))
        not_first = np.ones(len(elems), dtype=bool)
        not_first[offs] = False
        dbytes = delta[elems[not_first]].astype(idt).tobytes()
        tbytes = tfs[elems].astype(tdt).tobytes()
        lbytes = dls[elems].astype(ddt).tobytes()
        di, ti, li = idt.itemsize, tdt.itemsize, ddt.itemsize
        pack = _HEADER.pack
        for q, (b, o, c, first) in enumerate(
            zip(sel.tolist(), offs.tolist(), cnt.tolist(), ids[bs[sel]].tolist())
        ):
            data[b] = b"".join(
                (
                    pack(f, c, first),
                    dbytes[(o - q) * di : (o - q + c - 1) * di],
                    tbytes[o * ti : (o + c) * ti],
                    lbytes[o * li : (o + c) * li],
                )
            )
    cols = [list_of[bs], ids[bs], ids[be - 1], counts, max_tf, min_dl]
    keep = np.flatnonzero(fast)
    out = [c[keep] for c in cols]
    blobs = [data[b] for b in keep.tolist()]
    recut: list[tuple[int, int, int, int, int, int, bytes]] = []
    for lst in np.flatnonzero(slow).tolist():
        lo = int(starts[lst])
        hi = lo + int(lengths[lst])
        recut.extend((lst, *blk) for blk in cut_blocks(ids[lo:hi], tfs[lo:hi], dls[lo:hi]))
    if recut:
        extra = np.array([r[:6] for r in recut], dtype=np.int64)
        out = [np.concatenate((o, extra[:, j])) for j, o in enumerate(out)]
        blobs.extend(r[6] for r in recut)
        order = np.lexsort((out[1], out[0]))
        out = [o[order] for o in out]
        blobs = [blobs[i] for i in order.tolist()]
    lists, first, last, n, max_tf, min_dl = out
    return EncodedBlocks(lists, first, last, n, max_tf, min_dl, cast(list[bytes], blobs))


# -- a list's best postings and a bound of the rest -------------------------------------
TOP_POSTINGS = 1024
"""Postings kept as a list's top (lists longer than this have one): at a million chunks,
the 1–3-term SciFact queries whose top 10 the tops decide alone were 51 % with 256, 73 %
with 1,024 and 92 % with 4,096 (bench/README, stop 32)."""
_PAIR = np.dtype("<i4")


def frontier(tfs: np.ndarray, dls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (tf, dl) Pareto frontier of postings: the pairs no other posting beats in both
    (a larger or equal tf at a smaller or equal length), by tf descending. A BM25 term
    score grows with tf and falls with dl for any N, avgdl, k1 and b, so the best score of
    the postings is the best of the frontier's."""
    if len(tfs) == 0:
        e = np.empty(0, dtype=np.int64)
        return e, e
    tfs = np.asarray(tfs, dtype=np.int64)
    dls = np.asarray(dls, dtype=np.int64)
    order = np.lexsort((dls, -tfs))  # tf descending, then dl ascending
    t, d = tfs[order], dls[order]
    keep = np.ones(len(t), dtype=bool)
    keep[1:] = d[1:] < np.minimum.accumulate(d)[:-1]
    return t[keep], d[keep]


def split_top(
    ids: np.ndarray,
    tfs: np.ndarray,
    dls: np.ndarray,
    avgdl: float,
    k1: float,
    b: float,
    size: int | None = None,
) -> tuple[bytes, bytes]:
    """A list's top (its ``size`` (:data:`TOP_POSTINGS`) best postings at ``avgdl``, one
    block, ids sorted) and the frontier of the rest (:func:`encode_frontier`). Any choice of top is
    exact for a query (the frontier bounds whatever is left out); choosing by the score at
    the class's own avgdl makes it the postings a query most likely needs."""
    ids = np.asarray(ids, dtype=np.int64)
    tfs = np.asarray(tfs, dtype=np.int64)
    dls = np.asarray(dls, dtype=np.int64)
    size = TOP_POSTINGS if size is None else size
    if len(ids) <= size:
        return encode_block(ids, tfs, dls), encode_frontier(*frontier(tfs[:0], dls[:0]))
    score = tfs / (tfs + k1 * (1 - b + b * dls / avgdl))
    # best first; equal scores: smaller id first, so a refresh is deterministic
    best = np.lexsort((ids, -score))[:size]
    rest = np.ones(len(ids), dtype=bool)
    rest[best] = False
    best.sort()  # ids are sorted, so are their positions
    return (
        encode_block(ids[best], tfs[best], dls[best]),
        encode_frontier(*frontier(tfs[rest], dls[rest])),
    )


def encode_frontier(tfs: np.ndarray, dls: np.ndarray) -> bytes:
    """(tf, dl) pairs as little-endian int32, interleaved."""
    return np.column_stack((tfs, dls)).astype(_PAIR).tobytes()


def decode_frontier(data: bytes | memoryview) -> tuple[np.ndarray, np.ndarray]:
    pairs = np.frombuffer(data, dtype=_PAIR).reshape(-1, 2).astype(np.int64)
    return pairs[:, 0], pairs[:, 1]
