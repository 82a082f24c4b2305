"""One small Protocol per pipeline stage. Backends implement these; nothing else is assumed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .types import Answer, Chunk, Hit, ParsedDocument, Principal

if TYPE_CHECKING:
    import numpy as np


@runtime_checkable
class Parser(Protocol):
    """Turns the bytes of one file into structured blocks."""

    media_types: tuple[str, ...]

    def parse(self, data: bytes, *, path: Path) -> ParsedDocument: ...


@runtime_checkable
class Chunker(Protocol):
    """Splits a parsed document into chunks whose spans index ``document.text``."""

    def chunk(self, document: ParsedDocument) -> list[Chunk]: ...


@runtime_checkable
class Embedder(Protocol):
    """Maps text to unit vectors. Queries and documents are embedded separately
    because some models (e5, bge) prefix them differently.

    ``embed_documents`` may also take a keyword ``progress`` (a callable given the number
    of texts done, called in the caller's thread as each batch of the call is embedded,
    in order): ingest then hands it a whole batch in one call instead of slices."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def count_tokens(self, text: str) -> int: ...


@runtime_checkable
class Retriever(Protocol):
    """One retrieval leg: the caller-visible best ``n`` chunk ids (with the leg's scores)
    for a query, permissions applied inside; ``params`` is the search's
    :class:`~ragline.retrieve.search.SearchParams` (filters, history, depth)."""

    name: str

    def candidates(self, query: str, principal: Principal, n: int, params: Any) -> Any: ...


@runtime_checkable
class Reranker(Protocol):
    """Reorders candidate hits for a query (cross-encoder, HTTP rerank API, ...)."""

    def rerank(self, query: str, hits: Sequence[Hit], *, top_k: int) -> list[Hit]: ...


@runtime_checkable
class Generator(Protocol):
    """Writes an answer with ``[n]`` citations from retrieved hits, or abstains.

    ``can_stream``: :meth:`stream` yields text pieces as they are written (a model);
    otherwise it yields the whole text at once (the extractive answerer). ``history``
    (earlier turns of a chat) is read by generators that can use it."""

    name: str
    can_stream: bool

    def answer(
        self, question: str, hits: Sequence[Hit], *, history: Sequence[Mapping[str, str]] = ()
    ) -> Answer: ...

    def stream(
        self, question: str, hits: Sequence[Hit], *, history: Sequence[Mapping[str, str]] = ()
    ) -> Iterator[str | Answer]: ...
