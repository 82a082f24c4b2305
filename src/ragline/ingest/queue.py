"""Ingest workers: ``ragline worker`` processes that take ingest tasks from the database.

Uploads (``ragline serve`` with ``ingest_queue = true``), folder syncs and ``ragline ingest
--enqueue`` put tasks in the queue (:mod:`ragline.store.queue`) instead of ingesting in the
process that asked; any number of workers, on any machines that reach the database, take
them one at a time. A worker beats while it works (every ``stale_after / 4`` seconds); a
killed worker's task is taken over by the next claim once its heartbeat is ``stale_after``
old and redone from the start, which finds the documents the killed worker finished
unchanged (nothing parsed or embedded again) and writes the rest.

A file task carries the files' bytes in the database, so the worker needs no access to the
enqueuing machine; a sync task names a folder, which must be readable by the worker at the
same path (a shared volume).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..store import queue as q

log = logging.getLogger("ragline.worker")

FILES_PER_TASK = 16
"""Files per task of ``ragline ingest --enqueue``: small enough that several workers share
a folder, large enough that a task's embedding batches stay full."""


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def enqueue_paths(
    index: Any,
    paths: Iterable[str | Path],
    *,
    tenant: str = "default",
    groups: Sequence[str] = (),
    files_per_task: int = FILES_PER_TASK,
) -> dict[str, Any]:
    """Queue the files under ``paths`` (their bytes, keyed as an inline ingest keys them) in
    tasks of ``files_per_task``; returns the job."""
    from ..store.jobs import create_job
    from .sources import doc_key_for, iter_files

    found = [p for p, err in iter_files(list(paths)) if err is None]
    job = create_job(index.db, tenant, "ingest", len(found), {"queued_tasks": True})
    for start in range(0, max(len(found), 1), max(files_per_task, 1)):
        chunk = found[start : start + files_per_task]
        if not chunk and found:
            break
        files = [(p.name, doc_key_for(p), doc_key_for(p), Path(p).read_bytes()) for p in chunk]
        q.enqueue(
            index.db,
            tenant=tenant,
            collection=index.settings.collection,
            kind="files",
            groups=groups,
            files=files,
            job_id=job["id"],
        )
    return job


