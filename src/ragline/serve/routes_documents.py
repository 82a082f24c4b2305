"""The document routes of the HTTP API: list, read, delete or purge, upload, sync, and the ingest jobs they start."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, File, Form, HTTPException, UploadFile

from .auth import Admin, Who
from .schemas import SyncRequest, form_text, metadata_field

if TYPE_CHECKING:
    from .app import Server


def routes(srv: Server) -> APIRouter:
    """/v1/documents, /v1/sync, /v1/jobs."""
    router = APIRouter()
    index = srv.index

    # -- documents and jobs -------------------------------------------------------------
    @router.get("/v1/documents", tags=["documents"], summary="Documents the caller may read")
    def documents(c: Who, limit: int = 1000, offset: int = 0) -> dict[str, Any]:
        if not (1 <= limit <= 10000 and 0 <= offset <= 10**9):
            raise HTTPException(422, "limit must be 1-10000 and offset 0 or more")
        docs = srv.documents(c)
        return {"documents": docs[offset : offset + limit], "total": len(docs), "offset": offset}

    @router.get("/v1/documents/{doc_id}", tags=["documents"])
    def document(doc_id: str, c: Who) -> dict[str, Any]:
        return srv.doc_dict(c, srv.document(c, doc_id))

    @router.delete("/v1/documents/{doc_id}", tags=["documents"], summary="Delete (admin)")
    def delete_document(doc_id: str, c: Admin, purge: bool = False) -> dict[str, Any]:
        d = srv.document(c, doc_id)
        public = srv.view.id("doc", d.id)
        if purge:
            return {"deleted": public, **index.purge_keys([d.doc_key], tenant=c.tenant)}
        return {
            "deleted": public,
            "versions": index.delete_keys([d.doc_key], tenant=c.tenant),
        }

    @router.post(
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

    @router.post(
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
    @router.get("/v1/jobs", tags=["documents"], summary="The tenant's ingest jobs (admin)")
    def jobs(c: Admin) -> dict[str, Any]:
        return {"jobs": [srv.job(c, j) for j in srv.admin.jobs(c.tenant)]}

    @router.get("/v1/jobs/{job_id}", tags=["documents"], summary="One ingest job (admin)")
    def job(job_id: str, c: Admin) -> dict[str, Any]:
        n = srv.view.internal("job", job_id)
        j = srv.admin.job(n, c.tenant) if n is not None else None
        if j is None:
            raise HTTPException(404, f"no job {job_id[:64]}")
        return srv.job(c, j)

    return router
