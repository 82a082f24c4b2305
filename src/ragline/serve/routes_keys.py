"""The API-key routes of the HTTP API (admin): create, list, revoke."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException

from .auth import Admin
from .schemas import KeyRequest

if TYPE_CHECKING:
    from .app import Server


def routes(srv: Server) -> APIRouter:
    """/v1/keys."""
    router = APIRouter()

    # -- keys -------------------------------------------------------------------------
    @router.post("/v1/keys", tags=["identity"], status_code=201, summary="Create a key (admin)")
    def new_key(req: KeyRequest, c: Admin) -> dict[str, Any]:
        key, rec = srv.admin.create_key(
            tenant=c.tenant,
            groups=req.groups,
            admin=req.admin,
            name=req.name,
            rate_limit=req.rate_limit,
        )
        return {"key": key, **srv.key(rec)}

    @router.get("/v1/keys", tags=["identity"], summary="The tenant's keys (admin)")
    def keys(c: Admin) -> dict[str, Any]:
        return {"keys": [srv.key(k) for k in srv.admin.list_keys(c.tenant)]}

    @router.delete("/v1/keys/{key_id}", tags=["identity"], summary="Revoke a key (admin)")
    def revoke(key_id: str, c: Admin) -> dict[str, Any]:
        n = srv.view.internal("key", key_id)
        if n is None or not (0 < n < 2**31) or not srv.admin.revoke_key(n, tenant=c.tenant):
            raise HTTPException(404, f"no key {key_id[:64]}")
        return {"revoked": key_id}

    return router
