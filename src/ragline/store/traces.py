"""Stored traces: one row per search / ask, read back only by the caller's tenant.

A trace row carries the caller's tenant and groups; reading one requires the same tenant
(and, for a non-admin caller, the same groups), so another tenant cannot see, count or
probe it: an unknown id and another tenant's id look the same (None). Traces expire after
the retention period and are erased with the documents they mention (:func:`purge_for`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.trace import document_ids, new_trace_id
from ..core.types import Principal
from .db import Database


def save_trace(
    db: Database, collection_id: int, principal: Principal, trace: Mapping[str, Any]
) -> str:
    trace_id = str(trace.get("id") or new_trace_id())
    payload = {**trace, "id": trace_id}
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO traces (id, collection_id, tenant, groups, kind, question, document_ids, payload) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb)",
            (
                trace_id,
                collection_id,
                principal.tenant,
                sorted(set(principal.groups)),
                str(payload.get("kind", "search")),
                str(payload.get("question", "")),
                document_ids(payload),
                json.dumps(payload, default=str),
            ),
        )
    return trace_id


def _scope(principal: Principal | None, admin: bool) -> tuple[str, list[Any]]:
    """Same tenant; a non-admin also only sees traces made with exactly its groups.
    ``principal`` None: every tenant's (the operator at the command line)."""
    if principal is None:
        return "true", []
    if admin:
        return "tenant = %s", [principal.tenant]
    return "tenant = %s AND groups = %s", [principal.tenant, sorted(set(principal.groups))]


def get_trace(
    db: Database,
    collection_id: int,
    trace_id: str,
    principal: Principal | None,
    *,
    admin: bool = False,
) -> dict[str, Any] | None:
    cond, params = _scope(principal, admin)
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
) -> list[dict[str, Any]]:
    """Newest first: id, kind, question, created_at, mode, abstained, total ms.
    ``principal`` None lists every tenant's (the operator's CLI)."""
    where, params = _scope(principal, admin)
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


def expire_traces(db: Database, retention_days: float) -> int:
    """Delete traces older than the retention period (0 or less keeps them all)."""
    if retention_days <= 0:
        return 0
    with db.connection() as conn:
        return int(
            conn.execute(
                "DELETE FROM traces WHERE created_at < now() - make_interval(secs => %s)",
                (float(retention_days) * 86400,),
            ).rowcount
        )
