"""The HTTP API: FastAPI over one :class:`~ragline.index.Index`.

Every request but ``/health``, ``/ready`` and the page's static files needs an API key;
the key's tenant and groups become the permission filter inside both retrieval legs, and
every lookup by id (documents, traces, jobs) is scoped to the caller's tenant, so another
tenant's object and a missing one give the same 404. Errors have one shape,
``{"error": {"message", "type", "code"}}`` (the OpenAI one, so chat clients show them).
"""

from __future__ import annotations

import hmac
import json
import logging
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials
from fastapi.staticfiles import StaticFiles

from ..core.errors import AccessError, ConfigError, LimitError, NotFoundError, RaglineError
from ..core.requests import AskRequest as Ask
from ..core.requests import SearchRequest as Search
from ..core.trace import search_dict
from ..core.types import Answer
from . import routes_documents, routes_keys, routes_query
from .auth import Caller, RateLimiter, retry_after
from .folders import SyncRoots, Uploads
from .guards import Guard, security_headers
from .ids import IdCodec
from .jobs import JobRunner
from .metrics import Metrics
from .public import PublicView

log = logging.getLogger("ragline.serve")
STATIC = Path(__file__).parent / "static"


def _error(status: int, message: str, kind: str, headers: Mapping[str, str] | None = None) -> Any:
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": status}},
        status_code=status,
        headers=headers,
    )


_KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    503: "unavailable_error",
}


class Server:
    """What the routes share: the index, keys, rate limits, jobs and metrics."""

    def __init__(
        self,
        index: Any,
        *,
        sync_roots: tuple[str | Path, ...] = (),
        upload_dir: Path | None = None,
        rate_limit: int | None = None,
    ) -> None:
        self.index = index
        self.sync_roots = SyncRoots(sync_roots)
        self.upload_dir = Path(upload_dir or tempfile.mkdtemp(prefix="ragline-uploads-"))
        self.uploads = Uploads(self.upload_dir)
        self.rate_limit = rate_limit or index.settings.rate_limit
        self.limiter = RateLimiter()
        self.jobs = JobRunner(index)
        self.admin = index.admin
        self.metrics = Metrics(self.admin.queue_counts)
        self.view = PublicView(IdCodec(self.admin.installation_secret()), self.sync_roots.roots)

    # -- identity -------------------------------------------------------------------
    def caller(
        self,
        bearer: HTTPAuthorizationCredentials | None,
        x_api_key: str | None,
    ) -> Caller:
        # X-API-Key first; FastAPI's HTTPBearer has already parsed "Authorization: Bearer …"
        if x_api_key:
            key = x_api_key.strip()
        else:
            key = bearer.credentials.strip() if bearer is not None else ""
        if not key:
            raise HTTPException(
                401,
                "missing API key: send 'Authorization: Bearer KEY' or 'X-API-Key: KEY' "
                "(create one with: ragline keys create --tenant NAME)",
                headers={"WWW-Authenticate": "Bearer"},
            )
        rec = self.admin.lookup_key(key)
        if rec is None:
            raise HTTPException(
                401, "invalid or revoked API key", headers={"WWW-Authenticate": "Bearer"}
            )
        wait = self.limiter.take(rec.id, rec.rate_limit or self.rate_limit)
        if wait > 0:
            raise HTTPException(
                429,
                f"rate limit of {rec.rate_limit or self.rate_limit} requests per minute "
                f"reached; retry in {retry_after(wait)} s",
                headers={"Retry-After": retry_after(wait)},
            )
        return Caller(rec)

    # -- query ----------------------------------------------------------------------
    def _as_caller(self, caller: Caller, req: Any) -> Any:
        """The request as ``caller`` makes it: their tenant, groups and key; filter values
        of public ids translated."""
        return replace(
            req,
            tenant=caller.tenant,
            groups=caller.groups,
            filters=self.view.filters_in(req.filters, caller.tenant) or None,
            trace_key=caller.key.id,
        )

    def search(self, caller: Caller, req: Search) -> dict[str, Any]:
        res = self.index.search_result(self._as_caller(caller, req))
        self.metrics.observe_stages(res.timings_ms)
        return dict(self.view.out(search_dict(req.query, res), caller.tenant))

    def ask_items(self, caller: Caller, req: Ask, *, stream: bool = True) -> Iterator[str | Answer]:
        """Text pieces, then the checked answer (an abstention on an empty index). The
        request's size is checked now, before a stream starts (a 422, not an SSE error).
        ``agent`` on or auto (default: the ``agent`` setting) answers through the research
        loop, over the ``sources`` the caller may read."""
        self.index.check_size(req.question, req.filters or None)
        req = self._as_caller(caller, req)
        agent = req.agent or self.index.settings.agent
        t0 = time.perf_counter()
        if agent != "off" and self.index.collection is not None:
            a = self.index.research(req, agent=agent)
            self.metrics.observe_stages({"ask": (time.perf_counter() - t0) * 1000})
            return iter([a.text, a])
        return self._streamed(self.index.ask_stream(req, stream=stream), t0)

    def _streamed(self, items: Iterable[str | Answer], t0: float) -> Iterator[str | Answer]:
        for item in items:
            if isinstance(item, Answer):
                self.metrics.observe_stages({"ask": (time.perf_counter() - t0) * 1000})
            yield item

    # -- documents ------------------------------------------------------------------
    def visible(self, caller: Caller, groups: tuple[str, ...]) -> bool:
        return caller.admin or not groups or bool(set(groups) & set(caller.groups))

    def documents(self, caller: Caller) -> list[dict[str, Any]]:
        return [
            self.doc_dict(caller, d)
            for d in self.index.documents(tenant=caller.tenant)
            if self.visible(caller, d.groups)
        ]

    def doc_dict(self, caller: Caller, d: Any) -> dict[str, Any]:
        return {**self.view.out(_doc_dict(d), caller.tenant), "id": self.view.id("doc", d.id)}

    def document(self, caller: Caller, doc_id: str) -> Any:
        """The document a public id names, if the caller may read it (404 otherwise)."""
        n = self.view.internal("doc", doc_id)
        d = self.index.document_by_id(caller.tenant, n) if n is not None else None
        if d is None or not self.visible(caller, d.groups):
            raise HTTPException(404, f"no document {doc_id[:64]}")
        return d

    def job(self, caller: Caller, job: dict[str, Any]) -> dict[str, Any]:
        return {**job, "id": self.view.id("job", job["id"])}

    def key(self, rec: Any) -> dict[str, Any]:
        return {**rec.to_dict(), "id": self.view.id("key", rec.id)}


