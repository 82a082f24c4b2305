"""Fixed-size chunking: windows of ``max_tokens`` with ``overlap_tokens`` of overlap.

Structure is ignored on purpose (the baseline every other strategy must beat): the text
is cut into words and the words are packed greedily, so a window ends at a word
boundary and never exceeds the limit. The header is the document title.
"""

from __future__ import annotations

from ..core.types import Chunk, ParsedDocument, breadcrumb
from .recursive import (
    WORD,
    TokenLimitedChunker,
    chunk_spans,
    fit_header,
    in_order,
    same_header,
    split_span,
    strip_span,
    subspans,
    to_chunks,
)


class FixedChunker(TokenLimitedChunker):
    """Token windows over the whole text, word-aligned, with overlap."""

    kind = "fixed-v1"

    def chunk(self, document: ParsedDocument) -> list[Chunk]:
        text = document.text
        s0, e0 = strip_span(text, 0, len(text))
        if e0 <= s0:
            return []
        count = self.count_tokens
        header = breadcrumb(document.title, ()) if self.include_header else ""
        h, h_tokens = fit_header([header, ""], self.max_tokens, count)
        budget = self.max_tokens - h_tokens
        whole = count(text[s0:e0])
        if whole <= budget:
            pieces = [(s0, e0, whole)]
        else:
            pieces = []
            for s, e in subspans(text, s0, e0, WORD):
                pieces.extend(split_span(text, s, e, budget, count, level=WORD + 1))
        spans = in_order(
            chunk_spans(
                text, pieces, same_header(h, h_tokens), self.max_tokens, self.overlap_tokens, count
            )
        )
        return to_chunks(document, spans)
