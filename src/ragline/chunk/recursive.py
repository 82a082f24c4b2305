"""Offset-preserving recursive splitting and greedy token packing.

Every span here indexes the original text, so a chunk's text is always
``text[char_start:char_end]``. A span that is over the token budget is split on the
coarsest boundary it contains (blank lines, then line breaks, then sentence ends, then
whitespace, then characters) and the pieces are packed greedily into chunks, each new
chunk starting with up to ``overlap_tokens`` taken from the end of the previous one
(whole pieces, else whole lines, sentences or words).

Token counts are taken once per piece and summed; a finished chunk is counted once
more, whole, and split again if the sum underestimated it. Counting never runs over
growing prefixes, so chunking stays linear in the length of the text.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence

from ..core.errors import ConfigError
from ..core.types import Chunk, ParsedDocument

TokenCounter = Callable[[str], int]
Piece = tuple[int, int, int]
"""``(start, end, tokens)``: a stripped, non-empty span and its token count."""
HeaderAt = Callable[[int], tuple[str, int]]
"""Maps a chunk's start offset to its header and the header's token count."""

PARAGRAPH, LINE, SENTENCE, WORD, CHAR = range(5)

_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")
_LINE_BREAK = re.compile(r"\n\s*")
_NON_SPACE = re.compile(r"\S+")
# Sentence ends as in ragline.analysis.split_sentences (copied, so that a change there does
# not silently change chunk boundaries): group 1 is closing punctuation that stays with
# the sentence, group 2 the whitespace between sentences.
_SENTENCE_END = re.compile(
    r"(?<=[.!?])([\"')\]]*)(\s+)(?=[\"'(\[]?[A-Z0-9\u00C0-\u024F\u0400-\u04FF])"
)
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs al fig figs eq eqs no nos dr mr mrs ms prof st inc ltd co approx ca cf".split()  # noqa: SIM905
)
_MAX_RESPLITS = 8


def estimate_tokens(text: str) -> int:
    """Default token count: whitespace-separated words × 1.3, rounded up.

    Used when no tokenizer is given. WordPiece and BPE vocabularies average about 1.3
    tokens per English word; pass the embedder's ``count_tokens`` for exact limits.
    """
    return (len(text.split()) * 13 + 9) // 10


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` narrowed to exclude leading and trailing whitespace."""
    sub = text[start:end]
    stripped = sub.strip()
    if not stripped:
        return start, start
    left = len(sub) - len(sub.lstrip())
    return start + left, start + left + len(stripped)


def subspans(text: str, start: int, end: int, level: int) -> list[tuple[int, int]]:
    """Stripped, non-empty spans of ``text[start:end]`` between boundaries of ``level``
    (``PARAGRAPH``, ``LINE``, ``SENTENCE`` or ``WORD``)."""
    sub = text[start:end]
    if level == WORD:
        return [(start + m.start(), start + m.end()) for m in _NON_SPACE.finditer(sub)]
    cuts: list[tuple[int, int]] = []  # (end of one span, start of the next), relative
    if level == PARAGRAPH:
        cuts = [(m.start(), m.end()) for m in _PARAGRAPH_BREAK.finditer(sub)]
    elif level == LINE:
        cuts = [(m.start(), m.end()) for m in _LINE_BREAK.finditer(sub)]
    elif level == SENTENCE:
        sentence_start = 0
        for m in _SENTENCE_END.finditer(sub):
            window = sub[max(sentence_start, m.start() - 40) : m.start()].rsplit(None, 1)
            last = window[-1].rstrip(".").lower() if window else ""
            if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
                continue
            cuts.append((m.end(1), m.end()))
            sentence_start = m.end()
    else:
        raise ValueError(f"unknown split level {level}")
    out: list[tuple[int, int]] = []
    prev = 0
    for cut_end, next_start in [*cuts, (len(sub), len(sub))]:
        s, e = strip_span(sub, prev, cut_end)
        if e > s:
            out.append((start + s, start + e))
        prev = next_start
    return out


def split_span(
    text: str,
    start: int,
    end: int,
    budget: int,
    count: TokenCounter,
    *,
    level: int = PARAGRAPH,
    tokens: int | None = None,
) -> list[Piece]:
    """Split a stripped span into pieces of at most ``budget`` tokens each, on the
    coarsest boundaries that get them under it. Only a single character can exceed it."""
    if tokens is None:
        tokens = count(text[start:end])
    if tokens <= budget or end - start <= 1:
        return [(start, end, tokens)]
    while level < CHAR:
        spans = subspans(text, start, end, level)
        level += 1
        if len(spans) > 1:
            out: list[Piece] = []
            for s, e in spans:
                out.extend(split_span(text, s, e, budget, count, level=level))
            return out
    return _split_chars(text, start, end, budget, count, tokens)


