"""The ingest queue in the database (``ingest_tasks``, ``ingest_files``; migration 0051).

Any number of workers on any machines share it with no coordinator of their own:

- :func:`claim` takes the oldest open task with ``FOR UPDATE SKIP LOCKED`` (two workers
  never take one task: the second skips the row the first holds, then sees it running),
  stamping it with the worker's name, a fresh heartbeat and one more attempt;
- :func:`beat` renews the heartbeat while the task runs; a task whose heartbeat is older
  than ``stale_after`` seconds is open again (its worker was killed or lost), and the next
  claim takes it over, with another attempt number;
- :func:`finish` closes a task only for the (worker, attempt) that holds it, so a worker
  that lost its task (it stalled past ``stale_after``) cannot overwrite the new holder's
  outcome; the job (``ingest_jobs``) ends when its last task does.

Every statement names the task's tenant, except the search for candidates, which spans
tenants (on Citus it fans out; the claim itself is routed to the tenant's shard).
Redoing a task is safe: ingest is idempotent (an unchanged document is recognized by its
content hash and neither re-parsed nor re-embedded), and each document is written in its
own transaction, so a killed worker leaves each document old or new, never half.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .db import Database

DEFAULT_STALE_AFTER_S = 30.0


@dataclass(frozen=True)
class Task:
    tenant: str
    id: int
    job_id: int | None
    collection: str
    kind: str
    groups: tuple[str, ...]
    spec: Mapping[str, Any]
    attempt: int
    worker: str


def enqueue(
    db: Database,
    *,
    tenant: str,
    collection: str,
    kind: str,
    groups: Sequence[str] = (),
    spec: Mapping[str, Any] | None = None,
    files: Sequence[tuple[str, str, str, bytes]] = (),
    job_id: int | None = None,
) -> int:
    """Queue one task (with ``files``: (name, doc key, source uri, bytes) each); its id."""
    with db.connection() as conn:
        task_id = conn.execute(
            "INSERT INTO ingest_tasks (tenant, job_id, collection, kind, groups, spec) "
            "VALUES (%s, %s, %s, %s, %s, %s::jsonb) RETURNING id",
            (tenant, job_id, collection, kind, list(groups), json.dumps(dict(spec or {}))),
        ).fetchone()[0]
        if files:
            with (
                conn.cursor() as cur,
                cur.copy(
                    "COPY ingest_files (tenant, task_id, ordinal, name, doc_key, source_uri, content) "
                    "FROM STDIN"
                ) as cp,
            ):
                for i, (name, key, uri, data) in enumerate(files):
                    cp.write_row((tenant, task_id, i, name, key, uri, data))
    return int(task_id)


_OPEN = (
    "(status = 'queued' OR (status = 'running' "
    "AND heartbeat_at < now() - make_interval(secs => %s)))"
)


def claim(db: Database, worker: str, *, stale_after: float = DEFAULT_STALE_AFTER_S) -> Task | None:
    """The oldest open task, now held by ``worker``; None when there is none."""
    with db.connection() as conn:
        candidates = conn.execute(
            f"SELECT tenant, id FROM ingest_tasks WHERE status IN ('queued', 'running') "
            f"AND {_OPEN} ORDER BY id LIMIT 32",
            (stale_after,),
        ).fetchall()
    for tenant, task_id in candidates:
        with db.connection() as conn:
            row = conn.execute(
                f"SELECT id FROM ingest_tasks WHERE tenant = %s AND id = %s AND {_OPEN} "
                "FOR UPDATE SKIP LOCKED",
                (tenant, task_id, stale_after),
            ).fetchone()
            if row is None:
                continue  # another worker holds or took it
            r = conn.execute(
                "UPDATE ingest_tasks SET status = 'running', worker = %s, attempts = attempts + 1, "
                "heartbeat_at = now(), claimed_at = now() WHERE tenant = %s AND id = %s "
                "RETURNING job_id, collection, kind, groups, spec, attempts",
                (worker, tenant, task_id),
            ).fetchone()
            if r[0] is not None:
                conn.execute(
                    "UPDATE ingest_jobs SET status = 'running', started_at = now() "
                    "WHERE tenant = %s AND id = %s AND status = 'queued'",
                    (tenant, r[0]),
                )
        return Task(tenant, int(task_id), r[0], r[1], r[2], tuple(r[3]), r[4] or {}, r[5], worker)
    return None


def beat(db: Database, task: Task) -> bool:
    """Renew ``task``'s heartbeat; False when the worker no longer holds it."""
    with db.connection() as conn:
        n = conn.execute(
            "UPDATE ingest_tasks SET heartbeat_at = now() WHERE tenant = %s AND id = %s "
            "AND status = 'running' AND worker = %s AND attempts = %s",
            (task.tenant, task.id, task.worker, task.attempt),
        ).rowcount
    return n == 1


