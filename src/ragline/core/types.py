"""Typed values that flow between pipeline stages.

Everything here is immutable (frozen dataclasses): stages return new values, never
mutate shared ones. Nothing heavy is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

BlockKind = Literal["heading", "paragraph", "list", "table", "code", "caption"]
BLOCK_KINDS: tuple[str, ...] = ("heading", "paragraph", "list", "table", "code", "caption")

BLOCK_SEPARATOR = "\n\n"
"""Blocks are joined with this separator to form a document's text; chunk spans index it."""

BREADCRUMB_SEPARATOR = " › "


def breadcrumb(title: str, heading_path: tuple[str, ...] | list[str]) -> str:
    """``title › h1 › h2``: empty parts are skipped, a heading equal to the title
    (ignoring case and spacing) is not repeated, and whitespace runs become one space."""
    t = " ".join(title.split())
    parts = [t] if t else []
    for heading in heading_path:
        h = " ".join(heading.split())
        if h and not (t and h.casefold() == t.casefold()):
            parts.append(h)
    return BREADCRUMB_SEPARATOR.join(parts)


@dataclass(frozen=True)
class Block:
    """One structural unit of a parsed document.

    ``heading_path`` is the chain of headings *above* this block (for a heading block:
    its ancestors, not itself). ``level`` is the heading level (1 = top) for headings,
    0 otherwise. ``page`` is 1-based where the format has pages.
    """

    kind: BlockKind
    text: str
    level: int = 0
    heading_path: tuple[str, ...] = ()
    page: int | None = None


@dataclass(frozen=True)
class ParsedDocument:
    """What a parser extracted from one file."""

    title: str
    blocks: tuple[Block, ...]
    media_type: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The document's plain text: block texts joined by :data:`BLOCK_SEPARATOR`."""
        return BLOCK_SEPARATOR.join(b.text for b in self.blocks)

    def block_offsets(self) -> list[tuple[int, int]]:
        """(start, end) of each block inside :attr:`text`."""
        out: list[tuple[int, int]] = []
        pos = 0
        for b in self.blocks:
            out.append((pos, pos + len(b.text)))
            pos += len(b.text) + len(BLOCK_SEPARATOR)
        return out


@dataclass(frozen=True)
class Chunk:
    """A retrievable piece of a document.

    ``text`` is exactly ``document.text[char_start:char_end]``. ``header`` is the
    breadcrumb (title › heading path) prepended for embedding and BM25; see
    :attr:`indexed_text`. ``token_count`` counts :attr:`indexed_text` with the
    embedder's tokenizer (special tokens excluded).
    """

    ordinal: int
    text: str
    char_start: int
    char_end: int
    heading_path: tuple[str, ...] = ()
    header: str = ""
    token_count: int = 0
    page: int | None = None
    parent: Chunk | None = None
    """Parent–child chunking: the larger passage this chunk is part of (search finds the
    child, the generator reads the parent). ``None`` for every other strategy."""

    @property
    def indexed_text(self) -> str:
        return f"{self.header}\n\n{self.text}" if self.header else self.text


@dataclass(frozen=True)
class Principal:
    """Who is asking: a tenant and the groups they belong to.

    Documents with no allowed groups are visible to every principal of their tenant;
    documents with groups are visible to principals sharing at least one group.
    """

    tenant: str = "default"
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk with its provenance and the scores that ranked it.

    ``scores`` / ``ranks`` hold per-stage values, e.g. ``{"bm25": 11.2, "vector": 0.61,
    "rrf": 0.032}``; ``score`` is the score of the stage that produced this list.
    """

    chunk_id: int
    document_id: int
    doc_key: str
    title: str
    source: str
    text: str
    score: float
    rank: int
    heading_path: tuple[str, ...] = ()
    page: int | None = None
    ordinal: int = 0
    parent: int | None = None
    """Ordinal of the parent passage whose text this hit carries (parent–child chunking)."""
    scores: Mapping[str, float] = field(default_factory=dict)
    ranks: Mapping[str, int] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Citation:
    """Source ``[number]`` of an answer: the passage it points to."""

    number: int
    chunk_id: int
    doc_key: str
    title: str
    source: str
    heading_path: tuple[str, ...] = ()
    page: int | None = None
    quote: str = ""

    @property
    def location(self) -> str:
        """Where the passage is: ``title › heading › sub-heading``."""
        return breadcrumb(self.title, self.heading_path)


@dataclass(frozen=True)
class Answer:
    """A generated (or extractive) answer.

    ``text`` carries inline ``[n]`` markers that refer to ``citations`` by number.
    When ``abstained`` is true, ``text`` is :data:`ABSTAIN_SENTENCE` and ``citations``
    is empty. ``evidence`` is the score the abstention decision was based on.
    """

    question: str
    text: str
    citations: tuple[Citation, ...]
    abstained: bool
    hits: tuple[Hit, ...] = ()
    generator: str = "extractive"
    evidence: float = 0.0
    grounded_ratio: float | None = None
    """Supported claims / claims, from the verifier (LLM generators; ``None`` when not
    checked)."""
    claims: tuple[Any, ...] = ()
    """Per-claim verification (:class:`ragline.generate.verify.ClaimCheck`)."""
    notes: tuple[str, ...] = ()
    """What the pipeline decided along the way (abstained before generation, dropped
    claims, techniques skipped for want of a generator, …)."""
    prompt_tokens: int | None = None
    """Size of the prompt the generator read, in its tokens (None: no model call)."""
    completion_tokens: int | None = None
    """Size of the model's reply, in its tokens (None: no model call)."""
    generation_ms: float | None = None
    """Wall time of the model call: reading the prompt and writing the reply."""
    trace_id: str | None = None
    """Id of the stored trace of this answer (``ragline trace ID``), when traces are on."""
    agent: Mapping[str, Any] | None = None
    """The research loop's summary (decision, stop reason, steps, model calls, tokens,
    seconds, sources) when the answer came from :meth:`~ragline.index.Index.research`."""

    @classmethod
    def abstention(
        cls,
        question: str,
        hits: tuple[Hit, ...] | list[Hit] = (),
        *,
        generator: str = "extractive",
        evidence: float = 0.0,
        **checks: Any,
    ) -> Answer:
        """The fixed abstention: :data:`ABSTAIN_SENTENCE`, no citations; ``checks`` sets
        ``grounded_ratio``, ``claims`` or ``notes``."""
        return cls(
            question=question,
            text=ABSTAIN_SENTENCE,
            citations=(),
            abstained=True,
            hits=tuple(hits),
            generator=generator,
            evidence=evidence,
            **checks,
        )


ABSTAIN_SENTENCE = "The sources do not contain enough information to answer this question."
"""The fixed sentence every generator returns when the sources do not answer."""
