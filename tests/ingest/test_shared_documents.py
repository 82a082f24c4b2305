"""Every real file in ../shared/data/documents either ingests or fails with the right reason."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA, make_index
from tests.fakes import FakeEmbedder

DOCS = SHARED_DATA / "documents"


@pytest.mark.skipif(not DOCS.exists(), reason=f"{DOCS} not present")
def test_every_shared_document_ingests_or_fails_specifically(pg_url, schema, tmp_path, monkeypatch):
    monkeypatch.delenv("RAGLINE_PDF_PASSWORD", raising=False)
    folder = tmp_path / "docs"
    for sub in ("pdf", "docx", "html"):
        shutil.copytree(DOCS / sub, folder / sub)
    idx = make_index(pg_url, schema, embedder=FakeEmbedder())
    report = idx.ingest(folder)
    added = {Path(k).name for k in report.added}
    failed = {Path(f.source).name: f.reason for f in report.failed}
    every = {p.name for p in folder.rglob("*") if p.is_file()}
    assert added | set(failed) == every and not (added & set(failed))
    assert set(failed) == {"unstructured__password.pdf"}, failed
    assert "password" in failed["unstructured__password.pdf"].lower()
    # the password opens it
    monkeypatch.setenv("RAGLINE_PDF_PASSWORD", "password")
    again = idx.ingest(folder / "pdf" / "unstructured__password.pdf")
    assert len(again.added) == 1, again.failed
    # real content is searchable, with pages on PDF hits
    hits = idx.search("duck", mode="bm25", filters={"type": "html"})
    assert hits and "duck" in hits[0].text.lower()
    pdf_hits = idx.search("table", mode="bm25", filters={"type": "pdf"}, k=5)
    assert pdf_hits and all(h.page for h in pdf_hits)
    idx.close()
