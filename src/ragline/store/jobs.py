"""Background ingest jobs: a row per job with its progress, visible to its tenant only."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .db import Database

_COLS = "id, kind, status, total, done, failed, detail, created_at, started_at, finished_at, tenant"


def _job(r: Any) -> dict[str, Any]:
    iso = lambda v: v.isoformat() if v else None  # noqa: E731
    return {
        "id": r[0],
        "kind": r[1],
        "status": r[2],
        "total": r[3],
        "done": r[4],
        "failed": r[5],
        **dict(r[6] or {}),
        "created_at": iso(r[7]),
        "started_at": iso(r[8]),
        "finished_at": iso(r[9]),
    }


def create_job(
    db: Database, tenant: str, kind: str, total: int, detail: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    with db.connection() as conn:
        r = conn.execute(
            f"INSERT INTO ingest_jobs (tenant, kind, total, detail) VALUES (%s, %s, %s, %s::jsonb) "
            f"RETURNING {_COLS}",
            (tenant, kind, total, json.dumps(dict(detail or {}))),
        ).fetchone()
    return _job(r)


def update_job(db: Database, job_id: int, **fields: Any) -> None:
    """Set columns (status, total, done, failed, started/finished via ``now=``) and merge
    ``detail``."""
    sets: list[str] = []
    params: list[Any] = []
    for col in ("status", "total", "done", "failed"):
        if col in fields:
            sets.append(f"{col} = %s")
            params.append(fields[col])
    for col in ("started_at", "finished_at"):
        if fields.get(col):
            sets.append(f"{col} = now()")
    if "detail" in fields:
        sets.append("detail = detail || %s::jsonb")
        params.append(json.dumps(fields["detail"], default=str))
    if not sets:
        return
    with db.connection() as conn:
        conn.execute(f"UPDATE ingest_jobs SET {', '.join(sets)} WHERE id = %s", [*params, job_id])


def get_job(db: Database, job_id: int, tenant: str) -> dict[str, Any] | None:
    with db.connection() as conn:
        r = conn.execute(
            f"SELECT {_COLS} FROM ingest_jobs WHERE id = %s AND tenant = %s", (job_id, tenant)
        ).fetchone()
    return _job(r) if r else None


def list_jobs(db: Database, tenant: str, limit: int = 50) -> list[dict[str, Any]]:
    with db.connection() as conn:
        rows = conn.execute(
            f"SELECT {_COLS} FROM ingest_jobs WHERE tenant = %s ORDER BY id DESC LIMIT %s",
            (tenant, limit),
        ).fetchall()
    return [_job(r) for r in rows]


def queue_counts(db: Database) -> dict[str, int]:
    """Jobs per status, all tenants together (the ``/metrics`` gauge)."""
    with db.connection() as conn:
        rows = conn.execute("SELECT status, count(*) FROM ingest_jobs GROUP BY status").fetchall()
    return {s: int(n) for s, n in rows}


def abandon_unfinished(db: Database, before: Any = None) -> int:
    """Jobs left queued or running by a server that stopped (created ``before`` this
    server started, so a sibling worker's new jobs are left alone): marked failed."""
    # no coalesce(%s, now()): Citus refuses non-immutable functions inside one
    since = "now()" if before is None else "%s"
    with db.connection() as conn:
        return int(
            conn.execute(
                "UPDATE ingest_jobs SET status = 'failed', finished_at = now(), "
                'detail = detail || \'{"error": "the server stopped before the job finished; upload again"}\'::jsonb '
                f"WHERE status IN ('queued', 'running') AND created_at < {since} "
                "AND NOT detail ? 'queued_tasks'",  # queue jobs outlive a server
                () if before is None else (before,),
            ).rowcount
        )