def files_of(db: Database, task: Task) -> list[tuple[str, str, str, bytes]]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT name, doc_key, source_uri, content FROM ingest_files "
            "WHERE tenant = %s AND task_id = %s ORDER BY ordinal",
            (task.tenant, task.id),
        ).fetchall()
    return [(r[0], r[1], r[2], bytes(r[3])) for r in rows]


def progress(db: Database, task: Task, done: int = 1) -> None:
    if task.job_id is None:
        return
    with db.connection() as conn:
        conn.execute(
            "UPDATE ingest_jobs SET done = least(done + %s, total) WHERE tenant = %s AND id = %s",
            (done, task.tenant, task.job_id),
        )


def finish(db: Database, task: Task, *, ok: bool, report: Mapping[str, Any]) -> bool:
    """Close ``task`` (done or failed) if ``task``'s worker and attempt still hold it; its
    files go. The job ends when its last task does. False: the task had been taken over."""
    with db.connection() as conn:
        if task.job_id is not None:  # one finisher at a time per job
            conn.execute(
                "SELECT id FROM ingest_jobs WHERE tenant = %s AND id = %s FOR UPDATE",
                (task.tenant, task.job_id),
            )
        n = conn.execute(
            "UPDATE ingest_tasks SET status = %s, finished_at = now(), report = %s::jsonb "
            "WHERE tenant = %s AND id = %s AND status = 'running' AND worker = %s AND attempts = %s",
            (
                "done" if ok else "failed",
                json.dumps(dict(report), default=str),
                task.tenant,
                task.id,
                task.worker,
                task.attempt,
            ),
        ).rowcount
        if n != 1:
            return False
        conn.execute(
            "DELETE FROM ingest_files WHERE tenant = %s AND task_id = %s", (task.tenant, task.id)
        )
        if task.job_id is not None:
            _close_job(conn, task.tenant, task.job_id)
    return True


def _close_job(conn: Any, tenant: str, job_id: int) -> None:
    rows = conn.execute(
        "SELECT status, report FROM ingest_tasks WHERE tenant = %s AND job_id = %s",
        (tenant, job_id),
    ).fetchall()
    if any(s not in ("done", "failed") for s, _ in rows):
        return
    merged: dict[str, Any] = {}
    for _, rep in rows:
        for k, v in (rep or {}).items():
            if isinstance(v, list):
                merged.setdefault(k, []).extend(v)
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                merged[k] = merged.get(k, 0) + v
            else:
                merged.setdefault(k, v)
    errors = [rep.get("error") for s, rep in rows if s == "failed" and rep]
    status = "failed" if errors and len(errors) == len(rows) else "done"
    detail: dict[str, Any] = {"report": merged}
    if errors:
        detail["error"] = "; ".join(str(e) for e in errors if e)
    conn.execute(
        "UPDATE ingest_jobs SET status = %s, finished_at = now(), failed = %s, "
        "detail = detail || %s::jsonb WHERE tenant = %s AND id = %s",
        (
            status,
            len(merged.get("failed", ())) + len(errors),
            json.dumps(detail, default=str),
            tenant,
            job_id,
        ),
    )


def queue_status(db: Database) -> dict[str, int]:
    """Tasks per status, all tenants (``ragline status``, ``/metrics``)."""
    with db.connection() as conn:
        rows = conn.execute("SELECT status, count(*) FROM ingest_tasks GROUP BY status").fetchall()
    return {s: int(n) for s, n in rows}