def _split_chars(
    text: str, start: int, end: int, budget: int, count: TokenCounter, tokens: int
) -> list[Piece]:
    """Cut a single over-long word into runs of characters that fit."""
    if tokens <= budget or end - start <= 1:
        return [(start, end, tokens)]
    parts = max(2, -(-tokens // max(budget, 1)))
    step = max(1, -(-(end - start) // parts))
    out: list[Piece] = []
    for a in range(start, end, step):
        b = min(a + step, end)
        out.extend(_split_chars(text, a, b, budget, count, count(text[a:b])))
    return out


def _overlap_tail(
    text: str,
    units: Sequence[tuple[int, int, int | None]],
    limit: int,
    count: TokenCounter,
    *,
    keep_first: bool,
    level: int = LINE,
) -> list[Piece]:
    """The longest run of whole trailing ``units`` within ``limit`` tokens; when even the
    last unit is too long, the same taken from its lines, sentences or words. With
    ``keep_first`` the first unit is never taken, so the next chunk starts later."""
    if limit <= 0 or not units:
        return []
    taken: list[Piece] = []
    total = 0
    for i in range(len(units) - 1, -1, -1):
        if i == 0 and keep_first:
            break
        s, e, t = units[i]
        if t is None:
            t = count(text[s:e])
        if total + t > limit:
            break
        taken.append((s, e, t))
        total += t
    if taken:
        taken.reverse()
        return taken
    s, e, _ = units[-1]
    keep = keep_first and len(units) == 1
    for lvl in range(level, CHAR):
        finer = subspans(text, s, e, lvl)
        if len(finer) > 1:
            return _overlap_tail(
                text, [(a, b, None) for a, b in finer], limit, count, keep_first=keep, level=lvl + 1
            )
    return []


def pack(
    text: str,
    pieces: Sequence[Piece],
    budget_at: Callable[[int], int],
    overlap_tokens: int,
    count: TokenCounter,
) -> list[Piece]:
    """Greedily pack ordered pieces into ``(start, end, estimated_tokens)`` spans whose
    summed count stays within ``budget_at(start)``; each span after the first begins with
    up to ``overlap_tokens`` from the end of the one before."""
    out: list[Piece] = []
    cur: list[Piece] = []
    cur_tokens = 0
    cur_budget = 0
    for p in pieces:
        if cur and cur_tokens + p[2] <= cur_budget:
            cur.append(p)
            cur_tokens += p[2]
            continue
        tail: list[Piece] = []
        if cur:
            out.append((cur[0][0], cur[-1][1], cur_tokens))
            limit = min(overlap_tokens, budget_at(p[0]) - p[2])
            for _ in range(2):
                tail = _overlap_tail(text, cur, limit, count, keep_first=True)
                if not tail:
                    break
                room = budget_at(tail[0][0]) - p[2]
                if sum(t[2] for t in tail) <= room:
                    break
                limit, tail = min(limit - 1, room), []
        cur = [*tail, p]
        cur_tokens = sum(t[2] for t in cur)
        cur_budget = budget_at(cur[0][0])
    if cur:
        out.append((cur[0][0], cur[-1][1], cur_tokens))
    return out


def chunk_spans(
    text: str,
    pieces: Sequence[Piece],
    header_at: HeaderAt,
    max_tokens: int,
    overlap_tokens: int,
    count: TokenCounter,
    *,
    cap: int | None = None,
    depth: int = 0,
) -> list[tuple[int, int, str, int]]:
    """Pack ``pieces`` and verify each packed span: ``(start, end, header, tokens)`` where
    ``tokens`` is the real count of ``header + "\\n\\n" + text``. A span whose real count
    exceeds ``max_tokens`` is split again under a budget reduced by the excess."""

    def budget_at(pos: int) -> int:
        b = max_tokens - header_at(pos)[1]
        return b if cap is None else min(b, cap)

    out: list[tuple[int, int, str, int]] = []
    for s, e, est in pack(text, pieces, budget_at, overlap_tokens, count):
        header = header_at(s)[0]
        body = text[s:e]
        real = count(f"{header}\n\n{body}" if header else body)
        if real <= max_tokens or depth >= _MAX_RESPLITS or e - s <= 1:
            out.append((s, e, header, real))
            continue
        new_cap = max(1, min(est, budget_at(s)) - (real - max_tokens))
        finer = split_span(text, s, e, new_cap, count)
        out.extend(
            chunk_spans(
                text,
                finer,
                header_at,
                max_tokens,
                overlap_tokens,
                count,
                cap=new_cap,
                depth=depth + 1,
            )
        )
    return out


def in_order(spans: list[tuple[int, int, str, int]]) -> list[tuple[int, int, str, int]]:
    """Spans sorted by start, dropping any span contained in an earlier one (a re-split
    can rarely produce one); starts become strictly increasing."""
    out: list[tuple[int, int, str, int]] = []
    max_end = -1
    for span in sorted(spans, key=lambda x: (x[0], -x[1])):
        if span[1] <= max_end:
            continue
        out.append(span)
        max_end = span[1]
    return out


def to_chunks(
    document: ParsedDocument,
    spans: Sequence[tuple[int, int, str, int]],
    *,
    first_ordinal: int = 0,
    heading_path: Sequence[str] = (),
    parent: Chunk | None = None,
    starts: Sequence[int] | None = None,
) -> list[Chunk]:
    """:class:`Chunk` objects for ``(start, end, header, tokens)`` spans of the document's
    text, numbered from ``first_ordinal``; each takes the page of the block it starts in."""
    text = document.text
    if starts is None:
        starts = [s for s, _ in document.block_offsets()]
    return [
        Chunk(
            ordinal=first_ordinal + i,
            text=text[s:e],
            char_start=s,
            char_end=e,
            heading_path=tuple(heading_path),
            header=h,
            token_count=n,
            page=document.blocks[bisect_right(starts, s) - 1].page if starts else None,
            parent=parent,
        )
        for i, (s, e, h, n) in enumerate(spans)
    ]


def same_header(header: str, tokens: int) -> HeaderAt:
    """A :data:`HeaderAt` giving every chunk the same header."""
    return lambda _pos: (header, tokens)


def check_limits(max_tokens: int, overlap_tokens: int) -> None:
    if max_tokens < 1:
        raise ConfigError(f"max_tokens must be at least 1, got {max_tokens}")
    if not 0 <= overlap_tokens < max_tokens:
        raise ConfigError(
            f"overlap_tokens must be between 0 and max_tokens - 1 ({max_tokens - 1}), "
            f"got {overlap_tokens}; lower the overlap or raise max_tokens"
        )


def fit_header(candidates: Sequence[str], max_tokens: int, count: TokenCounter) -> tuple[str, int]:
    """The first candidate header that leaves at least half of ``max_tokens`` for text
    (the last candidate should be ``""``)."""
    for h in candidates:
        t = count(h) if h else 0
        if t <= max_tokens // 2:
            return h, t
    return "", 0


class TokenLimitedChunker:
    """Settings every chunking strategy shares: the token limit, the overlap, the counter
    and whether a breadcrumb header is prepended; ``kind`` names the strategy."""

    kind = "base"

    def __init__(
        self,
        max_tokens: int = 256,
        overlap_tokens: int = 32,
        count_tokens: TokenCounter | None = None,
        include_header: bool = True,
    ) -> None:
        check_limits(max_tokens, overlap_tokens)
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens
        self.count_tokens: TokenCounter = count_tokens or estimate_tokens
        self.include_header = include_header

    @property
    def name(self) -> str:
        """Identity stored with a collection: a change means re-chunking."""
        suffix = "" if self.include_header else ":noheader"
        return f"{self.kind}:{self.max_tokens}:{self.overlap_tokens}{suffix}"


class RecursiveChunker(TokenLimitedChunker):
    """Splits unstructured text: paragraphs, then lines, sentences, words, characters.

    Pieces are packed greedily up to ``max_tokens`` counted on :attr:`Chunk.indexed_text`
    (header included) with ``count_tokens``; pass a limit already reduced by the special
    tokens the embedding model adds itself. Each chunk after the first repeats up to
    ``overlap_tokens`` from the end of the previous one (whole sentences or words where
    possible). ``count_tokens=None`` uses :func:`estimate_tokens` (words × 1.3). The
    header is the document title when ``include_header`` is set.
    """

    kind = "recursive-v1"

    def split(self, text: str, header: str = "") -> list[tuple[int, int, str, int]]:
        """``(start, end, header, tokens)`` spans of ``text`` chunked under ``header``."""
        h, h_tokens = fit_header([header, ""], self.max_tokens, self.count_tokens)
        s, e = strip_span(text, 0, len(text))
        if e <= s:
            return []
        count = self.count_tokens
        pieces = split_span(text, s, e, self.max_tokens - h_tokens, count)
        spans = chunk_spans(
            text, pieces, same_header(h, h_tokens), self.max_tokens, self.overlap_tokens, count
        )
        return in_order(spans)

    def chunk(self, document: ParsedDocument) -> list[Chunk]:
        from ..core.types import breadcrumb

        header = breadcrumb(document.title, ()) if self.include_header else ""
        return to_chunks(document, self.split(document.text, header))
