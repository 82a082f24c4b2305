"""Ingest jobs run in a background thread; progress and failures go to ``ingest_jobs``.

One failing file never stops a job: the ingest pipeline reports it and goes on, and the
job ends ``done`` with the failures listed (``failed`` counts them). A job whose whole run
raises (the database went away) ends ``failed`` with the error.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..store.jobs import abandon_unfinished, create_job, update_job

log = logging.getLogger("ragline.serve")
_PROCESS_START = datetime.now(UTC)


class JobRunner:
    """A queue of ingest jobs worked by one thread (embedding already uses the cores)."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self._queue: queue.Queue[tuple[int, Callable[[int], dict[str, Any]]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        abandon_unfinished(self.index.db, before=_PROCESS_START)
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
            update_job(self.index.db, job_id, status="running", started_at=True)
            try:
                result = run(job_id)
                update_job(
                    self.index.db,
                    job_id,
                    status="done",
                    finished_at=True,
                    failed=len(result.get("failed", ())),
                    detail={"report": result},
                )
            except Exception as exc:  # the job fails, the server goes on
                log.exception("ingest job %s failed", job_id)
                update_job(
                    self.index.db,
                    job_id,
                    status="failed",
                    finished_at=True,
                    detail={"error": f"{type(exc).__name__}: {exc}"},
                )

    def _progress(self, job_id: int) -> Callable[..., None]:
        done = 0

        def on_progress(_name: str, _chunks: int, _pages: int = 0) -> None:
            nonlocal done
            done += 1
            update_job(self.index.db, job_id, done=done)

        return on_progress

    def submit_files(
        self,
        tenant: str,
        groups: Sequence[str],
        files: Sequence[tuple[str, Path]],
        *,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Ingest uploaded files (``(name, saved path)``); each becomes document
        ``upload:NAME`` of ``tenant``, so uploading the same name again updates it."""
        job = create_job(
            self.index.db, tenant, "upload", len(files), {"files": [n for n, _ in files]}
        )

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

            report = self.index.ingest_sources(
                sources(),
                tenant=tenant,
                groups=list(groups),
                on_progress=self._progress(job_id),
                metadata=metadata,
            )
            return dict(report.to_dict())

        self._queue.put((job["id"], run))
        return job

    def submit_sync(self, tenant: str, groups: Sequence[str], folder: Path) -> dict[str, Any]:
        """Make the tenant's documents under ``folder`` equal the folder."""
        from ..ingest.sources import iter_files

        total = sum(1 for _p, err in iter_files([folder]) if err is None)
        job = create_job(self.index.db, tenant, "sync", total, {"folder": str(folder)})

        def run(job_id: int) -> dict[str, Any]:
            report = self.index.sync(
                folder, tenant=tenant, groups=list(groups), on_progress=self._progress(job_id)
            )
            return dict(report.to_dict())

        self._queue.put((job["id"], run))
        return job
