"""Ingest jobs run in a background thread; progress and failures go to ``ingest_jobs``.

One failing file never stops a job: the ingest pipeline reports it and goes on, and the
job ends ``done`` with the failures listed (``failed`` counts them). A job whose whole run
raises (the database went away) ends ``failed`` with the error.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger("ragline.serve")
_PROCESS_START = datetime.now(UTC)


def _named(report: dict[str, Any], files: Sequence[tuple[str, Path]]) -> dict[str, Any]:
    """The report with each saved upload's server path replaced by its upload name, so
    no server path reaches the tenant."""
    names = {str(p): f"upload:{n}" for n, p in files}
    for f in report.get("failed", ()):
        f["source"] = names.get(f["source"], f["source"])
        for path, name in names.items():
            f["reason"] = f["reason"].replace(path, name)
    for s in report.get("skipped", ()):
        s["source"] = names.get(s["source"], s["source"])
    return report


class JobRunner:
    """A queue of ingest jobs worked by one thread (embedding already uses the cores)."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.admin = index.admin
        self._queue: queue.Queue[tuple[int, Callable[[int], dict[str, Any]]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.admin.abandon_unfinished(before=_PROCESS_START)
        self._thread = threading.Thread(target=self._work, name="ragline-jobs", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout)

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            job_id, run = item
            self.admin.update_job(job_id, status="running", started_at=True)
            try:
                result = run(job_id)
                self.admin.update_job(
                    job_id,
                    status="done",
                    finished_at=True,
                    failed=len(result.get("failed", ())),
                    detail={"report": result},
                )
            except Exception as exc:  # the job fails, the server goes on
                log.exception("ingest job %s failed", job_id)
                self.admin.update_job(
                    job_id,
                    status="failed",
                    finished_at=True,
                    detail={"error": f"{type(exc).__name__}: {exc}"},
                )

    def _progress(self, job_id: int) -> JobProgress:
        return JobProgress(self.admin, job_id)

    def submit_files(
        self,
        tenant: str,
        groups: Sequence[str],
        files: Sequence[tuple[str, Path]],
        *,
        metadata: dict[str, Any] | None = None,
        cleanup: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        """Ingest uploaded files (``(name, saved path)``); each becomes document
        ``upload:NAME`` of ``tenant``, so uploading the same name again updates it.
        ``cleanup`` runs when the job ends, whatever the outcome (it removes the files).
        With ``ingest_queue`` the files' bytes go to the database queue for ``ragline
        worker`` processes and the saved files are removed at once."""
        if self.index.settings.ingest_queue:
            from ..ingest.queue import enqueue_uploads

            try:
                data = [(n, p.read_bytes()) for n, p in files]
            finally:
                if cleanup is not None:
                    cleanup()
            return enqueue_uploads(self.index, tenant, groups, data, metadata=metadata)
        job = self.admin.create_job(tenant, "upload", len(files), {"files": [n for n, _ in files]})

        def run(job_id: int) -> dict[str, Any]:
            from ..core.errors import ParseError
            from ..ingest.sources import file_source

            def sources() -> Any:
                for name, path in files:
                    try:
                        src = file_source(path)
                    except ParseError as exc:
                        yield (name, exc)
                        continue
                    yield replace(src, doc_key=f"upload:{name}", source_uri=f"upload:{name}")

            try:
                report = self.index.ingest_sources(
                    sources(),
                    tenant=tenant,
                    groups=list(groups),
                    on_progress=(progress := self._progress(job_id)),
                    on_stage=progress.stage,
                    metadata=metadata,
                )
                progress.flush()
            finally:
                if cleanup is not None:
                    cleanup()
            return _named(dict(report.to_dict()), files)

        self._queue.put((job["id"], run))
        return job

    def submit_sync(
        self, tenant: str, groups: Sequence[str], folder: Path, *, max_files: int | None = None
    ) -> dict[str, Any]:
        """Make the tenant's documents under ``folder`` equal the folder, read as a server
        sync reads (strictly inside it: no links, hard links or other mounts). A folder
        with more than ``max_files`` files is refused before anything is written."""
        from itertools import islice

        from ..core.errors import LimitError
        from ..ingest.sources import iter_files
        from ..parse.files import Boundary

        found = iter_files([folder], boundary=Boundary.of(folder, strict=True))
        cap = None if max_files is None else max_files + 1
        total = sum(1 for _p, err in islice(found, cap) if err is None)
        if max_files is not None and total > max_files:
            raise LimitError(
                f"{folder} holds more than {max_files:,} files (setting max_sync_files); "
                "sync its sub-folders one by one"
            )
        if self.index.settings.ingest_queue:  # the workers read the folder at this path
            from ..ingest.queue import enqueue_sync

            return enqueue_sync(
                self.index, tenant, groups, folder, strict=True, max_files=max_files, total=total
            )
        job = self.admin.create_job(tenant, "sync", total, {"folder": str(folder)})

        def run(job_id: int) -> dict[str, Any]:
            report = self.index.sync(
                folder,
                tenant=tenant,
                groups=list(groups),
                on_progress=(progress := self._progress(job_id)),
                on_stage=progress.stage,
                strict=True,
                max_files=max_files,
            )
            progress.flush()
            return dict(report.to_dict())

        self._queue.put((job["id"], run))
        return job


PROGRESS_EVERY_S = 0.5
"""A job's progress row is written at most this often (and once more at the end)."""


class JobProgress:
    """A job's counts as they happen, in ``detail.progress``: documents ``parsed``, their
    ``chunks``, chunks ``embedded`` (or found in the cache), documents ``written``, and
    ``done`` (written, unchanged, skipped or failed: the ``done`` column). Called from the
    ingest thread and its writer thread."""

    def __init__(self, admin: Any, job_id: int) -> None:
        self.admin, self.job_id = admin, job_id
        self.counts = {"parsed": 0, "chunks": 0, "embedded": 0, "written": 0, "done": 0}
        self._lock = threading.Lock()
        self._last = 0.0

    def __call__(self, _name: str, chunks: int = 0, _pages: int = 0) -> None:
        if chunks:
            self.stage("written", 1)
        self.stage("done", 1)

    def stage(self, stage: str, n: int) -> None:
        with self._lock:
            self.counts[stage] = self.counts.get(stage, 0) + n
            now = time.monotonic()
            if now - self._last < PROGRESS_EVERY_S:
                return
            self._last = now
            self._write()

    def flush(self) -> None:
        with self._lock:
            self._write()

    def _write(self) -> None:
        self.admin.update_job(
            self.job_id, done=self.counts["done"], detail={"progress": dict(self.counts)}
        )
