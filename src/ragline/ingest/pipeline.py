"""Ingest documents into a collection, incrementally and atomically.

For each source: unchanged content (same hash, same groups) is skipped without parsing
or embedding; changed or new content is parsed, chunked and embedded — vectors come from
the embedding cache where the same text was embedded before — and written in one
transaction that replaces the previous version. Chunks of several small documents are
embedded together in batches. One broken file never stops the batch: its error is
recorded in the report and the rest goes on.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from ..core.errors import EmptyDocumentError, ParseError, RaglineError
from ..core.types import Chunk, ParsedDocument, Principal
from ..embed.batching import embed_reporting
from ..parse.dates import document_date
from ..store.collections import Collection
from ..store.db import Database
from ..store.documents import (
    PreparedChunk,
    cached_embeddings,
    chunks_without_embeddings,
    current_documents,
    merge_metadata,
    set_embeddings,
    store_embeddings,
    update_groups,
)
from ..store.writes import DocumentWrite, write_documents
from .sources import Skipped, Source

EMBED_BATCH_CHUNKS = 256  # chunks embedded together: longest-first batches of 32 pad little
EMBED_PROGRESS_SLICE = 64
"""Progress moves while a batch embeds: an embedder that reports its own batches
(``embed_documents(texts, progress=...)``, the local ones) gets the whole batch in one
call; another is called with this many chunks at a time (longest first, as the embedder
would order them), ~8 s of MiniLM on 2 cores. The last batch of an ingest is embedded and
written in runs of this many chunks, each written while the next embeds."""


@dataclass(frozen=True)
class Failure:
    source: str
    reason: str
    error: str


@dataclass
class IngestReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    chunks: int = 0
    pages: int = 0
    embedded: int = 0
    cached: int = 0
    seconds: float = 0.0
    vector_index_seconds: float = 0.0
    """Of ``seconds``: building the vector index after a load into an empty collection."""
    tops_seconds: float = 0.0
    """Of ``seconds``: computing the tops of the long BM25 lists the ingest changed."""
    warnings: list[str] = field(default_factory=list)
    """What the caller should know and fix (documents the embedder does not cover)."""

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            **({"warnings": self.warnings} if self.warnings else {}),
            "updated": self.updated,
            "unchanged": self.unchanged,
            "skipped": [s.__dict__ for s in self.skipped],
            "failed": [f.__dict__ for f in self.failed],
            "chunks": self.chunks,
            "pages": self.pages,
            "embedded": self.embedded,
            "cached": self.cached,
            "seconds": round(self.seconds, 3),
            "chunks_per_s": round(self.chunks / self.seconds, 2) if self.seconds else 0.0,
        }


@dataclass
class _Pending:
    source: Source
    parsed: ParsedDocument
    chunks: list[Chunk]
    is_update: bool

    @cached_property
    def hashes(self) -> list[str]:
        """``text_hash`` of each chunk's indexed text, computed once (cache key and row value)."""
        return [text_hash(c.indexed_text) for c in self.chunks]


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return _CONTROL.sub("", value)
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_clean(v) for v in value)
    return value


def sanitize(parsed: ParsedDocument) -> ParsedDocument:
    """Drop control characters (NUL above all: PostgreSQL text cannot hold it) that a
    parser let through, from block texts, title and metadata, before chunking."""
    blocks = tuple(
        replace(
            b,
            text=_CONTROL.sub("", b.text),
            heading_path=tuple(_CONTROL.sub("", h) for h in b.heading_path),
        )
        for b in parsed.blocks
    )
    blocks = tuple(b for b in blocks if b.text.strip())
    return replace(
        parsed,
        title=_CONTROL.sub("", parsed.title),
        blocks=blocks,
        metadata=_clean(dict(parsed.metadata)),
    )


def _language(parsed: ParsedDocument, meta: dict[str, Any]) -> str:
    """The document's language: declared (front matter, HTML lang) or detected offline."""
    declared = meta.get("language") or meta.get("lang")
    if isinstance(declared, str) and declared.strip():
        return declared.strip().lower().split("-")[0][:8]
    from ..analysis.language import detect_language

    return detect_language(parsed.text).code


def windows(items: Iterable[Any], n: int) -> Iterator[list[Any]]:
    """``items`` in lists of ``n`` (the last one shorter)."""
    out: list[Any] = []
    for x in items:
        out.append(x)
        if len(out) >= n:
            yield out
            out = []
    if out:
        yield out


