"""Build a new index version of a collection from its stored documents, beside the live one.

The new version is a collection of its own (``NAME--vK``): the stored parsed documents of
the live version are chunked, embedded and indexed into it by the normal ingest pipeline,
per tenant and group set, while the live version keeps serving. The old versions the live
version keeps (``keep_versions``) are rebuilt too, with their version numbers and their
permissions, so ``include_history`` finds the same history after ``index activate``. A killed build resumes:
documents already in the new version with the same content are skipped, and chunk texts
already embedded by that model come from the embedding cache. Nothing in the live
version is written.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from .core.errors import ConfigError, NotFoundError
from .ingest.pipeline import parsed_from_json
from .ingest.sources import Source
from .store import versions as vs


def _spec(
    index: Any, embedder: str | None, chunking: str | None, language: str | None
) -> dict[str, str]:
    live = index.collection
    from .chunk import strategy_of

    return {
        "embedder": embedder or live.embedder,
        "chunking": chunking or strategy_of(live.chunker),
        "language": language or index.analyzer.default,
    }


def _live_documents(index: Any) -> list[tuple[Any, ...]]:
    with index.db.connection() as conn:
        return conn.execute(
            "SELECT tenant, groups, doc_key, source_uri, content_hash, modified_at, metadata, "
            "content FROM documents WHERE collection_id = %s AND is_current "
            "ORDER BY tenant, groups, doc_key",
            (index.collection.id,),
        ).fetchall()


def _source(row: tuple[Any, ...]) -> Source | tuple[str, Exception]:
    tenant, groups, key, uri, digest, modified, meta, content = row
    meta = dict(meta or {})
    if content is not None:
        return Source(
            doc_key=key,
            source_uri=uri,
            content_hash=digest,
            load=lambda: parsed_from_json(content, meta),
            modified_at=modified,
            metadata=meta,
        )
    path = Path(uri)
    if path.is_file():  # ingested before parsed documents were stored: parse the source again
        from dataclasses import replace

        from .ingest.sources import file_source

        src = file_source(path)
        if src.content_hash == digest:
            return replace(src, doc_key=key, metadata=meta)
    return (
        key,
        ConfigError(
            f"{key}: no stored parsed text (ingested by an older ragline) and the source file "
            "is gone or changed; ingest it again, then rebuild"
        ),
    )


def build_version(
    index: Any,
    *,
    embedder: str | None = None,
    chunking: str | None = None,
    language: str | None = None,
    on_progress: Callable[[str, int], None] | None = None,
) -> dict[str, Any]:
    """Build (or resume) a version of ``index``'s collection with ``embedder`` /
    ``chunking`` / analyzer ``language`` (defaults: the live version's); returns the
    version and a report."""
    from .index import Index

    if index.collection is None:
        raise NotFoundError(
            f"collection {index.settings.collection!r} is empty: ingest documents before "
            "building another index version of it"
        )
    name = index.settings.collection
    spec = _spec(index, embedder, chunking, language)
    pending = vs.resumable(index.db, name, spec)
    number = pending.version if pending else vs.new_version(index.db, name, spec)
    physical = vs.version_collection_name(name, number)
    target = Index(
        index.settings.model_copy(
            update={
                "collection": physical,
                "embedder": spec["embedder"] if embedder else "auto",
                "chunking": spec["chunking"],
                "language": spec["language"],
                "traces": False,
            }
        ),
        embedder=None if embedder else index.embedder,
    )
    try:
        if target.collection is None:
            raise ConfigError(f"could not create collection {physical!r} for the new version")
        vs.record_version(index.db, name, number, target.collection.id, spec)
        totals: dict[str, Any] = {
            "added": 0,
            "unchanged": 0,
            "updated": 0,
            "deleted": 0,
            "failed": [],
            "embedded": 0,
            "cached": 0,
            "chunks": 0,
        }
        group: list[tuple[Any, ...]] = []
        owner: tuple[str, tuple[str, ...]] | None = None

        def flush() -> None:
            if not group or owner is None:
                return
            report = target.ingest_sources(
                (_source(r) for r in group),
                tenant=owner[0],
                groups=list(owner[1]),
                on_progress=on_progress,
            )
            for key in ("added", "unchanged", "updated"):
                totals[key] += len(getattr(report, key))
            totals["failed"] += [f.__dict__ for f in report.failed]
            for key in ("embedded", "cached", "chunks"):
                totals[key] += getattr(report, key)

        live_keys: set[tuple[str, str]] = set()
        for row in _live_documents(index):
            who = (row[0], tuple(row[1]))
            live_keys.add((row[0], row[2]))
            if who != owner:
                flush()
                group, owner = [], who
            group.append(row)
        flush()
        totals["deleted"] = _drop_deleted(target, live_keys)
        history = _copy_history(index, target, on_progress)
        totals["history"] = history["copied"]
        totals["failed"] += history["failed"]
        if not totals["failed"]:
            vs.mark_built(index.db, name, number)
        state = vs.get_version(index.db, name, number)
        return {"version": number, "state": state.state, "collection": physical, **totals}
    finally:
        target.close()


def _drop_deleted(target: Any, live_keys: set[tuple[str, str]]) -> int:
    """Documents the new version holds that the live version no longer has."""
    from .store.documents import delete_document

    with target.db.connection() as conn:
        rows = conn.execute(
            "SELECT DISTINCT tenant, doc_key FROM documents WHERE collection_id = %s",
            (target.collection.id,),
        ).fetchall()
    n = 0
    for tenant, key in rows:
        if (tenant, key) not in live_keys:
            n += delete_document(target.db, target.collection, tenant, key)
    return n


def _copy_history(index: Any, target: Any, on_progress: Any) -> dict[str, Any]:
    """Make the target's document history equal the live one's: the live version numbers
    on current documents, the old versions the live version keeps rebuilt (each ingested
    under a scratch key by the normal pipeline, then made historical under its own key and
    number), old versions the live one no longer keeps dropped."""
    live = vs.document_versions(index.db, index.collection)
    have = vs.document_versions(target.db, target.collection)
    vs.renumber_current(target.db, target.collection, live, have)
    wanted = {k: r for k, r in live.items() if not r["is_current"]}
    present = {k for k, r in have.items() if not r["is_current"]}
    vs.drop_versions(target.db, target.collection, [have[k]["id"] for k in present - set(wanted)])
    todo = sorted(set(wanted) - present)
    out: dict[str, Any] = {"copied": 0, "failed": []}
    by_owner: dict[tuple[str, tuple[str, ...]], list[tuple[str, str, int]]] = {}
    for k in todo:
        by_owner.setdefault((k[0], tuple(wanted[k]["groups"])), []).append(k)
    for (tenant, groups), keys in by_owner.items():
        sources = []
        for t, key, version in keys:
            row = wanted[t, key, version]
            if row["content"] is None:
                out["failed"].append(
                    {"source": key, "reason": f"version {version} has no stored parsed text"}
                )
                continue
            meta = dict(row["metadata"] or {})
            content = row["content"]
            sources.append(
                Source(
                    doc_key=vs.history_key(key, version),
                    source_uri=row["source_uri"],
                    content_hash=row["content_hash"],
                    load=partial(parsed_from_json, content, meta),
                    modified_at=row["modified_at"],
                    metadata=meta,
                )
            )
        report = target.ingest_sources(
            sources, tenant=tenant, groups=list(groups), on_progress=on_progress
        )
        out["failed"] += [f.__dict__ for f in report.failed]
        for t, key, version in keys:
            if vs.adopt_history(
                target.db, target.collection, t, key, version, wanted[t, key, version]
            ):
                out["copied"] += 1
    return out
