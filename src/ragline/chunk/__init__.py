"""Chunking: parsed documents → token-bounded chunks whose spans index the document text.

Strategies (chosen per collection, :func:`make_chunker`):

* ``section`` (default, :class:`SectionChunker`): follows headings;
* ``recursive`` (:class:`RecursiveChunker`): paragraphs, lines, sentences, words;
* ``fixed`` (:class:`FixedChunker`): word-aligned token windows, structure ignored;
* ``semantic`` (:class:`SemanticChunker`): cuts where sentence embeddings diverge;
* ``parent-child`` (:class:`ParentChildChunker`): small children searched, their
  section-sized parent handed to the generator.

All count tokens with the function they are given (the embedder's tokenizer in
production) or estimate whitespace words × 1.3.
"""

from __future__ import annotations

from typing import Any

from .fixed import FixedChunker
from .parent_child import ParentChildChunker
from .recursive import RecursiveChunker, TokenCounter, TokenLimitedChunker, estimate_tokens
from .section import SectionChunker, breadcrumb
from .semantic import EmbedFn, SemanticChunker

STRATEGIES: dict[str, type[TokenLimitedChunker]] = {
    "section": SectionChunker,
    "recursive": RecursiveChunker,
    "fixed": FixedChunker,
    "semantic": SemanticChunker,
    "parent-child": ParentChildChunker,
}
"""Strategy name → class; the stored name of a chunker starts with its class's ``kind``."""


def strategy_of(name: str) -> str:
    """The strategy of a chunker name (``"section-v1:254:32"`` → ``"section"``); a bare
    strategy name is returned as it is."""
    if name in STRATEGIES:
        return name
    kind = name.split(":", 1)[0]
    for strategy, cls in STRATEGIES.items():
        if cls.kind == kind:
            return strategy
    from ..core.errors import ConfigError

    raise ConfigError(f"unknown chunking strategy {name!r}; choose one of: {', '.join(STRATEGIES)}")


def make_chunker(
    spec: str,
    *,
    max_tokens: int,
    overlap_tokens: int = 32,
    count_tokens: TokenCounter | None = None,
    embed: EmbedFn | None = None,
    parent_tokens: int = 1024,
    child_tokens: int | None = None,
    percentile: float = 90.0,
) -> TokenLimitedChunker:
    """A chunker from a strategy name (``"semantic"``) or a stored chunker name
    (``"parent-child-v1:128:16:1024"``, whose numbers then win over the arguments).

    ``max_tokens`` is the embedding limit; parent–child children default to 128 tokens
    (at most ``max_tokens``) with a quarter of the overlap.
    """
    strategy = strategy_of(spec)
    parts = spec.split(":") if spec not in STRATEGIES else [spec]
    include_header = "noheader" not in parts
    nums = [p for p in parts[1:] if p not in ("noheader", "ctx")]
    if len(nums) >= 2:
        max_tokens, overlap_tokens = int(nums[0]), int(nums[1])
    common: dict[str, Any] = {
        "count_tokens": count_tokens,
        "include_header": include_header,
    }
    if strategy == "parent-child":
        if len(nums) >= 3:
            parent_tokens = int(nums[2])
            child, overlap = max_tokens, overlap_tokens
        else:
            child = min(child_tokens or 128, max_tokens)
            overlap = min(overlap_tokens, max(0, child // 8))
        return ParentChildChunker(child, overlap, parent_tokens=max(parent_tokens, child), **common)
    if strategy == "semantic":
        if len(nums) >= 3 and nums[2].startswith("p"):
            percentile = float(nums[2][1:])
        return SemanticChunker(
            max_tokens, overlap_tokens, embed=embed, percentile=percentile, **common
        )
    return STRATEGIES[strategy](max_tokens, overlap_tokens, **common)


__all__ = [
    "STRATEGIES",
    "FixedChunker",
    "ParentChildChunker",
    "RecursiveChunker",
    "SectionChunker",
    "SemanticChunker",
    "breadcrumb",
    "estimate_tokens",
    "make_chunker",
    "strategy_of",
]
