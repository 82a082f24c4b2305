"""How an :class:`~ragline.index.Index` binds to its collection: the embedder, a chunker
sized for it, the active index version (followed across activations), and the automatic
choice of model from the first documents."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .core.errors import ConfigError

if TYPE_CHECKING:
    from .analysis.analyzer import MultiAnalyzer
    from .core.protocols import Chunker, Embedder
    from .core.settings import Settings
    from .store.collections import Collection
    from .store.db import Database


class Binding:
    """The collection an index reads and writes, with the embedder, chunker and analyzer
    it fixes. ``chat`` gives the chat model (lazily: only contextual chunking needs it);
    ``pin`` fixes one index version instead of following the active one."""

    def __init__(
        self,
        settings: Settings,
        db: Database,
        analyzer: MultiAnalyzer,
        *,
        chat: Callable[[], Any],
        pin: Collection | None = None,
    ) -> None:
        self.settings = settings
        self.db = db
        self.analyzer = analyzer
        self.collection: Collection | None = None
        self.embedder: Embedder | Any = None
        self.chunker: Chunker | Any = None
        self.pin = pin
        self._chat = chat
        self._switch = threading.Lock()

    def bind(self, embedder: Any) -> None:
        """Fix the embedder (and a chunker sized for it) and open or create the collection."""
        from .chunk import make_chunker, strategy_of
        from .chunk.contextual import CTX_SUFFIX, ContextualChunker
        from .store.collections import ensure_collection
        from .store.versions import active_collection

        s = self.settings
        existing = self.pin or active_collection(self.db, s.collection)
        spec = s.chunking or "section"
        if existing is not None:
            stored = strategy_of(existing.chunker)
            if s.chunking and strategy_of(s.chunking) != stored:
                raise ConfigError(
                    f"collection {s.collection!r} was chunked with {existing.chunker!r}; it cannot "
                    f"switch to {s.chunking!r} in place. Ingest into another collection "
                    "(--collection NAME) to compare strategies"
                )
            # the stored name fixes the sizes too; section collections follow the settings'
            # sizes as they always have (a new size applies to documents ingested from now)
            spec = existing.chunker if stored != "section" else "section"
        if existing is not None and existing.analyzer != self.analyzer.name:
            # the collection (or index version) fixes its analyzer, as it fixes its chunker
            from .analysis.analyzer import MultiAnalyzer

            self.analyzer = MultiAnalyzer.from_name(existing.analyzer) or self.analyzer
        self.embedder = embedder
        self.chunker = make_chunker(
            spec,
            max_tokens=s.chunk_max_tokens or max(16, embedder.max_tokens - 2),
            overlap_tokens=s.chunk_overlap_tokens,
            count_tokens=embedder.count_tokens,
            embed=embedder.embed_documents,
            parent_tokens=s.parent_max_tokens,
            child_tokens=s.child_max_tokens,
            percentile=s.semantic_percentile,
        )
        contextual = (
            existing.chunker.endswith(CTX_SUFFIX)
            if existing is not None
            else s.contextual_retrieval
        )
        if contextual:
            self.chunker = ContextualChunker(self.chunker, self._chat())
        self.collection = ensure_collection(
            self.db,
            existing.name if existing is not None else s.collection,  # the active version
            embedder=embedder.model_id,
            dim=embedder.dim,
            analyzer=self.analyzer.name,
            chunker=self.chunker.name,
        )

    def refresh(self) -> bool:
        """Follow an index-version switch (``ragline index activate``) made by any
        process: one cheap query; queries already running keep their searcher. An index
        opened before anything was ingested binds to the collection once another process
        (or another server worker) creates it. True when it switched (searchers built on
        the old collection are stale)."""
        if self.pin is not None:
            return False
        from .store.versions import active_collection

        new = active_collection(self.db, self.settings.collection)
        if new is None or (self.collection is not None and new.id == self.collection.id):
            return False
        with self._switch:
            if self.collection is not None and new.id == self.collection.id:
                return False  # another thread switched meanwhile
            embedder = self.embedder
            if embedder is None or new.embedder != embedder.model_id:
                embedder = _embedder_for(new.embedder, self.settings.embed_threads)
            self.bind(embedder)
            return True

    def require_collection(self) -> None:
        if self.collection is None:
            from .core.errors import NotFoundError

            raise NotFoundError(
                f"collection {self.settings.collection!r} is empty: ingest documents first "
                "(with embedder 'auto' the model is chosen from the first documents)"
            )

    def choose_embedder(self, sources: Iterable[Any]) -> Iterable[Any]:
        """Embedder 'auto': English first documents → MiniLM, any other language → e5.

        The (up to five) documents read to decide are handed on parsed, so the ingest
        does not parse them a second time."""
        import itertools
        from dataclasses import replace

        from .analysis.language import detect_language
        from .embed import get_embedder
        from .ingest.sources import Source
        from .ingest.workers import ParsePool

        it = iter(sources)
        head: list[Any] = []
        sample: list[Any] = []
        for item in it:
            head.append(item)
            if isinstance(item, Source):
                sample.append(item)
                if len(sample) >= 5:
                    break
        text = ""
        parsed: dict[int, Any] = {}
        pool: Any
        with ParsePool(**self.settings.parse_options()) as pool:
            items = ((i, s.path, s.load if s.path is None else None) for i, s in enumerate(sample))
            for i, doc in pool.imap(items):
                if not isinstance(doc, Exception):
                    text += doc.text[:2000] + "\n\n"
                    parsed[id(sample[i])] = replace(sample[i], path=None, load=lambda d=doc: d)
        head = [parsed.get(id(item), item) for item in head]
        lang = detect_language(text).code if text.strip() else "en"
        self.bind(
            get_embedder(
                "minilm" if lang in ("en", "und") else "e5", threads=self.settings.embed_threads
            )
        )
        return itertools.chain(head, it)


def _embedder_for(model_id: str, threads: int | None = None) -> Any:
    """Rebuild the embedder a collection was created with, from its stored model id."""
    from .core.errors import ConfigError
    from .embed import get_embedder

    try:
        return get_embedder(model_id, threads=threads)
    except ConfigError as exc:
        raise ConfigError(
            f"this collection was built with embedder {model_id!r}; ragline cannot rebuild it from "
            "the id alone: set RAGLINE_EMBEDDER (or --settings) to the same embedder spec"
        ) from exc
