"""The Python API: :func:`ragline.open` returns an :class:`Index` over one collection.

The Index wires the stages together; each stage lives in its own module and can be
used alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .binding import Binding, _embedder_for
from .core.errors import ConfigError
from .core.filters import Filters
from .core.requests import AskRequest, SearchRequest
from .core.settings import Settings
from .core.types import Answer, Hit
from .ingestion import Ingestion
from .research import Research
from .tracing import TraceRecorder

_SELF_CHAT: Any = object()


class Index:
    """Ingest, search and ask over one collection of one database."""

    def __init__(
        self, settings: Settings, *, embedder: Any = None, version: int | None = None
    ) -> None:
        """``version`` pins one index version of the collection (default: whichever is
        active, followed across ``ragline index activate``)."""
        from .analysis.analyzer import MultiAnalyzer
        from .store.db import resolve_database
        from .store.versions import active_collection, get_version

        self.settings = settings
        self.db = resolve_database(
            settings.database_url or settings.data_dir,
            schema=settings.db_schema,
            max_size=settings.pool_size,
            prepare=settings.prepared_statements,
        )
        self.read_db: Any = self.db  # searches and asks read here (store/replicas.py)
        if settings.read_urls() and not settings.read_from_primary:
            from .store.replicas import ReadPools

            self.read_db = ReadPools(self.db, settings.read_urls(), max_size=settings.pool_size)
        self._searcher: Any = None
        self._chat: Any = None
        pin = (
            None
            if version is None
            else get_version(self.db, settings.collection, version).collection
        )
        self.binding = Binding(
            settings, self.db, MultiAnalyzer(settings.language), chat=lambda: self.chat, pin=pin
        )
        self.recorder = TraceRecorder(settings, self.db, self.binding)
        self.researcher = Research(self)
        self.ingestion = Ingestion(self)
        existing = pin or active_collection(self.db, settings.collection)
        if embedder is not None:
            self.binding.bind(embedder)
        elif settings.embedder != "auto":
            from .embed import get_embedder

            self.binding.bind(get_embedder(settings.embedder, threads=settings.embed_threads))
        elif existing is not None:
            self.binding.bind(_embedder_for(existing.embedder, settings.embed_threads))
        # else: embedder "auto" on a new collection: chosen from the first documents ingested

    # -- what the index is bound to (see :class:`~ragline.binding.Binding`) -------------
    @property
    def collection(self) -> Any:
        return self.binding.collection

    @property
    def embedder(self) -> Any:
        return self.binding.embedder

    @property
    def chunker(self) -> Any:
        return self.binding.chunker

    @property
    def analyzer(self) -> Any:
        return self.binding.analyzer

    def _count_tokens(self, text: str) -> int:
        """The generator's token count (the embedder's for the extractive answerer)."""
        return int(self.chat.count_tokens(text) if self.chat else self.embedder.count_tokens(text))

    def refresh(self) -> None:
        """Follow an index-version switch or a collection another process created."""
        if self.binding.refresh():
            self._searcher = None

    def _written(self) -> None:
        """A write went through this index: its searches see it now, not when caches age."""
        if self._searcher is not None:
            self._searcher.forget()

    @property
    def admin(self) -> Any:
        """Operator work on this index's database (:class:`~ragline.admin.Admin`): keys,
        index versions, jobs, the installation secret, table rewrites."""
        from .admin import Admin

        return Admin(self.db, self.settings.collection)

    def languages(self) -> tuple[str, ...]:
        """The languages of the collection's documents (detected at ingest)."""
        from .store.bm25 import indexed_languages

        self.refresh()
        return () if self.collection is None else indexed_languages(self.db, self.collection)

    def document_by_id(self, tenant: str, doc_id: int) -> Any:
        """The current document with internal id ``doc_id`` of ``tenant`` (None: none)."""
        from .store.documents import get_document_by_id

        self.refresh()
        if self.collection is None:
            return None
        return get_document_by_id(self.db, self.collection, tenant, doc_id)

    # -- sources and the agent loop (see :class:`~ragline.research.Research`) ------------
    def declare_source(self, name: str, description: str = "", **kw: Any) -> dict[str, Any]:
        """Declare collection ``name`` a source the agent may route to (:meth:`Research.declare_source`)."""
        return self.researcher.declare_source(name, description, **kw)

    def remove_source(self, name: str) -> None:
        self.researcher.remove_source(name)

    def sources(self, **who: Any) -> list[dict[str, Any]]:
        """The declared sources the caller may read (:meth:`Research.sources`)."""
        return self.researcher.sources(**who)

    def routes(self, **who: Any) -> bool:
        """Whether the caller's asks are routed among sources (:meth:`Research.routes`)."""
        return self.researcher.routes(**who)

    def research(self, question: str | AskRequest, **kw: Any) -> Answer:
        """Answer through the agent loop (:meth:`Research.research`); arguments as
        :meth:`ask`'s (``agent`` on by default here)."""
        from .core.trace import nothing_ingested

        req = AskRequest.of(question, **kw)
        self.refresh()
        if self.collection is None:  # nothing ingested yet, by anyone
            self.check_size(req.question, req.filters)
            return nothing_ingested(req.question)
        answer: Answer = self.researcher.research(req)
        return answer

    # -- traces (see :class:`~ragline.tracing.TraceRecorder`) --------------------------
    def trace(self, trace_id: str, **who: Any) -> dict[str, Any] | None:
        """A stored trace the caller may read (:meth:`TraceRecorder.trace`)."""
        return self.recorder.trace(trace_id, **who)

    def traces(self, **who: Any) -> list[dict[str, Any]]:
        """Recent traces the caller may read, newest first (:meth:`TraceRecorder.traces`)."""
        return self.recorder.traces(**who)

    # -- ingest (see :class:`~ragline.ingestion.Ingestion`) ----------------------------
    def ingest(self, paths: Sequence[str | Path] | str | Path, **kw: Any) -> Any:
        """Ingest files and folders; an :class:`~ragline.ingest.pipeline.IngestReport`
        (:meth:`Ingestion.ingest`: ``tenant``, ``groups``, ``metadata``, progress callbacks)."""
        return self.ingestion.ingest(paths, **kw)

    def sync(self, folder: str | Path, **kw: Any) -> Any:
        """Make the index equal ``folder``: add, re-index, delete, move (:meth:`Ingestion.sync`)."""
        return self.ingestion.sync(folder, **kw)

    def ingest_sources(self, sources: Iterable[Any], **kw: Any) -> Any:
        """Ingest :class:`~ragline.ingest.sources.Source` values (:meth:`Ingestion.ingest_sources`)."""
        return self.ingestion.ingest_sources(sources, **kw)

    def ingest_vectors(self, records: Iterable[Any], **kw: Any) -> Any:
        """Ingest chunks with the vectors you made (:meth:`Ingestion.ingest_vectors`)."""
        return self.ingestion.ingest_vectors(records, **kw)

    def ingest_vectors_file(self, path: str | Path, **kw: Any) -> Any:
        """:meth:`ingest_vectors` of a JSON Lines file, validated whole first."""
        return self.ingestion.ingest_vectors_file(path, **kw)

    def delete(self, doc: str | Path, *, tenant: str = "default") -> int:
        """Delete a document (by path or doc key) and everything derived from it."""
        return self.delete_keys(self._keys_for(doc), tenant=tenant)

    def delete_keys(self, doc_keys: Iterable[str], *, tenant: str = "default") -> int:
        """Delete documents by their exact keys; the number of versions removed."""
        from .store.documents import delete_document

        self.refresh()
        if self.collection is None:
            return 0
        t = time.perf_counter()
        try:
            n = sum(delete_document(self.db, self.collection, tenant, k) for k in doc_keys)
        finally:
            self._written()
        if n:
            self._tops_after(tenant, time.perf_counter() - t)
        return n

    def _tops_after(self, tenant: str, spent: float) -> None:
        """The BM25 tops a delete or purge cleared, computed again within its budget
        (:meth:`Ingestion.refresh_tops_after`); a failure is logged, the write stands."""
        _, warning = self.ingestion.refresh_tops_after(tenant, spent)
        if warning:
            logging.getLogger(__name__).warning(warning)

    def purge(
        self, doc: str | Path, *, tenant: str = "default", erase: bool | None = None
    ) -> dict[str, Any]:
        """Erase a document for good: every version of it in every index version of the
        collection, the traces that mention it, its vectors in the tenant's embedding
        cache, its name in job records, then every byte of it in the database files
        (:mod:`ragline.store.erasure`; ``erasure`` in the result says what was done).
        ``erase`` (default: the ``purge_rewrite`` setting) False skips the file rewrite:
        purging several documents, call :func:`~ragline.store.erasure.erase_dead_rows`
        once after the last (``ragline index compact``)."""
        return self.purge_keys(self._keys_for(doc), tenant=tenant, erase=erase)

    def purge_keys(
        self, keys: Iterable[str], *, tenant: str = "default", erase: bool | None = None
    ) -> dict[str, Any]:
        """:meth:`purge` by document keys; the files are rewritten once for all of them."""
        from .store.erasure import purge_everywhere

        self.refresh()
        self.binding.require_collection()
        if erase is None:
            erase = self.settings.purge_rewrite
        mb = self.settings.purge_rewrite_max_mb
        t = time.perf_counter()
        try:
            out = purge_everywhere(
                self.db,
                self.settings.collection,
                self.collection,
                tenant,
                keys,
                erase=erase,
                max_bytes=None if mb is None else mb << 20,
            )
        finally:
            self._written()
        self._tops_after(tenant, time.perf_counter() - t)
        return out

    def _keys_for(self, doc: str | Path) -> list[str]:
        self.binding.require_collection()
        from .ingest.sources import doc_key_for

        keys = [str(doc)]
        if not str(doc).startswith("beir:"):
            keys.append(doc_key_for(Path(doc)))
        return list(dict.fromkeys(keys))

    def documents(self, *, tenant: str | None = "default") -> list[Any]:
        if self.collection is None:
            return []
        from .store.documents import list_documents

        return list_documents(self.db, self.collection, tenant)

    # -- query ----------------------------------------------------------------------
    @property
    def searcher(self) -> Any:
        self.binding.require_collection()
        if self._searcher is None:
            from .retrieve.search import HybridSearcher

            reranker = None
            if self.settings.reranker:
                from .rerank import get_reranker

                reranker = get_reranker(
                    self.settings.reranker, latency_budget_ms=self.settings.rerank_budget_ms
                )
            self._searcher = HybridSearcher(
                self.read_db,
                self.collection,
                self.embedder,
                self.analyzer,
                reranker=reranker,
                rerank_depth=self.settings.rerank_depth,
            )
        return self._searcher

    @property
    def chat(self) -> Any:
        """The configured chat model, or ``None`` for the extractive (no-LLM) default."""
        if self.settings.generator == "extractive":
            return None
        if self._chat is None:
            from .generate.llm import get_chat_model

            self._chat = get_chat_model(
                self.settings.generator, key_file=self.settings.generator_key_file
            )
        return self._chat

    def planner(self, **techniques: bool) -> Any:
        """The query-technique planner under the settings (``techniques`` override them)."""
        from .retrieve.query import QueryPlanner

        s = self.settings
        flags = {
            "rewrite": s.query_rewrite,
            "multi_query": s.multi_query,
            "decompose": s.decompose,
            "hyde": s.hyde,
            **{k: v for k, v in techniques.items() if v is not None},
        }
        return QueryPlanner(self.chat, **flags)

    @property
    def default_mode(self) -> str:
        """The mode of a search that names none: rerank with a reranker, else hybrid."""
        return "rerank" if self.settings.reranker else "hybrid"

    def search_params(self, filters: Filters | None, *, include_history: bool = False) -> Any:
        """The :class:`~ragline.retrieve.search.SearchParams` of the settings (fusion,
        ``ef_search``, dedup, query languages) with the request's filters."""
        from .retrieve.search import SearchParams

        s = self.settings
        return SearchParams(
            depth=s.rrf_depth,
            rrf_k=s.rrf_k,
            ef_search=s.ef_search,
            include_history=include_history,
            dedup_threshold=s.dedup_threshold,
            query_languages=s.query_languages,
            filters=filters,
        )

    def search_result(self, query: str | SearchRequest, **kw: Any) -> Any:
        """Search with the query techniques the settings enable (rewriting a follow-up
        with its ``history``, multi-query, decomposition, HyDE); the plan rides on the
        result. ``query`` is a :class:`~ragline.core.requests.SearchRequest`, or its text
        with the request's fields as keyword arguments. With traces on (``trace`` or the
        ``traces`` setting) the stored trace's id is ``.trace_id``."""
        from dataclasses import replace

        from .core.trace import NOTHING_INGESTED
        from .retrieve.search import SearchResult, fuse_results

        req = SearchRequest.of(query, **kw)
        if not req.query or not req.query.strip():
            raise ConfigError("the query is empty; pass the text to search for")
        self.check_size(req.query, req.filters)
        self.refresh()  # binds a collection another process has created meanwhile
        mode = req.mode or self.default_mode
        if self.collection is None:  # nothing ingested yet, by anyone: an empty result
            return SearchResult(req.query, mode, (), notes=(NOTHING_INGESTED,))
        s = self.settings
        params = self.search_params(req.parsed_filters(), include_history=req.include_history)
        k, principal = req.k or s.top_k, req.principal
        searcher = self.searcher  # one version for every query of the plan
        plan = self.planner(**dict(req.techniques or {})).plan(req.query, req.history)
        results = [
            searcher.search(
                q,
                principal,
                k=k,
                mode=mode,
                params=params,
                vector_text=plan.hyde if i == 0 else None,
            )
            for i, q in enumerate(plan.queries)
        ]
        res = replace(fuse_results(results, k, s.rrf_k), plan=plan)
        if params.filters is not None and not res.hits:
            self.check_filters(params.filters, principal)
        if self.recorder.enabled(req.trace):
            from .core.trace import search_trace

            record = search_trace(
                res,
                principal,
                question=req.query,
                collection=self.collection.name,
                filters=params.filters,
            )
            res = replace(res, trace_id=self.recorder.save(principal, record, req.trace_key))
        return res

    def check_filters(self, filters: Filters, principal: Any) -> None:
        """Raise a FilterError when ``filters`` name a key or value that no document the
        caller may read has (listing the known ones): a typo (``langauge=hu``) must not
        look like "nothing found". Searches call it when a filtered search found nothing."""
        from .core.errors import FilterError
        from .store.filters import unmatched_filters

        if self.collection is None:
            return
        with self.db.connection() as conn:
            problems = unmatched_filters(conn, self.collection.id, principal, filters)
        if problems:
            raise FilterError("the filter cannot match: " + "; ".join(problems))

    def check_size(self, query: str, filters: Mapping[str, Any] | Filters | None) -> None:
        """Refuse a query or filters over the size limits (settings ``max_query_chars``,
        ``max_filter_chars``, ``max_filter_values``) with a LimitError; every search and
        ask does it before any work, so nothing is stored (no trace)."""
        from .core.limits import check_filters, check_text

        s = self.settings
        check_text(query, s.max_query_chars)
        if filters is not None and not isinstance(filters, Filters):
            check_filters(filters, s.max_filter_chars, s.max_filter_values)

    def search(self, query: str | SearchRequest, **kw: Any) -> list[Hit]:
        """The top ``k`` chunks the caller may read, best first (current versions unless
        ``include_history``); arguments as :meth:`search_result`'s."""
        return list(self.search_result(query, **kw).hits)

    def _generator(self, max_passages: int | None = None, chat: Any = _SELF_CHAT) -> Any:
        """The answerer, reading at most ``max_passages`` distinct passages (``ask --k``,
        else the ``answer_passages`` setting); ``chat`` replaces the configured model
        (None: the extractive answerer; the agent passes its budget-metered model)."""
        from .generate import ExtractiveAnswerer

        s = self.settings
        chat = self.chat if chat is _SELF_CHAT else chat
        gate: dict[str, Any] = {"max_passages": max_passages or s.answer_passages}
        if s.min_evidence is not None:
            gate["min_evidence"] = s.min_evidence
        if chat is None:
            return ExtractiveAnswerer(
                language=s.language, analyzer=self.analyzer, embedder=self.embedder, **gate
            )
        from .generate.llm_answerer import LLMAnswerer

        return LLMAnswerer(
            chat,
            language=s.language,
            support_threshold=s.support_threshold,
            unsupported=s.unsupported_claims,
            max_tokens=s.generator_max_tokens,
            native_citations=s.native_citations,
            analyzer=self.analyzer,
            embedder=self.embedder,
            **gate,
        )

    def ask(self, question: str | AskRequest, **kw: Any) -> Answer:
        """A cited answer from the caller's permitted documents, or an abstention.
        ``question`` is an :class:`~ragline.core.requests.AskRequest`, or its text with
        the request's fields as keyword arguments. ``agent`` (default: the ``agent``
        setting) ``on`` or ``auto`` answers through the research loop (:meth:`research`);
        with ``off``, a caller who may read declared sources besides this collection gets
        a routed one-shot answer."""
        req = AskRequest.of(question, **kw)
        agent = req.agent or self.settings.agent
        if agent != "off" or (
            self.collection is not None and self.routes(tenant=req.tenant, groups=req.groups)
        ):
            return self.research(req, agent=agent)
        *_, answer = self.ask_stream(req, stream=False)
        assert isinstance(answer, Answer)
        return answer

    def ask_stream(
        self, question: str | AskRequest, *, stream: bool = True, **kw: Any
    ) -> Iterator[str | Answer]:
        """Text pieces as the generator writes them, then the final checked :class:`Answer`
        (the extractive answerer, or ``stream=False``, yields the whole text at once);
        arguments as :meth:`ask`'s (the one-shot path: no agent)."""
        import time
        from dataclasses import replace

        from .core.trace import NOTHING_INGESTED, nothing_ingested

        req = AskRequest.of(question, **kw)
        ctx = self.context(req, reorder=False)  # its search refreshes the binding, checks sizes
        if NOTHING_INGESTED in ctx.search.notes:  # nothing ingested yet, by anyone
            empty = nothing_ingested(req.question)
            if stream:
                yield empty.text
            yield empty
            return
        plan, gen = ctx.plan, self._generator(req.k or self.settings.answer_passages)
        t_gen = time.perf_counter()
        items: Iterable[str | Answer] = (
            gen.stream(plan.question, ctx.passages, history=req.history)
            if stream
            else [gen.answer(plan.question, ctx.passages, history=req.history)]
        )
        for item in items:
            if isinstance(item, Answer):
                if plan.notes or plan.question != req.question:
                    item = replace(item, question=req.question, notes=(*plan.notes, *item.notes))
                if self.recorder.enabled(req.trace):
                    item = self.recorder.answer(
                        req.question,
                        ctx,
                        item,
                        req.principal,
                        req.filters,
                        t_gen,
                        req.trace_key,
                        count_tokens=self._count_tokens,
                    )
            yield item

    def context(self, question: str | AskRequest, *, reorder: bool = True, **kw: Any) -> Any:
        """The passages a generator reads: top hits widened by their neighbour chunks,
        at most ``context_max_per_doc`` per document, within ``context_tokens``. The
        query plan (rewritten question, techniques) is on ``.plan``."""
        from dataclasses import replace

        from .retrieve.context import assemble
        from .store.search import neighbor_chunks

        req = AskRequest.of(question, **kw)
        principal = req.principal
        res = self.search_result(req.search(req.k or self.settings.answer_passages))
        ctx = assemble(
            res.hits,
            # the budget is the generator's: its tokenizer counts (the embedder's for extractive)
            count_tokens=self._count_tokens,
            token_budget=self.settings.context_tokens,
            window=self.settings.context_window,
            max_per_doc=self.settings.context_max_per_doc,
            neighbors=lambda spots, w: neighbor_chunks(self.read_db, principal, spots, w),
            reorder=reorder,
        )
        return replace(ctx, plan=res.plan, search=res)

    # -- admin ----------------------------------------------------------------------
    def status(self, *, check_sources: bool = True) -> dict[str, Any]:
        """What the index holds and how fresh it is (see :mod:`ragline.status`)."""
        from .status import index_status

        self.refresh()
        return index_status(self, check_sources=check_sources)

    def pinned(self, version: int, **settings: Any) -> Index:
        """Index ``version`` of this collection, pinned (its own embedder, chunking and
        analyzer; this index's embedder object is shared when the version uses the same
        model, so comparing versions does not load a model twice)."""
        from .store.versions import get_version

        v = get_version(self.db, self.settings.collection, version)
        same = self.embedder is not None and self.embedder.model_id == v.collection.embedder
        return Index(
            self.settings.model_copy(update={"embedder": "auto", "chunking": None, **settings}),
            embedder=self.embedder if same else None,
            version=version,
        )

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
        if self.read_db is not self.db:
            self.read_db.close()
        self.db.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open(
    target: str | Path | None = None, *, collection: str | None = None, **settings: Any
) -> Index:  # noqa: A001
    """Open (creating if needed) a ragline index.

    ``target`` is a data directory (embedded PostgreSQL, started on demand) or a
    ``postgresql://`` URL; None uses ``RAGLINE_DATABASE_URL`` / ``RAGLINE_DATA_DIR`` /
    ``./.ragline``.
    """
    overrides: dict[str, Any] = dict(settings)
    if target is not None:
        t = str(target)
        if t.startswith(("postgresql://", "postgres://")):
            overrides["database_url"] = t
        else:
            overrides["data_dir"] = Path(t)
            overrides.setdefault("database_url", None)
    if collection is not None:
        overrides["collection"] = collection
    s = Settings.load(**overrides)
    if target is not None and not str(target).startswith("postgres"):
        s = s.model_copy(update={"database_url": None})
    return Index(s)
