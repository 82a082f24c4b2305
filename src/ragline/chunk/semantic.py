"""Semantic chunking: cut where the topic changes.

The text is split into sentences (a heading, list, table or code block is one unit) and
each unit is embedded. At every gap between two units, the mean embedding of the
``window`` units before it is compared with that of the ``window`` units after it
(TextTiling's block comparison, on embeddings; steadier than comparing single
sentences); a chunk boundary goes wherever the cosine distance is above the
``percentile``-th percentile of the document's gap distances (the breakpoint rule of
Kamradt's "semantic chunking" and LangChain's ``SemanticChunker``), and before every
heading. Runs shorter than ``max_tokens / 8`` join the next run when the two fit
together; runs over ``max_tokens`` are packed like the recursive chunker, with overlap.
The header is ``title › heading path`` of the chunk's first block.

Costs one extra embedding pass over the sentences at ingest time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..core.types import Chunk, ParsedDocument, breadcrumb
from .recursive import (
    SENTENCE,
    Piece,
    TokenCounter,
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

EmbedFn = Callable[[Sequence[str]], np.ndarray]


def breakpoints(vectors: np.ndarray, percentile: float, window: int = 2) -> list[int]:
    """Indices ``i`` such that a new group starts at unit ``i``: the distance between the
    mean of units ``i-window..i-1`` and of units ``i..i+window-1`` is above the
    ``percentile``-th percentile of all gaps."""
    n = len(vectors)
    if n < 3:
        return []
    v = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    dist = np.empty(n - 1)
    for i in range(1, n):
        left = v[max(0, i - window) : i].sum(axis=0)
        right = v[i : i + window].sum(axis=0)
        denom = max(float(np.linalg.norm(left) * np.linalg.norm(right)), 1e-12)
        dist[i - 1] = 1.0 - float(left @ right) / denom
    threshold = float(np.percentile(dist, percentile))
    return [i + 1 for i, d in enumerate(dist) if d > threshold]


class SemanticChunker(TokenLimitedChunker):
    """Boundaries where consecutive sentence embeddings diverge; see the module text."""

    kind = "semantic-v1"

    def __init__(
        self,
        max_tokens: int = 256,
        overlap_tokens: int = 32,
        count_tokens: TokenCounter | None = None,
        include_header: bool = True,
        embed: EmbedFn | None = None,
        percentile: float = 90.0,
    ) -> None:
        super().__init__(max_tokens, overlap_tokens, count_tokens, include_header)
        if not 0 < percentile < 100:
            from ..core.errors import ConfigError

            raise ConfigError(f"percentile must be between 0 and 100, got {percentile}")
        self.embed = embed
        self.percentile = percentile

    @property
    def name(self) -> str:
        suffix = "" if self.include_header else ":noheader"
        return f"{self.kind}:{self.max_tokens}:{self.overlap_tokens}:p{self.percentile:g}{suffix}"

    def _units(self, document: ParsedDocument) -> list[tuple[int, int, int]]:
        """``(start, end, block index)``: sentences of prose blocks; headings, tables,
        code and list blocks whole."""
        text = document.text
        out: list[tuple[int, int, int]] = []
        for bi, ((s, e), b) in enumerate(zip(document.block_offsets(), document.blocks)):
            s, e = strip_span(text, s, e)
            if e <= s:
                continue
            if b.kind in ("paragraph", "caption"):
                out.extend((a, z, bi) for a, z in subspans(text, s, e, SENTENCE))
            else:
                out.append((s, e, bi))
        return out

    def chunk(self, document: ParsedDocument) -> list[Chunk]:
        text, blocks = document.text, document.blocks
        units = self._units(document)
        if not units:
            return []
        count = self.count_tokens
        cuts: set[int] = {i for i, u in enumerate(units) if blocks[u[2]].kind == "heading"}
        if self.embed is not None and len(units) >= 3:
            vectors = np.asarray(self.embed([text[a:z] for a, z, _ in units]))
            cuts.update(breakpoints(vectors, self.percentile))
        groups: list[list[tuple[int, int, int]]] = []
        for i, u in enumerate(units):
            if i == 0 or i in cuts:
                groups.append([])
            groups[-1].append(u)
        tokens = [[count(text[a:z]) for a, z, _ in g] for g in groups]
        heading_first = [blocks[g[0][2]].kind == "heading" for g in groups]
        groups, tokens = self._merge_small(groups, tokens, heading_first)
        out: list[Chunk] = []
        starts = [s for s, _ in document.block_offsets()]
        for g, toks in zip(groups, tokens):
            bi = g[0][2]
            b = blocks[bi]
            path = (
                (*b.heading_path, " ".join(b.text.split()))
                if b.kind == "heading"
                else b.heading_path
            )
            crumb = breadcrumb(document.title, path) if self.include_header else ""
            h, h_tokens = fit_header([crumb, breadcrumb("", path[-1:]), ""], self.max_tokens, count)
            budget = self.max_tokens - h_tokens
            pieces: list[Piece] = []
            for (a, z, _), t in zip(g, toks):
                pieces.extend(split_span(text, a, z, budget, count, tokens=t))
            spans = chunk_spans(
                text, pieces, same_header(h, h_tokens), self.max_tokens, self.overlap_tokens, count
            )
            out.extend(
                to_chunks(
                    document,
                    in_order(spans),
                    first_ordinal=len(out),
                    heading_path=path,
                    starts=starts,
                )
            )
        return out

    def _merge_small(
        self,
        groups: list[list[tuple[int, int, int]]],
        tokens: list[list[int]],
        heading_first: list[bool],
    ) -> tuple[list[list[tuple[int, int, int]]], list[list[int]]]:
        """Join a run under ``max_tokens / 8`` to the next one when both fit together
        (never across a heading: a run starting with one stays separate)."""
        small = self.max_tokens / 8
        room = self.max_tokens * 0.8  # leave space for the header
        out_g: list[list[tuple[int, int, int]]] = []
        out_t: list[list[int]] = []
        for g, t, starts_section in zip(groups, tokens, heading_first):
            if (
                out_g
                and not starts_section
                and sum(out_t[-1]) < small
                and sum(out_t[-1]) + sum(t) <= room
            ):
                out_g[-1].extend(g)
                out_t[-1].extend(t)
                continue
            out_g.append(list(g))
            out_t.append(list(t))
        return out_g, out_t
