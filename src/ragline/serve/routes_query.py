"""The query routes of the HTTP API: who am I, search, ask (JSON or server-sent events), the agent's sources, traces."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import StreamingResponse

from ..core.errors import RaglineError
from ..core.requests import AskRequest as Ask
from ..core.requests import SearchRequest as Search
from ..core.trace import answer_dict
from ..core.types import Answer
from .auth import Who
from .public import neutralize
from .schemas import AskRequest, SearchRequest

log = logging.getLogger("ragline.serve")

if TYPE_CHECKING:
    from .app import Server


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


def routes(srv: Server) -> APIRouter:
    """/v1/me, /v1/search, /v1/ask, /v1/sources, /v1/traces."""
    router = APIRouter()
    index = srv.index

    @router.get("/v1/me", tags=["identity"], summary="The caller's tenant, groups and role")
    def me(c: Who) -> dict[str, Any]:
        return {
            "tenant": c.tenant,
            "groups": list(c.groups),
            "admin": c.admin,
            "key_prefix": c.key.prefix,
            "generator": index.settings.generator,
        }

    # -- query ------------------------------------------------------------------------
    @router.post("/v1/search", tags=["query"], summary="BM25 + vector search, fused with RRF")
    def search(req: SearchRequest, c: Who) -> dict[str, Any]:
        return srv.search(
            c,
            Search(
                req.query,
                k=req.k,
                mode=req.mode,
                filters=req.filters,
                include_history=req.include_history,
            ),
        )

    @router.post(
        "/v1/ask",
        tags=["query"],
        summary="A cited answer (JSON, or server-sent events with stream=true)",
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    def ask(req: AskRequest, c: Who, request: Request) -> Any:
        stream = req.stream or "text/event-stream" in request.headers.get("accept", "")
        ask = Ask(
            req.question,
            k=req.k,
            mode=req.mode,
            filters=req.filters,
            history=tuple(t.model_dump() for t in req.history),
            agent=req.agent,
            sources=req.sources,
        )
        items = srv.ask_items(c, ask, stream=stream)
        if not stream:
            answer = [i for i in items if isinstance(i, Answer)][-1]
            return srv.view.answer(answer_dict(answer), c.tenant)

        def events() -> Iterator[str]:
            try:
                for item in items:
                    if isinstance(item, Answer):
                        yield _sse("answer", srv.view.answer(answer_dict(item), c.tenant))
                    elif item:
                        yield _sse("delta", {"text": neutralize(item)})
            except RaglineError as exc:
                yield _sse("error", {"message": str(exc)})
            except Exception as exc:  # the stream has started: report in-band
                log.exception("ask stream failed")
                yield _sse("error", {"message": f"internal error: {type(exc).__name__}"})

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @router.get("/v1/sources", tags=["query"], summary="The sources the caller's agent may use")
    def sources(c: Who) -> dict[str, Any]:
        return {"sources": srv.index.sources(tenant=c.tenant, groups=c.groups)}

    @router.get("/v1/traces", tags=["traces"], summary="The caller's recent traces")
    def traces(c: Who, limit: int = 20) -> dict[str, Any]:
        if not 1 <= limit <= 200:
            raise HTTPException(422, "limit must be between 1 and 200")
        items = index.traces(
            tenant=c.tenant, groups=c.groups, limit=limit, admin=c.admin, key_id=c.key.id
        )
        return {"traces": items}

    @router.get("/v1/traces/{trace_id}", tags=["traces"], summary="One trace, every stage")
    def trace(trace_id: str, c: Who) -> dict[str, Any]:
        t = (
            index.trace(
                trace_id[:64], tenant=c.tenant, groups=c.groups, admin=c.admin, key_id=c.key.id
            )
            if "\x00" not in trace_id
            else None
        )
        if t is None:
            raise HTTPException(404, f"no trace {trace_id[:64]!r}")
        out = dict(srv.view.out(t, c.tenant))
        if isinstance(out.get("generation"), dict):
            out["generation"] = srv.view.answer(out["generation"], c.tenant)
        return out

    return router