def _by_chunks(pending: Sequence[_Pending], n: int) -> Iterator[list[_Pending]]:
    """Whole documents in order, in runs of at least ``n`` chunks (the last one fewer)."""
    out: list[_Pending] = []
    size = 0
    for p in pending:
        out.append(p)
        size += len(p.chunks)
        if size >= n:
            yield out
            out, size = [], 0
    if out:
        yield out


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Ingestor:
    """Ingests sources for one principal (tenant + the groups the documents are shared with)."""

    def __init__(
        self,
        db: Database,
        collection: Collection,
        *,
        embedder: Any,
        chunker: Any,
        analyzer: Any,
        on_progress: Callable[..., None] | None = None,
        embed: bool = True,
        parse_options: dict[str, Any] | None = None,
        keep_versions: int = 0,
        batch_chunks: int = EMBED_BATCH_CHUNKS,
        metadata: Mapping[str, Any] | None = None,
        on_stage: Callable[[str, int], None] | None = None,
    ) -> None:
        self.keep_versions = keep_versions
        self.batch_chunks = batch_chunks
        self.extra_metadata = dict(metadata or {})
        self.embed = embed
        self.parse_options = dict(parse_options or {})
        self.db = db
        self.collection = collection
        self.embedder = embedder
        self.chunker = chunker
        self.analyzer = analyzer
        self.on_progress = on_progress or (lambda _name, _chunks, _pages=0: None)
        # ("parsed", documents) as each is parsed and chunked, ("chunks", n) its chunks,
        # ("embedded", chunks) as each slice of a batch is embedded (or found cached);
        # on_progress above reports each document written
        self.on_stage = on_stage or (lambda _stage, _n: None)

    def ingest(
        self, sources: Iterable[Source | Skipped | tuple[str, ParseError]], *, owner: Principal
    ) -> IngestReport:
        """Ingest ``sources`` (a ``(name, error)`` pair records a source that could not be opened).

        Files are parsed in worker processes ahead of the embedding of earlier documents,
        so parsing and embedding overlap; at most a small window of parsed documents and
        one embedding batch are held in memory at any time.
        """
        from .workers import ParsePool

        report = IngestReport()
        t0 = time.perf_counter()
        groups = tuple(sorted(set(owner.groups)))

        def to_parse() -> Iterator[tuple[tuple[Source, bool], Any, Any]]:
            for window in windows(sources, 256):
                keys = [s.doc_key for s in window if isinstance(s, Source)]
                existing = current_documents(self.db, self.collection, owner.tenant, keys)
                yield from check(window, existing)

        def check(
            window: Sequence[Any], existing: Mapping[str, Any]
        ) -> Iterator[tuple[tuple[Source, bool], Any, Any]]:
            """What of these sources to parse: unchanged ones are skipped (their groups and
            metadata brought up to date), failures and skips recorded."""
            for src in window:
                if isinstance(src, Skipped):
                    report.skipped.append(src)
                    self.on_progress(src.source, 0)
                    continue
                if isinstance(src, tuple):
                    name, err = src
                    reason = err.reason if isinstance(err, ParseError) else str(err)
                    report.failed.append(Failure(name, reason, type(err).__name__))
                    self.on_progress(name, 0)
                    continue
                old = existing.get(src.doc_key)
                # unchanged, and its parsed text is stored (documents ingested before
                # index versions existed are re-indexed once, their vectors from the cache)
                if old is not None and old.content_hash == src.content_hash and old.has_content:
                    stale_meta = any(
                        old.metadata.get(k) != v for k, v in self.extra_metadata.items()
                    )
                    if tuple(old.groups) != groups or stale_meta:
                        update_groups(self.db, self.collection, owner.tenant, src.doc_key, groups)
                        if stale_meta:
                            merge_metadata(
                                self.db,
                                self.collection,
                                owner.tenant,
                                src.doc_key,
                                self.extra_metadata,
                            )
                        report.updated.append(src.doc_key)
                    else:
                        report.unchanged.append(src.doc_key)
                    self.on_progress(src.doc_key, 0)
                    continue
                yield (src, old is not None), src.path, (None if src.path is not None else src.load)

        pending: list[_Pending] = []
        n_pending = 0

        def store(batch: Sequence[_Pending], *, last: bool = False) -> None:
            if last and len(batch) > 1:
                # nothing is embedded after the last batch, so its write would run alone:
                # written in slices instead, each while the next one embeds
                for part in _by_chunks(batch, EMBED_PROGRESS_SLICE):
                    store(part)
                return
            vectors = self._embed(batch, owner, report)
            if vectors is None:
                return
            batch = list(batch)
            heavy = sum(len(c.text) for p in batch for c in p.chunks) > HEAVY_BATCH_CHARS
            writer.submit(
                self._store,
                batch,
                vectors,
                owner,
                groups,
                then=lambda fut: self._stored(batch, fut, report),
                wait=heavy,
            )

        writer = WriteAhead()
        pool: ParsePool[tuple[Source, bool]] = ParsePool(**self.parse_options)
        full: list[_Pending] = []  # a full batch waits for the next document: is it the last?
        with writer, pool:
            for (src, is_update), parsed in pool.imap(to_parse()):
                try:
                    if isinstance(parsed, Exception):
                        raise parsed
                    parsed = sanitize(parsed)
                    chunks = self.chunker.chunk(parsed)
                    if not chunks:
                        raise EmptyDocumentError(src.source_uri, "no text to index after parsing")
                except RaglineError as exc:
                    reason = exc.reason if isinstance(exc, ParseError) else str(exc)
                    report.failed.append(Failure(src.source_uri, reason, type(exc).__name__))
                    self.on_progress(src.source_uri, 0)
                    continue
                except Exception as exc:  # a chunker bug must not stop the batch
                    report.failed.append(
                        Failure(src.source_uri, f"unexpected error: {exc!r}", type(exc).__name__)
                    )
                    self.on_progress(src.source_uri, 0)
                    continue
                if full:
                    store(full)
                    full = []
                pending.append(_Pending(src, parsed, chunks, is_update))
                self.on_stage("parsed", 1)
                self.on_stage("chunks", len(chunks))
                n_pending += len(chunks)
                if n_pending >= self.batch_chunks:
                    full, pending, n_pending = pending, [], 0
            if full or pending:
                store(full or pending, last=True)
        report.seconds = time.perf_counter() - t0
        return report

    def _embed(
        self, pending: Sequence[_Pending], owner: Principal, report: IngestReport
    ) -> dict[str, Any] | None:
        """Vectors of the batch's chunk texts by text hash (cache first, then the model);
        None (the batch failed, recorded) when embedding failed."""
        texts = {h: c.indexed_text for p in pending for c, h in zip(p.chunks, p.hashes)}
        uses = Counter(h for p in pending for h in p.hashes)
        try:
            vectors = cached_embeddings(self.db, self.embedder.model_id, owner.tenant, texts)
            report.cached += len(vectors)
            self.on_stage("embedded", sum(uses[h] for h in vectors))
            missing = sorted((h for h in texts if h not in vectors), key=lambda h: -len(texts[h]))
            if missing and self.embed:
                done = 0

                def embedded(n: int) -> None:
                    nonlocal done
                    self.on_stage("embedded", sum(uses[h] for h in missing[done : done + n]))
                    done += n

                got = embed_reporting(
                    self.embedder,
                    [texts[h] for h in missing],
                    embedded,
                    slice_size=EMBED_PROGRESS_SLICE,
                )
                fresh: dict[str, Any] = dict(zip(missing, got))
                store_embeddings(self.db, self.embedder.model_id, owner.tenant, fresh)
                vectors.update(fresh)
                report.embedded += len(missing)
        except Exception as exc:
            for p in pending:
                report.failed.append(
                    Failure(p.source.source_uri, f"embedding failed: {exc}", type(exc).__name__)
                )
            return None
        return vectors

    def _store(
        self,
        pending: Sequence[_Pending],
        vectors: dict[str, Any],
        owner: Principal,
        groups: Sequence[str],
    ) -> tuple[list[DocumentWrite], list[Any]]:
        """Analyze and write one embedded batch (in the writer thread); the writes and
        their results."""
        writes: list[DocumentWrite] = []
        for p in pending:
            meta = {**p.parsed.metadata, **p.source.metadata, **self.extra_metadata}
            language = _language(p.parsed, meta)
            meta.setdefault("language", language)
            prepared = [
                PreparedChunk(
                    chunk=c,
                    embedding=vectors.get(h),
                    terms=Counter(self.analyzer.terms(c.indexed_text, language)),
                    text_hash=h,
                )
                for c, h in zip(p.chunks, p.hashes)
            ]
            writes.append(
                DocumentWrite(
                    doc_key=p.source.doc_key,
                    source_uri=p.source.source_uri,
                    title=p.parsed.title,
                    media_type=p.parsed.media_type,
                    content_hash=p.source.content_hash,
                    tenant=owner.tenant,
                    groups=groups,
                    metadata=meta,
                    chunks=prepared,
                    modified_at=document_date(p.parsed.metadata) or p.source.modified_at,
                    source_mtime=p.source.modified_at,
                    language=language,
                    content=parsed_to_json(p.parsed),
                )
            )
        try:
            results = write_documents(
                self.db, self.collection, writes, keep_versions=self.keep_versions
            )
        except Exception as exc:  # the database failed the whole batch
            results = [exc] * len(writes)
        return writes, results

    def _stored(self, pending: Sequence[_Pending], future: Any, report: IngestReport) -> None:
        """Record a written batch (in the caller's thread: progress callbacks run here)."""
        try:
            writes, results = future.result()
        except Exception as exc:  # analysis failed: the batch is lost, say so
            for p in pending:
                report.failed.append(
                    Failure(p.source.source_uri, f"could not store: {exc}", type(exc).__name__)
                )
            return
        for p, w, res in zip(pending, writes, results):
            if isinstance(res, Exception):
                report.failed.append(
                    Failure(p.source.source_uri, f"could not store: {res}", type(res).__name__)
                )
                continue
            (report.updated if p.is_update else report.added).append(p.source.doc_key)
            report.chunks += len(w.chunks)
            pages = len({c.page for c in p.chunks if c.page is not None}) or 1
            report.pages += pages
            self.on_progress(p.source.doc_key, len(w.chunks), pages)


