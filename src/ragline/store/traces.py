"""Stored traces: one row per search / ask, read back only by the caller's tenant.

A trace row carries the caller's tenant and groups and the API key that made it. A trace
belongs to that key: a reader key reads only its own traces (a colleague's questions are
not its business), an admin key every trace of its tenant, the operator (no principal)
every trace. A reader also stops seeing a trace of its own once a document it mentions
is no longer readable to it (its groups changed). Another tenant cannot see, count or
probe a trace: an unknown id and another tenant's id look the same (None). Traces expire
after the retention period and are erased with the documents they mention (the
``documents_erase_traces`` trigger, migration 0021, and :func:`purge_for`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.trace import document_ids, new_trace_id
from ..core.types import Principal
from .db import Database


def save_trace(
    db: Database,
    collection_id: int,
    principal: Principal,
    trace: Mapping[str, Any],
    *,
    key_id: int | None = None,
) -> str:
    """Store ``trace`` as made by ``principal`` with API key ``key_id`` (None: no key)."""
    trace_id = str(trace.get("id") or new_trace_id())
    payload = {**trace, "id": trace_id}
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO traces (id, collection_id, tenant, groups, key_id, kind, question, "
            "document_ids, payload) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb)",
            (
                trace_id,
                collection_id,
                principal.tenant,
                sorted(set(principal.groups)),
                key_id,
                str(payload.get("kind", "search")),
                str(payload.get("question", "")),
                document_ids(payload),
                json.dumps(payload, default=str),
            ),
        )
    return trace_id


_STILL_READABLE = (
    "NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = ANY(traces.document_ids) "
    "AND d.groups <> '{}'::text[] AND NOT d.groups && %s::text[])"
)


def _scope(
    principal: Principal | None, admin: bool, key_id: int | None = None
) -> tuple[str, list[Any]]:
    """Same tenant; an admin sees all of it. A non-admin sees the traces of its own key
    (``key_id``; without a key: traces made without one, with exactly its groups) whose
    documents it may still read. ``principal`` None: every tenant's (the operator)."""
    if principal is None:
        return "true", []
    if admin:
        return "tenant = %s", [principal.tenant]
    groups = sorted(set(principal.groups))
    params: list[Any]
    if key_id is not None:
        own, params = "key_id = %s", [key_id]
    else:
        own, params = "key_id IS NULL AND groups = %s", [groups]
    return f"tenant = %s AND {own} AND {_STILL_READABLE}", [principal.tenant, *params, groups]


def get_trace(
    db: Database,
    collection_id: int,
    trace_id: str,
    principal: Principal | None,
    *,
    admin: bool = False,
    key_id: int | None = None,
) -> dict[str, Any] | None:
    cond, params = _scope(principal, admin, key_id)
    with db.connection() as conn:
        row = conn.execute(
            f"SELECT payload FROM traces WHERE id = %s AND collection_id = %s AND {cond}",
            [trace_id, collection_id, *params],
        ).fetchone()
    return dict(row[0]) if row else None


def recent_traces(
    db: Database,
    collection_id: int,
    principal: Principal | None,
    *,
    limit: int = 20,
    admin: bool = False,
    key_id: int | None = None,
) -> list[dict[str, Any]]:
    """Newest first: id, kind, question, created_at, mode, abstained, total ms.
    ``principal`` None lists every tenant's (the operator's CLI)."""
    where, params = _scope(principal, admin, key_id)
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT id, kind, question, created_at, tenant, payload->>'mode', "
            "payload->'generation'->>'abstained', payload->'timings_ms' "
            f"FROM traces WHERE collection_id = %s AND {where} ORDER BY created_at DESC, id LIMIT %s",
            [collection_id, *params, max(1, min(int(limit), 1000))],
        ).fetchall()
    out = []
    for r in rows:
        timings = r[7] or {}
        out.append(
            {
                "id": r[0],
                "kind": r[1],
                "question": r[2],
                "created_at": r[3].isoformat(),
                "tenant": r[4],
                "mode": r[5],
                "abstained": None if r[6] is None else r[6] == "true",
                "total_ms": round(sum(v for k, v in timings.items() if k != "total"), 2),
            }
        )
    return out


def purge_for(db: Database, document_ids_: Sequence[int], conn: Any = None) -> int:
    """Erase the traces that mention any of these documents."""
    if not document_ids_:
        return 0
    sql = "DELETE FROM traces WHERE document_ids && %s::bigint[]"
    if conn is not None:
        return int(conn.execute(sql, (list(document_ids_),)).rowcount)
    with db.connection() as c:
        return int(c.execute(sql, (list(document_ids_),)).rowcount)


def expire_traces(
    db: Database,
    retention_days: float,
    collection_id: int | None = None,
    tenant: str | None = None,
) -> int:
    """Delete traces older than the retention period (0 or less keeps them all); with
    ``collection_id`` and ``tenant`` only theirs, through the ``traces_recent`` index (the
    expired rows are all it reads)."""
    if retention_days <= 0:
        return 0
    where = "created_at < now() - make_interval(secs => %s)"
    params: list[Any] = [float(retention_days) * 86400]
    if collection_id is not None and tenant is not None:
        where += " AND collection_id = %s AND tenant = %s"
        params += [collection_id, tenant]
    with db.connection() as conn:
        return int(conn.execute(f"DELETE FROM traces WHERE {where}", params).rowcount)
