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
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, File, Form, HTTPException, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials
from fastapi.staticfiles import StaticFiles

from ..core.errors import AccessError, ConfigError, LimitError, NotFoundError, RaglineError
from ..core.trace import answer_dict, nothing_ingested, search_dict
from ..core.types import Answer
from ..store import jobs as jobstore
from ..store.keys import create_key, list_keys, lookup_key, revoke_key
from ..store.secrets import installation_secret
from .auth import Admin, Caller, RateLimiter, Who, retry_after
from .folders import SyncRoots, Uploads
from .guards import Guard, security_headers
from .ids import IdCodec
from .jobs import JobRunner
from .metrics import Metrics
from .public import PublicView, neutralize
from .schemas import AskRequest, KeyRequest, SearchRequest, SyncRequest, form_text, metadata_field

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
        self.db = index.db
        self.sync_roots = SyncRoots(sync_roots)
        self.upload_dir = Path(upload_dir or tempfile.mkdtemp(prefix="ragline-uploads-"))
        self.uploads = Uploads(self.upload_dir)
        self.rate_limit = rate_limit or index.settings.rate_limit
        self.limiter = RateLimiter()
        self.jobs = JobRunner(index)
        self.metrics = Metrics(lambda: jobstore.queue_counts(self.db))
        self.view = PublicView(IdCodec(installation_secret(self.db)), self.sync_roots.roots)

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
        rec = lookup_key(self.db, key)
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
    def search(self, caller: Caller, req: SearchRequest) -> dict[str, Any]:
        if self.index.collection is None:  # nothing ingested yet, by anyone
            self.index.check_size(req.query, req.filters or None)
            return search_dict(req.query, mode=req.mode or "hybrid")
        res = self.index.search_result(
            req.query,
            tenant=caller.tenant,
            groups=caller.groups,
            k=req.k,
            mode=req.mode,
            filters=self.view.filters_in(req.filters, caller.tenant) or None,
            include_history=req.include_history,
            trace_key=caller.key.id,
        )
        self.metrics.observe_stages(res.timings_ms)
        return dict(self.view.out(search_dict(req.query, res), caller.tenant))

    def ask_items(
        self,
        caller: Caller,
        question: str,
        *,
        k: int | None = None,
        mode: str | None = None,
        filters: dict[str, Any] | None = None,
        history: list[dict[str, str]] | None = None,
        stream: bool = True,
        agent: str | None = None,
        sources: list[str] | None = None,
    ) -> Iterator[str | Answer]:
        """Text pieces, then the checked answer (an abstention on an empty index). The
        request's size is checked now, before a stream starts (a 422, not an SSE error).
        ``agent`` on or auto (default: the ``agent`` setting) answers through the research
        loop, over ``sources`` the caller may read."""
        self.index.check_size(question, filters or None)
        if (agent or self.index.settings.agent) != "off" and self.index.collection is not None:
            t0 = time.perf_counter()
            a = self.index.research(
                question,
                tenant=caller.tenant,
                groups=caller.groups,
                agent=agent or self.index.settings.agent,
                sources=sources,
                k=k,
                mode=mode,
                filters=self.view.filters_in(filters, caller.tenant) or None,
                history=history or (),
                trace_key=caller.key.id,
            )
            self.metrics.observe_stages({"ask": (time.perf_counter() - t0) * 1000})
            return iter([a.text, a])
        return self._ask_items(
            caller, question, k=k, mode=mode, filters=filters, history=history, stream=stream
        )

    def _ask_items(
        self,
        caller: Caller,
        question: str,
        *,
        k: int | None,
        mode: str | None,
        filters: dict[str, Any] | None,
        history: list[dict[str, str]] | None,
        stream: bool,
    ) -> Iterator[str | Answer]:
        if self.index.collection is None:
            a = nothing_ingested(question)
            yield a.text
            yield a
            return
        t0 = time.perf_counter()
        for item in self.index.ask_stream(
            question,
            tenant=caller.tenant,
            groups=caller.groups,
            k=k,
            mode=mode,
            filters=self.view.filters_in(filters, caller.tenant) or None,
            history=history or (),
            stream=stream,
            trace_key=caller.key.id,
        ):
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
        from ..store.documents import get_document_by_id

        self.index._refresh()
        d = None
        n = self.view.internal("doc", doc_id)
        if self.index.collection is not None and n is not None:
            d = get_document_by_id(self.db, self.index.collection, caller.tenant, n)
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


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


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
        srv.uploads.sweep(
            lambda job_id, t: (jobstore.get_job(srv.db, job_id, t) or {}).get("status")
        )
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
            with srv.db.connection() as conn:
                conn.execute("SELECT 1")
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

    @app.get("/v1/me", tags=["identity"], summary="The caller's tenant, groups and role")
    def me(c: Who) -> dict[str, Any]:
        return {
            "tenant": c.tenant,
            "groups": list(c.groups),
            "admin": c.admin,
            "key_prefix": c.key.prefix,
            "generator": index.settings.generator,
        }

    # -- query ------------------------------------------------------------------------
    @app.post("/v1/search", tags=["query"], summary="BM25 + vector search, fused with RRF")
    def search(req: SearchRequest, c: Who) -> dict[str, Any]:
        return srv.search(c, req)

    @app.post(
        "/v1/ask",
        tags=["query"],
        summary="A cited answer (JSON, or server-sent events with stream=true)",
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    def ask(req: AskRequest, c: Who, request: Request) -> Any:
        stream = req.stream or "text/event-stream" in request.headers.get("accept", "")
        items = srv.ask_items(
            c,
            req.question,
            k=req.k,
            mode=req.mode,
            filters=req.filters,
            history=[t.model_dump() for t in req.history],
            stream=stream,
            agent=req.agent,
            sources=req.sources,
        )
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

    @app.get("/v1/sources", tags=["query"], summary="The sources the caller's agent may use")
    def sources(c: Who) -> dict[str, Any]:
        return {"sources": srv.index.sources(tenant=c.tenant, groups=c.groups)}

    @app.get("/v1/traces", tags=["traces"], summary="The caller's recent traces")
    def traces(c: Who, limit: int = 20) -> dict[str, Any]:
        if not 1 <= limit <= 200:
            raise HTTPException(422, "limit must be between 1 and 200")
        items = index.traces(
            tenant=c.tenant, groups=c.groups, limit=limit, admin=c.admin, key_id=c.key.id
        )
        return {"traces": items}

    @app.get("/v1/traces/{trace_id}", tags=["traces"], summary="One trace, every stage")
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

    # -- documents and jobs -------------------------------------------------------------
    @app.get("/v1/documents", tags=["documents"], summary="Documents the caller may read")
    def documents(c: Who, limit: int = 1000, offset: int = 0) -> dict[str, Any]:
        if not (1 <= limit <= 10000 and 0 <= offset <= 10**9):
            raise HTTPException(422, "limit must be 1-10000 and offset 0 or more")
        docs = srv.documents(c)
        return {"documents": docs[offset : offset + limit], "total": len(docs), "offset": offset}

    @app.get("/v1/documents/{doc_id}", tags=["documents"])
    def document(doc_id: str, c: Who) -> dict[str, Any]:
        return srv.doc_dict(c, srv.document(c, doc_id))

    @app.delete("/v1/documents/{doc_id}", tags=["documents"], summary="Delete (admin)")
    def delete_document(doc_id: str, c: Admin, purge: bool = False) -> dict[str, Any]:
        from ..store.documents import delete_document as delete

        d = srv.document(c, doc_id)
        public = srv.view.id("doc", d.id)
        if purge:
            return {"deleted": public, **index.purge_keys([d.doc_key], tenant=c.tenant)}
        return {
            "deleted": public,
            "versions": delete(srv.db, index.collection, c.tenant, d.doc_key),
        }

    @app.post(
        "/v1/documents",
        tags=["documents"],
        status_code=202,
        summary="Upload files; ingested by a background job (admin)",
    )
    def upload(
        c: Admin,
        files: Annotated[list[UploadFile], File(description="Documents to ingest")],
        groups: Annotated[str, Form(description="Comma-separated allowed groups")] = "",
        metadata: Annotated[str, Form(description="JSON object stored on each document")] = "",
    ) -> dict[str, Any]:
        meta = metadata_field(metadata)
        group_list = sorted({g.strip() for g in groups.split(",") if g.strip()})
        form_text("groups", group_list)
        if not files:
            raise HTTPException(400, "no files: send one or more 'files' parts")
        folder, saved = srv.uploads.save(c.tenant, files, max_files=index.settings.max_upload_files)
        try:
            job = srv.jobs.submit_files(
                c.tenant,
                group_list,
                saved,
                metadata=meta,
                cleanup=lambda: srv.uploads.remove(folder),
            )
        except BaseException:
            srv.uploads.remove(folder)
            raise
        srv.uploads.claim(folder, job, c.tenant)
        return {"job": srv.job(c, job)}

    @app.post(
        "/v1/sync", tags=["documents"], status_code=202, summary="Sync a server folder (admin)"
    )
    def sync(req: SyncRequest, c: Admin) -> dict[str, Any]:
        folder = srv.sync_roots.check(c.tenant, req.path)
        job = srv.jobs.submit_sync(
            c.tenant, req.groups, folder, max_files=index.settings.max_sync_files
        )
        return {"job": srv.job(c, job)}

    # jobs are admin-only like the uploads that make them: their file names and reports
    # name every document of the job, whatever its groups
    @app.get("/v1/jobs", tags=["documents"], summary="The tenant's ingest jobs (admin)")
    def jobs(c: Admin) -> dict[str, Any]:
        return {"jobs": [srv.job(c, j) for j in jobstore.list_jobs(srv.db, c.tenant)]}

    @app.get("/v1/jobs/{job_id}", tags=["documents"], summary="One ingest job (admin)")
    def job(job_id: str, c: Admin) -> dict[str, Any]:
        n = srv.view.internal("job", job_id)
        j = jobstore.get_job(srv.db, n, c.tenant) if n is not None else None
        if j is None:
            raise HTTPException(404, f"no job {job_id[:64]}")
        return srv.job(c, j)

    # -- keys -------------------------------------------------------------------------
    @app.post("/v1/keys", tags=["identity"], status_code=201, summary="Create a key (admin)")
    def new_key(req: KeyRequest, c: Admin) -> dict[str, Any]:
        key, rec = create_key(
            srv.db,
            tenant=c.tenant,
            groups=req.groups,
            admin=req.admin,
            name=req.name,
            rate_limit=req.rate_limit,
        )
        return {"key": key, **srv.key(rec)}

    @app.get("/v1/keys", tags=["identity"], summary="The tenant's keys (admin)")
    def keys(c: Admin) -> dict[str, Any]:
        return {"keys": [srv.key(k) for k in list_keys(srv.db, c.tenant)]}

    @app.delete("/v1/keys/{key_id}", tags=["identity"], summary="Revoke a key (admin)")
    def revoke(key_id: str, c: Admin) -> dict[str, Any]:
        n = srv.view.internal("key", key_id)
        if n is None or not (0 < n < 2**31) or not revoke_key(srv.db, n, tenant=c.tenant):
            raise HTTPException(404, f"no key {key_id[:64]}")
        return {"revoked": key_id}

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
    if index.collection is None:
        return False
    with index.db.connection() as conn:
        n = conn.execute(
            "SELECT count(DISTINCT language) FROM bm25_languages WHERE collection_id = %s "
            "AND language NOT IN ('', 'und') AND n_chunks > 0",
            (index.collection.id,),
        ).fetchone()[0]
    return int(n) > 1


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