class WriteAhead:
    """One store step at a time in a thread of its own, so the caller prepares the next
    batch (parses, embeds — the model releases the GIL —, analyzes) while the database
    writes this one. A step's outcome is handed back in the caller's thread (``then``
    gets the step's future): report updates, progress callbacks and their exceptions stay
    with the caller. At most one step is in flight; a heavy one (``wait=True``, e.g. a
    batch of very large documents) is waited for at once, so memory holds one batch."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragline-writer")
        self._pending: tuple[Any, Callable[[Any], None]] | None = None

    def __enter__(self) -> WriteAhead:
        return self

    def submit(
        self, step: Callable[..., Any], *args: Any, then: Callable[[Any], None], wait: bool = False
    ) -> None:
        self.drain()
        self._pending = (self._pool.submit(step, *args), then)
        if wait:
            self.drain()

    def drain(self) -> None:
        """Wait for the step in flight and hand its outcome to its ``then``."""
        if self._pending is not None:
            future, then = self._pending
            self._pending = None
            then(future)

    def __exit__(self, *exc: Any) -> None:
        try:
            if exc[0] is None:
                self.drain()
            elif self._pending is not None:  # failing anyway: let the write finish quietly
                self._pending[0].exception()
        finally:
            self._pool.shutdown(wait=True)


HEAVY_BATCH_CHARS = 16 << 20
"""A batch holding more text than this is written before the next one is prepared."""


def backfill_embeddings(
    db: Database,
    collection: Collection,
    embedder: Any,
    on_progress: Callable[[int], None] | None = None,
    batch: int = 256,
) -> int:
    """Embed chunks stored without a vector (after a BM25-only ingest); returns how many."""
    done = 0
    while True:
        todo = chunks_without_embeddings(db, collection, limit=batch)
        if not todo:
            return done
        vectors: dict[tuple[str, str], Any] = {}  # the cache is per tenant
        for tenant in sorted({t for _, t, _ in todo}):
            texts = {text_hash(x): x for _, t, x in todo if t == tenant}
            mine = cached_embeddings(db, embedder.model_id, tenant, texts)
            missing = [h for h in texts if h not in mine]
            if missing:
                fresh = dict(zip(missing, embedder.embed_documents([texts[h] for h in missing])))
                store_embeddings(db, embedder.model_id, tenant, fresh)
                mine.update(fresh)
            vectors.update({(tenant, h): v for h, v in mine.items()})
        set_embeddings(db, [i for i, _, _ in todo], [vectors[t, text_hash(x)] for _, t, x in todo])
        done += len(todo)
        if on_progress:
            on_progress(len(todo))


def parsed_to_json(parsed: ParsedDocument) -> dict[str, Any]:
    """The parsed document as stored with it (index versions are rebuilt from this)."""
    return {
        "title": parsed.title,
        "media_type": parsed.media_type,
        "blocks": [[b.kind, b.text, b.level, list(b.heading_path), b.page] for b in parsed.blocks],
    }


def parsed_from_json(data: Mapping[str, Any], metadata: Mapping[str, Any]) -> ParsedDocument:
    """Inverse of :func:`parsed_to_json` (``metadata``: the stored document's)."""
    from ..core.types import Block

    return ParsedDocument(
        title=str(data["title"]),
        media_type=str(data["media_type"]),
        blocks=tuple(
            Block(kind=k, text=t, level=int(lv), heading_path=tuple(hp), page=pg)
            for k, t, lv, hp, pg in data["blocks"]
        ),
        metadata=dict(metadata),
    )
