"""Ingest through an :class:`~ragline.index.Index`: files, folders, sources and
precomputed vectors, into the collection the index is bound to (``index.ingestion``; the
index's ``ingest``, ``sync``, ``ingest_sources`` and ``ingest_vectors`` delegate here).
The stages themselves are in :mod:`ragline.ingest`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .core.errors import ConfigError
from .core.requests import principal_of

TOPS_SHARE = 0.1
"""Of an ingest's time, what refreshing the BM25 tops after it may take."""
TOPS_MIN_SECONDS = 0.5


class Ingestion:
    """Writes into an index's collection, choosing its embedder on a first ingest."""

    def __init__(self, index: Any) -> None:
        self.index = index

    def ingest(
        self,
        paths: Sequence[str | Path] | str | Path,
        *,
        tenant: str = "default",
        groups: Iterable[str] | str | None = None,
        on_progress: Callable[..., None] | None = None,
        metadata: Mapping[str, Any] | None = None,
        on_total: Callable[[int], None] | None = None,
        on_stage: Callable[[str, int], None] | None = None,
        pdf_password: str | None = None,
    ) -> Any:
        """Ingest files and folders; returns an :class:`~ragline.ingest.pipeline.IngestReport`.

        ``metadata`` (e.g. ``{"department": "hr"}``) is stored on every document and can be
        used in search filters. ``on_total`` gets the number of files found (the folders are
        walked once, before the first file is read). ``on_progress(name, chunks, pages)`` is called
        as each document is written (or skipped), ``on_stage(stage, n)`` as documents are
        parsed (``"parsed"``, ``"chunks"``) and chunks embedded (``"embedded"``)."""
        from .core.errors import ParseError
        from .ingest.sources import Skipped, file_source, iter_files

        if isinstance(paths, (str, Path)):
            paths = [paths]

        def sources() -> Iterable[Any]:
            found = list(iter_files(paths))
            if on_total is not None:
                on_total(len(found))
            for path, err in found:
                if isinstance(err, Skipped):
                    yield err
                    continue
                if err is not None:
                    yield (str(path), err)
                    continue
                try:
                    yield file_source(path)
                except ParseError as exc:
                    yield (str(path), exc)

        return self.ingest_sources(
            sources(),
            tenant=tenant,
            groups=groups,
            on_progress=on_progress,
            metadata=metadata,
            on_stage=on_stage,
            pdf_password=pdf_password,
        )

    def sync(
        self,
        folder: str | Path,
        *,
        tenant: str = "default",
        groups: Iterable[str] | str | None = None,
        on_progress: Callable[[str, int], None] | None = None,
        metadata: Mapping[str, Any] | None = None,
        strict: bool = False,
        max_files: int | None = None,
        on_stage: Callable[[str, int], None] | None = None,
    ) -> Any:
        """Make the index equal ``folder`` (add, re-index changed, delete removed, move
        renamed). Only regular files inside the folder are read, never through a link;
        ``strict`` (a sync asked for over the HTTP API) also refuses hard-linked files and
        other file systems mounted inside it (:mod:`ragline.parse.files`). A folder of more
        than ``max_files`` files is refused before anything is written."""
        from .ingest.sync import sync_folder
        from .parse.files import Boundary
        from .store.filters import validate_principal

        owner = validate_principal(principal_of(tenant, groups))
        root = Path(folder).expanduser()
        boundary = Boundary.of(root, strict=strict) if root.is_dir() else None
        self.index.refresh()
        if self.index.collection is None and boundary is not None:
            from .ingest.sources import file_source, iter_files

            self.index.binding.choose_embedder(
                file_source(p, boundary)
                for p, err in iter_files([root], boundary=boundary)
                if err is None
            )
        ingestor = self.ingestor(
            on_progress, metadata=metadata, boundary=boundary, on_stage=on_stage
        )
        report = self._load(
            lambda: sync_folder(
                ingestor,
                root,
                owner=owner,
                on_progress=on_progress,
                boundary=boundary,
                max_files=max_files,
            )
        )
        self._record_outcome(owner.tenant, report)
        self._warn_coverage(report)
        return report

    def ingest_sources(
        self,
        sources: Iterable[Any],
        *,
        tenant: str = "default",
        groups: Iterable[str] | str | None = None,
        on_progress: Callable[[str, int], None] | None = None,
        embed: bool = True,
        metadata: Mapping[str, Any] | None = None,
        on_stage: Callable[[str, int], None] | None = None,
        pdf_password: str | None = None,
    ) -> Any:
        """Ingest :class:`~ragline.ingest.sources.Source` values (files, texts, uploads).
        ``pdf_password`` opens password-protected PDFs (passed to the parser processes
        only; default: ``RAGLINE_PDF_PASSWORD`` in their environment)."""
        from .store.filters import validate_principal

        owner = validate_principal(principal_of(tenant, groups))
        parse = {} if pdf_password is None else {"pdf_password": pdf_password}
        self.index.refresh()
        if self.index.collection is None:
            sources = self.index.binding.choose_embedder(sources, parse)
        ingestor = self.ingestor(
            on_progress, embed=embed, metadata=metadata, on_stage=on_stage, parse=parse
        )
        report = self._load(lambda: ingestor.ingest(sources, owner=owner))
        self._record_outcome(owner.tenant, report)
        self._warn_coverage(report)
        return report

    def _warn_coverage(self, report: Any) -> None:
        """Documents arrived in languages the embedder does not cover: say so, with the fix."""
        if report.added or report.updated:
            from .status import embedder_coverage

            if warning := embedder_coverage(self.index).get("embedder_warning"):
                report.warnings.append(warning)

    def ingest_vectors(
        self,
        records: Iterable[Any],
        *,
        tenant: str = "default",
        groups: Iterable[str] | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        on_progress: Callable[..., None] | None = None,
    ) -> Any:
        """Ingest documents whose chunks and vectors you made yourself (the record format is
        in :mod:`ragline.ingest.vectors`). A list is validated whole before anything is
        written; an iterator batch by batch. Loading into an empty collection builds the
        vector index once at the end instead of row by row."""
        from .ingest.vectors import VectorIngestor, records_of
        from .store.filters import validate_principal

        owner = validate_principal(principal_of(tenant, groups))
        self.index.refresh()
        if self.index.collection is None:
            raise ConfigError(
                "precomputed vectors need the embedder that made them (queries are embedded "
                "by it): set --embedder / RAGLINE_EMBEDDER (minilm, e5, onnx:DIR, "
                "openai:MODEL@URL) for a new collection"
            )
        docs: Iterable[Any] = records_of(records, self.index.collection.dim)
        if isinstance(records, Sequence):
            docs = list(docs)
        ingestor = VectorIngestor(
            self.index.db,
            self.index.collection,
            analyzer=self.index.analyzer,
            batch_chunks=max(self.index.settings.ingest_batch_chunks, 1),
            keep_versions=self.index.settings.keep_versions,
            metadata=metadata,
            on_progress=on_progress,
        )
        report = self._load(lambda: ingestor.ingest(docs, owner=owner))
        self._record_outcome(owner.tenant, report)
        return report

    def ingest_vectors_file(self, path: str | Path, **kwargs: Any) -> Any:
        """:meth:`ingest_vectors` of a JSON Lines file, validated whole first (a bad line
        writes nothing and names its line)."""
        from .ingest.vectors import check_file, read_jsonl, validate

        self.index.refresh()
        if self.index.collection is None:
            return self.ingest_vectors([], **kwargs)  # says what is missing
        check_file(Path(path), self.index.collection.dim)
        docs = (d for d in validate(read_jsonl(Path(path)), self.index.collection.dim))
        return self.ingest_vectors(docs, **kwargs)

    def _load(self, load: Callable[[], Any]) -> Any:
        """Run ``load`` (it returns the report); a load into an empty collection builds the
        vector index once at the end, if the collection then holds enough chunks to need one
        (:func:`~ragline.store.collections.deferred_vector_index`), its time in the report.
        Row by row, the inserts cost ~1.8 ms of server CPU per vector, taken from the
        embedding model."""
        from .store.collections import deferred_vector_index

        if self.index.collection is None:
            return load()
        with deferred_vector_index(self.index.db, self.index.collection) as build:
            report = load()
        report.vector_index_seconds = build["seconds"]
        report.seconds += build["seconds"]
        return report

    def _record_outcome(self, tenant: str, report: Any) -> None:
        self.index._written()
        if self.index.collection is None:
            return
        from .store.freshness import record_outcome

        record_outcome(
            self.index.db,
            self.index.collection,
            tenant,
            [(f.source, f.reason) for f in report.failed],
            [*report.added, *report.updated, *report.unchanged],
        )
        if report.added or report.updated or getattr(report, "deleted", None):
            self._refresh_tops(tenant, report)

    def _refresh_tops(self, tenant: str, report: Any) -> None:
        """The tops after an ingest (:meth:`refresh_tops_after`); a failure becomes a
        warning on the report."""
        report.tops_seconds, warning = self.refresh_tops_after(tenant, report.seconds)
        report.seconds += report.tops_seconds
        if warning:
            report.warnings.append(warning)

    def refresh_tops_after(self, tenant: str, spent: float) -> tuple[float, str | None]:
        """Recompute the tops of the long BM25 lists a write (an ingest, a delete, a purge)
        changed, within a tenth of the ``spent`` seconds it took (at least
        :data:`TOPS_MIN_SECONDS`): short queries decide from them. What is left waits for
        the next write or ``ragline index tops``, and a query over such a list reads it as
        before. The write is done either way: a failure is returned as a warning, with the
        seconds this took."""
        from .store.bm25 import refresh_tops

        if self.index.collection is None:
            return 0.0, None
        seconds = max(TOPS_MIN_SECONDS, TOPS_SHARE * spent)
        t = time.perf_counter()
        warning = None
        try:
            refresh_tops(self.index.db, self.index.collection.id, tenant=tenant, seconds=seconds)
        except Exception as exc:  # the write is done; only the short-query speed-up waits
            warning = f"BM25 tops not refreshed ({type(exc).__name__}: {exc})"
        return time.perf_counter() - t, warning

    def ingestor(
        self,
        on_progress: Callable[[str, int], None] | None,
        *,
        embed: bool = True,
        metadata: Mapping[str, Any] | None = None,
        boundary: Any = None,
        on_stage: Callable[[str, int], None] | None = None,
        parse: Mapping[str, Any] | None = None,
    ) -> Any:
        """The :class:`~ragline.ingest.pipeline.Ingestor` of the bound collection, under the
        settings (parse limits, versions kept, batch size)."""
        from .ingest.pipeline import Ingestor

        parse_options = {**self.index.settings.parse_options(), **(parse or {})}
        if boundary is not None:
            parse_options["boundary"] = boundary
        return Ingestor(
            self.index.db,
            self.index.collection,
            embedder=self.index.embedder,
            chunker=self.index.chunker,
            analyzer=self.index.analyzer,
            on_progress=on_progress,
            on_stage=on_stage,
            embed=embed,
            metadata=metadata,
            parse_options=parse_options,
            keep_versions=self.index.settings.keep_versions,
            batch_chunks=self.index.settings.ingest_batch_chunks,
        )