def _doc_dict(d: Any) -> dict[str, Any]:
    meta = dict(d.metadata or {})
    return {
        "id": d.id,
        "doc_key": d.doc_key,
        "title": d.title,
        "source": d.source_uri,
        "media_type": d.media_type,
        "version": d.version,
        "groups": list(d.groups),
        "chunks": d.n_chunks,
        "ingested_at": d.ingested_at.isoformat(),
        "language": meta.get("language"),
    }


def create_app(
    index: Any,
    *,
    sync_roots: Iterable[str | Path] = (),
    upload_dir: Path | None = None,
    rate_limit: int | None = None,
    metrics_token: str | None = None,
) -> FastAPI:
    """The ASGI app over ``index`` (``ragline serve`` runs it with uvicorn).
    ``metrics_token`` (default: env ``RAGLINE_METRICS_TOKEN``) guards ``/metrics``."""
    import os

    srv = Server(index, sync_roots=tuple(sync_roots), upload_dir=upload_dir, rate_limit=rate_limit)
    token = metrics_token or os.environ.get("RAGLINE_METRICS_TOKEN", "").strip() or None

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> Any:
        srv.jobs.start()
        srv.uploads.sweep(lambda job_id, t: (srv.admin.job(job_id, t) or {}).get("status"))
        if index.embedder is not None and hasattr(index.embedder, "warm_up"):
            index.embedder.warm_up()
        if index.settings.query_languages == "detected" and _multilingual(index):
            from ..analysis.language import warm_up  # ~75 MB: only where queries need it

            warm_up()
        yield
        srv.jobs.stop()

    app = FastAPI(
        title="ragline",
        version=_version(),
        description="Cited answers from your documents: search, ask (JSON or SSE), documents, "
        "ingest jobs, traces, an OpenAI-compatible chat endpoint. Authenticate with an API "
        "key (Authorization: Bearer KEY).",
        lifespan=lifespan,
    )
    app.state.server = srv
    limits = index.settings
    app.add_middleware(Guard, max_body=limits.max_request_bytes, max_upload=limits.max_upload_bytes)

    # -- errors and metrics -----------------------------------------------------------
    @app.exception_handler(HTTPException)
    async def http_error(_r: Request, exc: HTTPException) -> Any:
        return _error(
            exc.status_code, str(exc.detail), _KINDS.get(exc.status_code, "error"), exc.headers
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(_r: Request, exc: RequestValidationError) -> Any:
        parts = []
        for e in exc.errors()[:5]:
            where = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
            parts.append(f"{where}: {e.get('msg')}" if where else str(e.get("msg")))
        return _error(422, "invalid request: " + "; ".join(parts), "invalid_request_error")

    @app.exception_handler(RaglineError)
    async def ragline_error(_r: Request, exc: RaglineError) -> Any:
        if isinstance(exc, AccessError):
            return _error(403, str(exc), "permission_error")
        if isinstance(exc, NotFoundError):
            return _error(404, str(exc), "not_found_error")
        if isinstance(exc, LimitError):
            return _error(422, str(exc), "invalid_request_error")
        status = 400 if isinstance(exc, ConfigError) else 500
        return _error(status, str(exc), "invalid_request_error" if status == 400 else "error")

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> Any:
        # answered outside the other middleware: the error shape and the security headers
        # here too, and never the exception's text (it may hold server paths)
        log.error("unhandled error on %s", request.url.path, exc_info=exc)
        return _error(
            500,
            f"internal error ({type(exc).__name__}); the server log has the details",
            "error",
            security_headers(request.url.path),
        )

    @app.middleware("http")
    async def measure(request: Request, call_next: Any) -> Any:
        t = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        srv.metrics.observe_request(
            request.method, path, response.status_code, time.perf_counter() - t
        )
        return response

    # -- health -----------------------------------------------------------------------
    @app.get("/health", tags=["health"], summary="The process is up")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/ready", tags=["health"], summary="The database answers", responses={503: {}})
    def ready() -> Any:
        try:
            srv.admin.ping()
        except Exception as exc:
            return _error(503, f"database not reachable: {type(exc).__name__}", "unavailable_error")
        return {"status": "ready", "collection": index.settings.collection}

    @app.get(
        "/metrics",
        tags=["health"],
        summary="Prometheus metrics (operator token: RAGLINE_METRICS_TOKEN as bearer)",
    )
    def metrics(request: Request) -> Response:
        # server-wide counts span every tenant: for the operator, not for a tenant's admin
        if not token:
            raise HTTPException(
                404,
                "metrics are off: start the server with RAGLINE_METRICS_TOKEN set to a secret "
                "and scrape /metrics with it as the bearer token",
            )
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip(), token):
            raise HTTPException(
                401, "metrics need the operator token (RAGLINE_METRICS_TOKEN) as bearer"
            )
        return Response(srv.metrics.render(), media_type="text/plain; version=0.0.4")

    app.include_router(routes_query.routes(srv))
    app.include_router(routes_documents.routes(srv))
    app.include_router(routes_keys.routes(srv))

    # -- OpenAI-compatible chat and the page ----------------------------------------------
    from .openai_compat import add_chat_routes

    add_chat_routes(app, srv)

    if STATIC.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    def page() -> Any:
        html = STATIC / "index.html"
        if not html.exists():
            return _error(404, "the web page is not installed", "not_found_error")
        return FileResponse(html, media_type="text/html")

    return app


