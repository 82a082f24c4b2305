"""Ingest documents whose chunks and vectors were made elsewhere (your own pipeline).

Each record is one document with its chunks, each chunk its text and its vector::

    {"key": "kb-1042", "title": "Resetting the router", "source": "https://…",
     "metadata": {"product": "X-570"}, "language": "en", "modified": "2024-06-18",
     "groups": ["support"],
     "chunks": [{"text": "Hold the reset button …", "vector": [0.013, …],
                 "heading_path": ["Setup", "Reset"], "page": 3}]}

(``ragline ingest --vectors FILE`` reads one record per line, JSON Lines.) The vectors
must come from the model the collection queries with (its embedder: the query is embedded
by it), so their dimension must be the collection's. ``groups`` (who may read the
document) overrides the groups the call ingests with, so one file can carry its ACLs. BM25 terms, ACL and statistics are
made here as for any ingest; a record whose content did not change is skipped.

Validation is strict and happens before anything is written: a wrong dimension, a NaN or
infinite or all-zero vector, a chunk without text, a document without chunks or a key that
appears twice is refused with the record's line number.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import ConfigError
from ..core.types import Chunk, Principal

KNOWN_FIELDS = {"key", "title", "source", "metadata", "language", "modified", "chunks", "groups"}
CHUNK_FIELDS = {"text", "vector", "heading_path", "page", "header", "tokens"}


class VectorsError(ConfigError):
    """A record of precomputed vectors that cannot be ingested (nothing was written)."""


@dataclass(frozen=True)
class VectorChunk:
    text: str
    vector: np.ndarray
    heading_path: tuple[str, ...] = ()
    page: int | None = None
    header: str = ""
    tokens: int | None = None
    """The chunk's length in the model's tokens, if the pipeline knows it (else estimated)."""


@dataclass(frozen=True)
class VectorDocument:
    key: str
    title: str
    chunks: tuple[VectorChunk, ...]
    source: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    language: str | None = None
    modified: datetime | None = None
    groups: tuple[str, ...] | None = None

    @cached_property
    def content_hash(self) -> str:
        h = hashlib.sha256()
        h.update(self.title.encode())
        for c in self.chunks:
            h.update(b"\x00" + c.header.encode() + b"\x01" + c.text.encode() + b"\x02")
            h.update(np.ascontiguousarray(c.vector, dtype=np.float32).tobytes())
        h.update(json.dumps(dict(self.metadata), sort_keys=True, default=str).encode())
        return h.hexdigest()


def _fail(where: str, what: str) -> VectorsError:
    return VectorsError(f"{where}: {what}; nothing was written")


def _vector(v: Any, dim: int, where: str) -> np.ndarray:
    try:
        a = np.asarray(v, dtype=np.float32)
    except (TypeError, ValueError):
        raise _fail(where, "the vector is not a list of numbers") from None
    if a.ndim != 1:
        raise _fail(where, f"the vector must be a flat list of numbers, got shape {a.shape}")
    if a.shape[0] != dim:
        raise _fail(
            where, f"the vector has {a.shape[0]} dimensions, the collection's model has {dim}"
        )
    if not np.isfinite(a).all():
        raise _fail(where, "the vector holds NaN or infinite values")
    if not float(np.abs(a).max()) > 0.0:
        raise _fail(where, "the vector is all zeros (no direction: cosine distance is undefined)")
    return a


def parse_record(obj: Any, dim: int, where: str) -> VectorDocument:
    """One validated document from a decoded record (``where`` names it in errors)."""
    if not isinstance(obj, dict):
        raise _fail(where, f"a record must be a JSON object, got {type(obj).__name__}")
    unknown = set(obj) - KNOWN_FIELDS
    if unknown:
        raise _fail(where, f"unknown field(s) {sorted(unknown)}; known: {sorted(KNOWN_FIELDS)}")
    key = obj.get("key")
    if not isinstance(key, str) or not key.strip():
        raise _fail(where, "'key' (the document's id, a non-empty string) is missing")
    chunks_in = obj.get("chunks")
    if not isinstance(chunks_in, list) or not chunks_in:
        raise _fail(where, f"document {key!r} has no 'chunks' (a non-empty list)")
    chunks = []
    for i, c in enumerate(chunks_in):
        at = f"{where}, chunk {i}"
        if not isinstance(c, dict):
            raise _fail(at, "a chunk must be an object with 'text' and 'vector'")
        extra = set(c) - CHUNK_FIELDS
        if extra:
            raise _fail(at, f"unknown field(s) {sorted(extra)}; known: {sorted(CHUNK_FIELDS)}")
        text = c.get("text")
        if not isinstance(text, str) or not text.strip():
            raise _fail(
                at, "the chunk has no text (a vector without text cannot be cited or found by BM25)"
            )
        if "\x00" in text:
            raise _fail(at, "the text holds a NUL character")
        if "vector" not in c:
            raise _fail(at, "the chunk has no 'vector'")
        page = c.get("page")
        if page is not None and (not isinstance(page, int) or isinstance(page, bool) or page < 0):
            raise _fail(at, f"'page' must be a non-negative integer, got {page!r}")
        hp = c.get("heading_path") or []
        if not isinstance(hp, list) or not all(isinstance(h, str) for h in hp):
            raise _fail(at, "'heading_path' must be a list of strings")
        header = c.get("header") or ""
        if not isinstance(header, str):
            raise _fail(at, "'header' must be a string")
        tokens = c.get("tokens")
        if tokens is not None and (
            not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0
        ):
            raise _fail(at, f"'tokens' must be a non-negative integer, got {tokens!r}")
        chunks.append(
            VectorChunk(text, _vector(c["vector"], dim, at), tuple(hp), page, header, tokens)
        )
    title = obj.get("title") or key
    meta = obj.get("metadata") or {}
    if not isinstance(title, str):
        raise _fail(where, "'title' must be a string")
    if not isinstance(meta, dict):
        raise _fail(where, "'metadata' must be an object")
    modified = obj.get("modified")
    when = None
    if modified is not None:
        try:
            when = datetime.fromisoformat(str(modified))
        except ValueError:
            raise _fail(where, f"'modified' is not an ISO date or time: {modified!r}") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
    groups = obj.get("groups")
    if groups is not None:
        if not isinstance(groups, list) or not all(
            isinstance(g, str) and g.strip() for g in groups
        ):
            raise _fail(where, "'groups' must be a list of non-empty strings")
        groups = tuple(sorted(set(groups)))
    lang = obj.get("language")
    if lang is not None and (not isinstance(lang, str) or not lang.strip()):
        raise _fail(where, "'language' must be a language code such as 'en'")
    return VectorDocument(
        key=key,
        title=title,
        chunks=tuple(chunks),
        source=str(obj.get("source") or key),
        metadata=meta,
        language=lang.strip().lower() if lang else None,
        modified=when,
        groups=groups,
    )


def validate(records: Iterable[tuple[str, Any]], dim: int) -> Iterator[VectorDocument]:
    """Validated documents from ``(where, record)`` pairs; duplicate keys are refused."""
    seen: dict[str, str] = {}
    for where, obj in records:
        doc = parse_record(obj, dim, where)
        if doc.key in seen:
            raise _fail(where, f"key {doc.key!r} appears twice (first at {seen[doc.key]})")
        seen[doc.key] = where
        yield doc


def read_jsonl(path: Path) -> Iterator[tuple[str, Any]]:
    """``(where, decoded record)`` for each non-blank line of a JSON Lines file."""
    try:
        f = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise VectorsError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield f"{path}:{n}", json.loads(line)
            except json.JSONDecodeError as exc:
                raise _fail(
                    f"{path}:{n}", f"not valid JSON ({exc.msg} at column {exc.colno})"
                ) from None


def check_file(path: Path, dim: int) -> tuple[int, int]:
    """Validate the whole file first (so a bad line writes nothing); (documents, chunks)."""
    docs = chunks = 0
    for d in validate(read_jsonl(path), dim):
        docs += 1
        chunks += len(d.chunks)
    return docs, chunks


PARALLEL_ANALYSIS_AT = 1000
"""A batch of at least this many chunks is analyzed (BM25 terms, text hashes) in a helper
process, while this process's writer thread sends the previous batch: the Python work of
a bulk load is split between two cores instead of contending for one GIL."""


class VectorIngestor:
    """Writes validated documents in batches through the store's normal write path."""

    def __init__(
        self,
        db: Any,
        collection: Any,
        *,
        analyzer: Any,
        batch_chunks: int,
        keep_versions: int = 0,
        metadata: Mapping[str, Any] | None = None,
        on_progress: Callable[..., None] | None = None,
    ) -> None:
        self.db, self.collection, self.analyzer = db, collection, analyzer
        self.batch_chunks = batch_chunks
        self.keep_versions = keep_versions
        self.extra_metadata = dict(metadata or {})
        self.on_progress = on_progress or (lambda *_a: None)
        self._helper: Any = None

    def ingest(self, docs: Iterable[VectorDocument], *, owner: Principal) -> Any:
        from .pipeline import IngestReport, WriteAhead, windows

        report = IngestReport()
        t0 = time.perf_counter()
        default_groups = tuple(sorted(set(owner.groups)))
        batch: list[tuple[VectorDocument, bool]] = []

        try:
            with WriteAhead() as writer:
                for some in windows(docs, 1000):
                    self._ingest_some(some, owner, default_groups, report, writer, batch)
                if batch:
                    self._write(batch, owner, default_groups, report, writer)
        finally:
            if self._helper is not None:
                self._helper.close()
                self._helper = None
        report.seconds = time.perf_counter() - t0
        return report

    def _analyzed(self, items: list[tuple[str, str]]) -> list[tuple[Counter[str], str]]:
        """(term counts, text hash) of each (indexed text, language); a large batch in the
        helper process (started on the first one: a small ingest never pays for it)."""
        from ..analysis.analyzer import MultiAnalyzer
        from .analysis_helper import AnalysisHelper, analyze

        name = getattr(self.analyzer, "name", "")
        if len(items) >= PARALLEL_ANALYSIS_AT and MultiAnalyzer.from_name(name) is not None:
            if self._helper is None:
                self._helper = AnalysisHelper()
            result: list[tuple[Counter[str], str]] = self._helper.analyze(name, items)
            return result
        return analyze(self.analyzer, items)

    def _ingest_some(
        self,
        docs: Sequence[VectorDocument],
        owner: Principal,
        default_groups: tuple[str, ...],
        report: Any,
        writer: Any,
        batch: list[tuple[VectorDocument, bool]],
    ) -> None:
        """Sort documents into unchanged, regrouped and to write (``batch``, flushed when
        it holds enough chunks); what exists is looked up for these documents only."""
        from ..store.documents import current_versions, update_groups

        existing = current_versions(self.db, self.collection, owner.tenant, [d.key for d in docs])
        n = sum(len(d.chunks) for d, _ in batch)
        for doc in docs:
            old = existing.get(doc.key)
            digest = doc.content_hash
            groups = doc.groups if doc.groups is not None else default_groups
            if old is not None and old[0] == digest:
                if old[1] == groups:
                    report.unchanged.append(doc.key)
                else:  # same content, new readers: no re-indexing
                    update_groups(self.db, self.collection, owner.tenant, doc.key, groups)
                    report.updated.append(doc.key)
                self.on_progress(doc.key, 0)
                continue
            batch.append((doc, old is not None))
            n += len(doc.chunks)
            if n >= self.batch_chunks:
                self._write(batch, owner, default_groups, report, writer)
                batch.clear()
                n = 0

    def _write(
        self,
        batch: Sequence[tuple[VectorDocument, bool]],
        owner: Principal,
        groups: Sequence[str],
        report: Any,
        writer: Any,
    ) -> None:
        """Analyze the batch (here, or in the helper process), write it in ``writer``'s thread."""
        from ..analysis.language import detect_language
        from ..embed.openai_api import estimate_tokens
        from ..store.documents import PreparedChunk
        from ..store.writes import DocumentWrite

        docs = []
        for doc, _ in batch:
            text = "\n\n".join(c.text for c in doc.chunks)
            language = doc.language or detect_language(text[:4000]).code
            chunks, pos = [], 0
            for i, c in enumerate(doc.chunks):
                chunk = Chunk(
                    ordinal=i,
                    text=c.text,
                    char_start=pos,
                    char_end=pos + len(c.text),
                    heading_path=c.heading_path,
                    header=c.header,
                    token_count=c.tokens
                    if c.tokens is not None
                    else estimate_tokens(c.header + "\n\n" + c.text if c.header else c.text),
                    page=c.page,
                )
                pos += len(c.text) + 2
                chunks.append(chunk)
            docs.append((doc, language, chunks))
        analyzed = iter(
            self._analyzed([(c.indexed_text, lang) for _, lang, cs in docs for c in cs])
        )
        writes = []
        for doc, language, chunks in docs:
            meta = {**doc.metadata, **self.extra_metadata}
            meta.setdefault("language", language)
            prepared = []
            for chunk, c in zip(chunks, doc.chunks):
                terms, digest = next(analyzed)
                prepared.append(
                    PreparedChunk(chunk=chunk, embedding=c.vector, terms=terms, text_hash=digest)
                )
            writes.append(
                DocumentWrite(
                    doc_key=doc.key,
                    source_uri=doc.source,
                    title=doc.title,
                    media_type="application/x-ragline-vectors",
                    content_hash=doc.content_hash,
                    tenant=owner.tenant,
                    groups=doc.groups if doc.groups is not None else groups,
                    metadata=meta,
                    chunks=prepared,
                    modified_at=doc.modified,
                    language=language,
                    content=None,
                )
            )
        from ..store.writes import write_documents

        batch = list(batch)
        writer.submit(
            lambda: write_documents(
                self.db, self.collection, writes, keep_versions=self.keep_versions
            ),
            then=lambda fut: self._stored(batch, fut, report),
        )

    def _stored(
        self, batch: Sequence[tuple[VectorDocument, bool]], future: Any, report: Any
    ) -> None:
        """Record a written batch (in the caller's thread: progress callbacks run here)."""
        from .pipeline import Failure

        try:
            results = future.result()
        except Exception as exc:  # the database failed the whole batch
            results = [exc] * len(batch)
        for (doc, is_update), res in zip(batch, results):
            if isinstance(res, Exception):
                report.failed.append(
                    Failure(doc.key, f"could not store: {res}", type(res).__name__)
                )
                continue
            (report.updated if is_update else report.added).append(doc.key)
            report.chunks += len(doc.chunks)
            report.pages += 1
            self.on_progress(doc.key, len(doc.chunks), 1)


def records_of(
    docs: Iterable[Mapping[str, Any] | VectorDocument], dim: int
) -> Iterator[VectorDocument]:
    """Python API input: mappings (validated as records, numbered from 1) or documents."""

    def pairs() -> Iterator[tuple[str, Any]]:
        for i, d in enumerate(docs, 1):
            yield f"record {i}", d

    seen: set[str] = set()
    for where, d in pairs():
        if isinstance(d, VectorDocument):
            for j, c in enumerate(d.chunks):
                _vector(c.vector, dim, f"{where}, chunk {j}")
            doc = d
        else:
            doc = parse_record(d, dim, where)
        if doc.key in seen:
            raise _fail(where, f"key {doc.key!r} appears twice")
        seen.add(doc.key)
        yield doc
