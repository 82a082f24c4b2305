"""A document's date is its own (front matter, PDF/DOCX properties, HTML meta); the file's
mtime is the fallback and is kept apart (``source_mtime``) for freshness."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragline.parse import parse_bytes
from ragline.parse.dates import document_date, parse_date


@pytest.mark.parametrize(
    "meta, expected",
    [
        ({"last_updated": "2024-06-18"}, "2024-06-18T00:00:00+00:00"),
        ({"Last-Updated": "2024-06-18T09:30:00+02:00"}, "2024-06-18T09:30:00+02:00"),
        # a change date beats a creation date, whatever the order of the keys
        (
            {"created": "2020-01-01", "modified": "2024-02-03T04:05:06Z"},
            "2024-02-03T04:05:06+00:00",
        ),
        ({"date": "18.06.2024", "title": "x"}, "2024-06-18T00:00:00+00:00"),
        ({"date": "last tuesday", "created": "2021-05-01"}, "2021-05-01T00:00:00+00:00"),
        ({"title": "no date", "version": "2024"}, None),
        ({"date": "0001-01-01"}, None),
    ],
)
def test_document_date_from_metadata(meta, expected):
    got = document_date(meta)
    assert (got.isoformat() if got else None) == expected


def test_parse_date_is_aware():
    assert parse_date("2024-06-18").tzinfo is UTC
    assert parse_date(None) is None and parse_date("") is None


def test_html_meta_dates_reach_the_metadata(tmp_path):
    html = (
        "<html><head><title>T</title><meta name='description' content='d'>"
        "<meta property='article:modified_time' content='2023-11-05T08:00:00Z'>"
        "<meta name='date' content='2023-01-01'></head><body><p>Body text here.</p></body></html>"
    )
    doc = parse_bytes(html.encode(), path=tmp_path / "p.html")
    assert (
        doc.metadata["modified"] == "2023-11-05T08:00:00Z" and doc.metadata["date"] == "2023-01-01"
    )
    assert document_date(doc.metadata) == datetime(2023, 11, 5, 8, tzinfo=UTC)


def _by_name(idx, query):
    return {Path(h.source).name: h.metadata for h in idx.search(query, k=20, mode="bm25")}


def test_ingest_keeps_the_documents_date_and_the_files_mtime(fake_index, tmp_path):
    (tmp_path / "fm.md").write_text(
        "---\nlast_updated: 2024-06-18\n---\n# Pump\n\nThe pump runs quietly at night.\n"
    )
    (tmp_path / "meta.html").write_text(
        "<html><head><title>Pump memo</title><meta name='date' content='2022-03-04'></head>"
        "<body><p>The pump runs quietly at dawn.</p></body></html>"
    )
    (tmp_path / "plain.txt").write_text("The pump runs quietly all day.\n")
    old = time.time() - 30 * 86400
    for name in ("fm.md", "meta.html", "plain.txt"):
        os.utime(tmp_path / name, (old, old))
    fake_index.ingest(tmp_path)
    got = _by_name(fake_index, "pump runs quietly")
    mtime = datetime.fromtimestamp(old, tz=UTC)
    assert got["fm.md"]["modified_at"].startswith("2024-06-18")
    assert got["meta.html"]["modified_at"].startswith("2022-03-04")
    assert datetime.fromisoformat(got["plain.txt"]["modified_at"]) == mtime  # the fallback
    for meta in got.values():
        assert datetime.fromisoformat(meta["source_mtime"]) == mtime
    # freshness compares files with their mtime, not with the document's own (older) date
    fresh = fake_index.status()["freshness"]
    assert fresh["oldest_pending_change"] is None, fresh
    assert fresh["lag_seconds"]["p90"] < 40 * 86400, fresh  # not the ~2.5 years since 2024-06-18
    # a date filter uses the document's date
    hits = fake_index.search("pump", filters={"modified_before": "2023-01-01"}, mode="bm25")
    assert [Path(h.source).name for h in hits] == ["meta.html"]
    # the file changes: pending until re-ingested, although its front matter date is old
    new = time.time()
    os.utime(tmp_path / "fm.md", (new, new))
    pending = fake_index.status()["freshness"]["oldest_pending_change"]
    assert pending and pending["source"].endswith("fm.md")