SERVE_CONFIG_ENV = "RAGLINE_SERVE_CONFIG"


def _multilingual(index: Any) -> bool:
    """Whether the collection holds documents in more than one language, so that its
    queries go through language detection (see ``MultiAnalyzer.query_analysis``)."""
    return len(index.languages()) > 1


def app_from_env() -> FastAPI:
    """The app of one worker process of ``ragline serve --workers N`` (uvicorn factory):
    the server's options come as JSON in ``RAGLINE_SERVE_CONFIG``."""
    import os

    from ..core.settings import Settings
    from ..index import Index

    cfg = json.loads(os.environ[SERVE_CONFIG_ENV])
    settings = Settings.resolve(
        cfg.get("settings_file"),
        data_dir=cfg.get("data_dir"),
        collection=cfg.get("collection"),
        **cfg["settings"],
    )
    workers = max(1, int(cfg.get("workers", 1)))
    limit = cfg.get("rate_limit") or settings.rate_limit
    return create_app(
        Index(settings),
        sync_roots=[Path(p) for p in cfg.get("sync_roots", [])],
        upload_dir=Path(cfg["upload_dir"]),
        # each worker enforces its share: requests spread over the workers
        rate_limit=max(1, -(-int(limit) // workers)),
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ragline")
    except PackageNotFoundError:  # pragma: no cover
        return "0"
