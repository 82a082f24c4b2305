"""Make the index equal a folder: add new files, re-index changed ones (by content hash,
not mtime), delete removed ones, and move renamed ones without re-embedding.

A second run over an unchanged folder is a no-op with zero embedding calls. A file that
cannot be parsed any more keeps its previous version in the index (and is reported), so
a transient read error never deletes a document.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, LimitError, ParseError
from ..core.types import Principal
from ..parse.files import Boundary
from ..store.documents import delete_document, list_documents, rename_document
from .pipeline import Ingestor, IngestReport
from .sources import Skipped, Source, file_source, iter_files


@dataclass
class SyncReport(IngestReport):
    renamed: list[tuple[str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["renamed"] = [{"from": a, "to": b} for a, b in self.renamed]
        d["deleted"] = self.deleted
        return d


def sync_folder(
    ingestor: Ingestor,
    folder: Path,
    *,
    owner: Principal,
    on_progress: Callable[[str, int], None] | None = None,
    boundary: Boundary | None = None,
    max_files: int | None = None,
) -> SyncReport:
    """Sync ``folder``; every file is read inside ``boundary`` (default: the folder; its
    parse workers must get the same one, see :meth:`ragline.index.Index.sync`). Links
    inside the folder are never followed, so every document key lies under the folder and
    a file that disappears (or becomes a link) is deleted by the next sync."""
    root = Path(folder).expanduser().resolve()
    if not root.is_dir():
        raise ConfigError(
            f"sync needs a folder, and {folder} is not one; use `ragline ingest` for single files"
        )
    boundary = boundary or Boundary.of(root)
    prefix = str(root).rstrip("/") + "/"
    db, collection = ingestor.db, ingestor.collection
    existing = {
        d.doc_key: d
        for d in list_documents(db, collection, owner.tenant)
        if d.doc_key.startswith(prefix)
    }

    items: list[Source | Skipped | tuple[str, ParseError]] = []
    present: set[str] = set()
    for path, err in iter_files([root], boundary=boundary):
        if isinstance(err, Skipped):  # a link, not a document: nothing of it stays indexed
            items.append(err)
            continue
        present.add(str(path))  # an unreadable file keeps its last version
        if err is not None:
            items.append((str(path), err))
        else:
            try:
                items.append(file_source(path, boundary))
            except ParseError as exc:
                items.append((str(path), exc))

    if max_files is not None and len(present) > max_files:
        raise LimitError(
            f"{root} holds {len(present):,} files, more than the {max_files:,} one sync may "
            "read (setting max_sync_files); sync its sub-folders one by one"
        )
    report = SyncReport()
    vanished = {k: d for k, d in existing.items() if k not in present}
    by_hash: dict[str, list[str]] = {}
    for key, d in vanished.items():
        by_hash.setdefault(d.content_hash, []).append(key)
    to_ingest: list[Any] = []
    groups = tuple(sorted(set(owner.groups)))
    for item in items:
        if (
            isinstance(item, Source)
            and item.doc_key not in existing
            and by_hash.get(item.content_hash)
        ):
            old_key = by_hash[item.content_hash][0]
            old = vanished[old_key]
            try:
                same_title = item.load().title == old.title
            except ParseError:
                same_title = False
            if same_title and tuple(old.groups) == groups:
                rename_document(
                    db,
                    collection,
                    owner.tenant,
                    old_key,
                    item.doc_key,
                    item.source_uri,
                    item.modified_at,
                )
                by_hash[item.content_hash].pop(0)
                del vanished[old_key]
                report.renamed.append((old_key, item.doc_key))
                if on_progress:
                    on_progress(item.doc_key, 0)
                continue
        to_ingest.append(item)
    for key in sorted(vanished):
        delete_document(db, collection, owner.tenant, key)
        report.deleted.append(key)
    inner = ingestor.ingest(to_ingest, owner=owner)
    for name in ("added", "updated", "unchanged", "skipped", "failed"):
        setattr(report, name, getattr(inner, name))
    report.chunks, report.embedded, report.cached, report.seconds = (
        inner.chunks,
        inner.embedded,
        inner.cached,
        inner.seconds,
    )
    return report