def enqueue_uploads(
    index: Any,
    tenant: str,
    groups: Sequence[str],
    files: Sequence[tuple[str, bytes]],
    *,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Queue uploaded files (``(name, bytes)``) as documents ``upload:NAME``; the job."""
    from ..store.jobs import create_job

    job = create_job(
        index.db,
        tenant,
        "upload",
        len(files),
        {"files": [n for n, _ in files], "queued_tasks": True},
    )
    q.enqueue(
        index.db,
        tenant=tenant,
        collection=index.settings.collection,
        kind="files",
        groups=groups,
        spec={"metadata": metadata or {}},
        files=[(n, f"upload:{n}", f"upload:{n}", data) for n, data in files],
        job_id=job["id"],
    )
    return job


def enqueue_sync(
    index: Any,
    tenant: str,
    groups: Sequence[str],
    folder: str | Path,
    *,
    strict: bool = False,
    max_files: int | None = None,
    total: int = 0,
) -> dict[str, Any]:
    from ..store.jobs import create_job

    job = create_job(index.db, tenant, "sync", total, {"folder": str(folder), "queued_tasks": True})
    q.enqueue(
        index.db,
        tenant=tenant,
        collection=index.settings.collection,
        kind="sync",
        groups=groups,
        spec={"folder": str(folder), "strict": strict, "max_files": max_files},
        job_id=job["id"],
    )
    return job


def enqueue_vectors(
    index: Any, tenant: str, groups: Sequence[str], records: Sequence[dict[str, Any]]
) -> int:
    """Queue documents with precomputed vectors (the records of
    :meth:`ragline.Index.ingest_vectors`) as one task; its id."""
    data = "\n".join(json.dumps(r) for r in records).encode()
    return q.enqueue(
        index.db,
        tenant=tenant,
        collection=index.settings.collection,
        kind="vectors",
        groups=groups,
        files=[("records.jsonl", "", "", data)],
    )


class Worker:
    """Takes tasks until stopped (or, with ``drain``, until the queue is empty).

    ``open_index(collection)`` gives the :class:`ragline.Index` a task writes into (the
    CLI opens one from the settings; tests pass their own embedder through it)."""

    def __init__(
        self,
        db: Any,
        open_index: Callable[[str], Any],
        *,
        name: str | None = None,
        stale_after: float = q.DEFAULT_STALE_AFTER_S,
        poll_s: float = 1.0,
    ) -> None:
        self.db = db
        self.open_index = open_index
        self.name = name or worker_name()
        self.stale_after = stale_after
        self.poll_s = poll_s
        self._indexes: dict[str, Any] = {}
        self._stop = threading.Event()
        self.tasks_done = 0

    def stop(self) -> None:
        self._stop.set()

    def run(self, *, drain: bool = False, max_tasks: int | None = None) -> int:
        """Work tasks; returns how many were finished by this worker."""
        while not self._stop.is_set():
            task = q.claim(self.db, self.name, stale_after=self.stale_after)
            if task is None:
                if drain:
                    break
                self._stop.wait(self.poll_s)
                continue
            self.run_task(task)
            if max_tasks is not None and self.tasks_done >= max_tasks:
                break
        return self.tasks_done

    def run_task(self, task: q.Task) -> bool:
        lost = threading.Event()
        done = threading.Event()

        def heartbeat() -> None:
            while not done.wait(max(self.stale_after / 4, 0.05)):
                try:
                    if not q.beat(self.db, task):
                        lost.set()
                        return
                except Exception:  # noqa: BLE001 - a missed beat is retried next period
                    log.warning("heartbeat of task %s failed", task.id, exc_info=True)

        beater = threading.Thread(target=heartbeat, name=f"beat-{task.id}", daemon=True)
        beater.start()
        try:
            report, ok = self._execute(task), True
        except Exception as exc:  # the task fails, the worker goes on
            log.exception("ingest task %s failed", task.id)
            report, ok = {"error": f"{type(exc).__name__}: {exc}"}, False
        finally:
            done.set()
            beater.join()
        if lost.is_set():
            log.warning("task %s was taken over by another worker; its outcome is theirs", task.id)
        finished = q.finish(self.db, task, ok=ok, report=report)
        if finished:
            self.tasks_done += 1
        return finished

    def _index(self, collection: str) -> Any:
        if collection not in self._indexes:
            self._indexes[collection] = self.open_index(collection)
        return self._indexes[collection]

    def _execute(self, task: q.Task) -> dict[str, Any]:
        index = self._index(task.collection)

        def on_progress(*_a: Any) -> None:
            q.progress(self.db, task)

        if task.kind == "sync":
            spec = task.spec
            report = index.sync(
                spec["folder"],
                tenant=task.tenant,
                groups=list(task.groups),
                on_progress=on_progress,
                strict=bool(spec.get("strict")),
                max_files=spec.get("max_files"),
            )
            return dict(report.to_dict())
        files = q.files_of(self.db, task)
        if task.kind == "vectors":
            records = [json.loads(line) for f in files for line in f[3].splitlines() if line]
            report = index.ingest_vectors(records, tenant=task.tenant, groups=list(task.groups))
            return dict(report.to_dict())
        return self._ingest_files(index, task, files, on_progress)

    def _ingest_files(
        self, index: Any, task: q.Task, files: Sequence[tuple[str, str, str, bytes]], on_progress
    ) -> dict[str, Any]:
        from ..core.errors import ParseError
        from .sources import file_source

        with tempfile.TemporaryDirectory(prefix="ragline-task-") as tmp:
            if os.geteuid() == 0:
                os.chmod(tmp, 0o755)

            def sources() -> Iterable[Any]:
                for i, (name, key, uri, data) in enumerate(files):
                    path = Path(tmp) / str(i) / Path(name).name
                    path.parent.mkdir()
                    path.write_bytes(data)
                    try:
                        src = file_source(path)
                    except ParseError as exc:
                        yield (uri, exc)
                        continue
                    yield replace(src, doc_key=key, source_uri=uri, path=path)

            report = index.ingest_sources(
                sources(),
                tenant=task.tenant,
                groups=list(task.groups),
                on_progress=on_progress,
                metadata=task.spec.get("metadata") or None,
            )
            out = dict(report.to_dict())
        names = {
            str(Path(tmp) / str(i) / Path(n).name): u for i, (n, _k, u, _d) in enumerate(files)
        }
        for f in out.get("failed", ()):
            f["source"] = names.get(f["source"], f["source"])
            for path, uri in names.items():
                f["reason"] = f["reason"].replace(path, uri)
        return out


def wait_for_job(db: Any, tenant: str, job_id: int, timeout: float = 600.0) -> dict[str, Any]:
    """Block until a job ends (``ragline ingest --enqueue --wait``); the job."""
    from ..store.jobs import get_job

    deadline = time.monotonic() + timeout
    while True:
        job = get_job(db, job_id, tenant)
        if job is None or job["status"] in ("done", "failed") or time.monotonic() > deadline:
            return job or {}
        time.sleep(0.5)
