"""Structure-aware chunking: a chunk holds one section of a document, or part of one.

A section is a heading block and the blocks under it up to the next heading of any
level (blocks before the first heading form a section with an empty heading path).
Each chunk carries a header, the breadcrumb ``title › heading › sub-heading``, which is
prepended to the text for embedding and BM25 (:attr:`Chunk.indexed_text`).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from ..core.types import Block, Chunk, ParsedDocument, breadcrumb
from .recursive import (
    Piece,
    TokenLimitedChunker,
    chunk_spans,
    fit_header,
    in_order,
    split_span,
    strip_span,
    to_chunks,
)


def table_header(table_text: str) -> str:
    """The lines of a Markdown table to repeat above a piece of it: the header row and
    the ``| --- |`` rule below it; only the first row when there is no rule."""
    lines = table_text.strip().split("\n", 2)
    if len(lines) < 2:
        return ""
    rule = lines[1].strip()
    if "-" in rule and "|" in rule and set(rule) <= set("|-: \t"):
        return f"{lines[0].rstrip()}\n{rule}"
    return lines[0].rstrip()


@dataclass
class _Section:
    first: int  # index of its first block
    end: int  # one past its last block
    path: tuple[str, ...]  # heading path including its own heading
    parent: tuple[str, ...] | None  # path of its heading's ancestors; None before any heading
    tokens: int  # summed token counts of its blocks
    heading_only: bool  # no non-blank block besides headings


class SectionChunker(TokenLimitedChunker):
    """Chunks a :class:`ParsedDocument` along its headings.

    * The limit: ``count_tokens(chunk.indexed_text) <= max_tokens`` (header included).
      ``count_tokens`` should exclude special tokens, so pass ``max_tokens`` already
      reduced by the ones the model adds itself (MiniLM: 256 - 2 = 254).
      ``count_tokens=None`` estimates whitespace words × 1.3 (:func:`estimate_tokens`).
    * Consecutive blocks of one section share a chunk while it fits; a chunk never spans
      two sections, with two exceptions. An empty section (a heading followed directly by
      a sub-heading) is folded into the sub-section, whose heading path the chunk takes.
      A small section (under ``max_tokens / 4``) absorbs the small sections that follow it
      while they are its siblings or descendants and the group is still small; the chunk's
      heading path is that of the first section, the common parent plus its heading.
    * ``heading_path`` includes the section's own heading; the header is
      ``breadcrumb(title, heading_path)``.
    * An oversized section is split recursively (blocks, blank lines, lines, sentences,
      words) with ``overlap_tokens`` of overlap between its chunks; never across sections.
    * A chunk that starts inside a table gets the table's header row and rule appended to
      its header, since ``text`` must stay an exact slice of the document.
    * A document without headings is one section, split as above: block boundaries are
      preferred, as in :class:`RecursiveChunker`.
    * A header using more than half of ``max_tokens`` is shortened (table rows dropped,
      then the title, then all of it). ``include_header=False`` leaves headers empty.
    * ``page`` is the page of the chunk's first block.
    """

    kind = "section-v1"

    def chunk(self, document: ParsedDocument) -> list[Chunk]:
        text = document.text
        blocks = document.blocks
        if not text.strip():
            return []
        count = self.count_tokens
        tokens = [count(b.text) if b.text.strip() else 0 for b in blocks]
        run = _Run(self, document, tokens)
        out: list[Chunk] = []
        for first, end, path in self._groups(_fold_empty(_sections(blocks, tokens)), run):
            spans = run.chunk_group(first, end, path)
            out.extend(
                to_chunks(
                    document, spans, first_ordinal=len(out), heading_path=path, starts=run.starts
                )
            )
        return out

    def _groups(
        self, sections: list[_Section], run: _Run
    ) -> list[tuple[int, int, tuple[str, ...]]]:
        """``(first block, end block, heading path)`` of each run of sections chunked
        together: a small section absorbs following small siblings and descendants."""
        small = self.max_tokens / 4
        out: list[tuple[int, int, tuple[str, ...]]] = []
        i = 0
        while i < len(sections):
            first = sections[i]
            end, total = first.end, first.tokens
            room = self.max_tokens - run.header(first.path, "")[1]
            j = i + 1
            while j < len(sections) and total < small:
                nxt = sections[j]
                related = nxt.parent is not None and (
                    nxt.parent[: len(first.path)] == first.path or nxt.parent == first.parent
                )
                if not related or nxt.tokens >= small or total + nxt.tokens > room:
                    break
                end, total = nxt.end, total + nxt.tokens
                j += 1
            out.append((first.first, end, first.path))
            i = j
        return out


class _Run:
    """Per-document state for one :meth:`SectionChunker.chunk` call."""

    def __init__(
        self, chunker: SectionChunker, document: ParsedDocument, tokens: list[int]
    ) -> None:
        self.c = chunker
        self.doc = document
        self.text = document.text
        self.blocks = document.blocks
        self.tokens = tokens
        self.offsets = document.block_offsets()
        self.starts = [s for s, _ in self.offsets]
        self._headers: dict[tuple[tuple[str, ...], str], tuple[str, int]] = {}
        self._tables: dict[int, tuple[int, str]] = {}

    def header(self, path: tuple[str, ...], table: str) -> tuple[str, int]:
        key = (path, table)
        found = self._headers.get(key)
        if found is None:
            if not self.c.include_header:
                found = ("", 0)
            else:
                crumb = breadcrumb(self.doc.title, path)
                candidates = [
                    "\n".join(x for x in (crumb, table) if x),
                    crumb,
                    breadcrumb("", path[-1:]),
                    "",
                ]
                found = fit_header(candidates, self.c.max_tokens, self.c.count_tokens)
            self._headers[key] = found
        return found

    def _table(self, bi: int) -> tuple[int, str]:
        """(offset of the table's first character, its header lines)."""
        found = self._tables.get(bi)
        if found is None:
            b = self.blocks[bi]
            lead = len(b.text) - len(b.text.lstrip())
            found = (self.starts[bi] + lead, table_header(b.text))
            self._tables[bi] = found
        return found

    def chunk_group(
        self, first: int, end: int, path: tuple[str, ...]
    ) -> list[tuple[int, int, str, int]]:
        text, blocks, starts = self.text, self.blocks, self.starts
        max_tokens = self.c.max_tokens

        def header_at(pos: int) -> tuple[str, int]:
            bi = bisect_right(starts, pos) - 1
            table = ""
            if blocks[bi].kind == "table":
                table_start, lines = self._table(bi)
                if pos > table_start:
                    table = lines
            return self.header(path, table)

        s0, e0 = strip_span(text, starts[first], self.offsets[end - 1][1])
        if e0 <= s0:
            return []
        total = sum(self.tokens[first:end])
        pieces: list[Piece]
        if header_at(s0)[1] + total <= max_tokens:
            pieces = [(s0, e0, total)]
        else:
            pieces = []
            for bi in range(first, end):
                s, e = strip_span(text, *self.offsets[bi])
                if e <= s:
                    continue
                inside = s + 1 if blocks[bi].kind == "table" else s
                budget = max_tokens - header_at(inside)[1]
                pieces.extend(
                    split_span(text, s, e, budget, self.c.count_tokens, tokens=self.tokens[bi])
                )
        spans = chunk_spans(
            text, pieces, header_at, max_tokens, self.c.overlap_tokens, self.c.count_tokens
        )
        return in_order(spans)


def _sections(blocks: tuple[Block, ...], tokens: list[int]) -> list[_Section]:
    out: list[_Section] = []
    cur: _Section | None = None
    for i, b in enumerate(blocks):
        if b.kind == "heading":
            if cur is not None:
                out.append(cur)
            path = (*b.heading_path, " ".join(b.text.split()))
            cur = _Section(i, i + 1, path, tuple(b.heading_path), tokens[i], True)
            continue
        if cur is None:
            cur = _Section(i, i + 1, (), None, 0, False)
        cur.end = i + 1
        cur.tokens += tokens[i]
        if b.text.strip():
            cur.heading_only = False
    if cur is not None:
        out.append(cur)
    return out


def _fold_empty(sections: list[_Section]) -> list[_Section]:
    """Fold each heading-only section into the sub-section right after it."""
    out: list[_Section] = []
    carry: tuple[int, int] | None = None  # (first block, tokens) of folded headings
    for k, sec in enumerate(sections):
        if carry is not None:
            sec.first, sec.tokens = carry[0], sec.tokens + carry[1]
            carry = None
        nxt = sections[k + 1] if k + 1 < len(sections) else None
        if (
            sec.heading_only
            and sec.parent is not None
            and nxt is not None
            and nxt.parent is not None
            and nxt.parent[: len(sec.path)] == sec.path
        ):
            carry = (sec.first, sec.tokens)
            continue
        out.append(sec)
    return out
