"""Parent–child chunking: search small children, hand the generator their parent.

Parents are section-aware chunks of up to ``parent_tokens`` (never embedded, so they may
exceed the embedding model's limit); each parent is split into children of at most
``max_tokens`` with ``overlap_tokens`` of overlap, each child lying inside its parent and
carrying it in :attr:`Chunk.parent`. Small children match a specific question sharply;
the parent gives the model the surrounding section. Retrieval collapses hits to their
parents, so each parent reaches the context once.
"""

from __future__ import annotations

from ..core.types import Chunk, ParsedDocument, breadcrumb
from .recursive import (
    TokenCounter,
    TokenLimitedChunker,
    chunk_spans,
    fit_header,
    in_order,
    same_header,
    split_span,
    to_chunks,
)
from .section import SectionChunker

DEFAULT_CHILD_TOKENS = 128
DEFAULT_PARENT_TOKENS = 1024


class ParentChildChunker(TokenLimitedChunker):
    """Children of ``max_tokens`` inside section-aware parents of ``parent_tokens``."""

    kind = "parent-child-v1"

    def __init__(
        self,
        max_tokens: int = DEFAULT_CHILD_TOKENS,
        overlap_tokens: int = 16,
        count_tokens: TokenCounter | None = None,
        include_header: bool = True,
        parent_tokens: int = DEFAULT_PARENT_TOKENS,
    ) -> None:
        super().__init__(max_tokens, overlap_tokens, count_tokens, include_header)
        if parent_tokens < max_tokens:
            from ..core.errors import ConfigError

            raise ConfigError(
                f"parent_tokens ({parent_tokens}) must be at least the child size ({max_tokens})"
            )
        self.parent_tokens = parent_tokens
        self._parents = SectionChunker(
            max_tokens=parent_tokens,
            overlap_tokens=0,
            count_tokens=self.count_tokens,
            include_header=include_header,
        )

    @property
    def name(self) -> str:
        suffix = "" if self.include_header else ":noheader"
        return f"{self.kind}:{self.max_tokens}:{self.overlap_tokens}:{self.parent_tokens}{suffix}"

    def chunk(self, document: ParsedDocument) -> list[Chunk]:
        text = document.text
        count = self.count_tokens
        starts = [s for s, _ in document.block_offsets()]
        out: list[Chunk] = []
        for parent in self._parents.chunk(document):
            candidates = [parent.header, breadcrumb(document.title, parent.heading_path), ""]
            h, h_tokens = fit_header(candidates, self.max_tokens, count)
            pieces = split_span(
                text, parent.char_start, parent.char_end, self.max_tokens - h_tokens, count
            )
            spans = chunk_spans(
                text, pieces, same_header(h, h_tokens), self.max_tokens, self.overlap_tokens, count
            )
            out.extend(
                to_chunks(
                    document,
                    in_order(spans),
                    first_ordinal=len(out),
                    heading_path=parent.heading_path,
                    parent=parent,
                    starts=starts,
                )
            )
        return out
