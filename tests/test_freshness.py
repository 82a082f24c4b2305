"""Freshness in status: lag, pending changes, failed and missing sources."""

from __future__ import annotations

import json
import os
import time

from click.testing import CliRunner

from ragline.cli.main import cli
from tests.conftest import make_index


def test_status_shows_lag_pending_failed_and_missing(pg_url, schema, tmp_path, minilm):
    idx = make_index(pg_url, schema, embedder=minilm)
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (docs / name).write_text(f"# {name}\n\nText of {name}.\n")
    old = time.time() - 3600  # a source modified an hour before it is indexed
    os.utime(docs / "a.md", (old, old))
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    report = idx.ingest(docs)
    assert len(report.failed) == 1
    st = idx.status()["freshness"]
    assert st["lag_seconds"]["documents"] == 3 and st["lag_seconds"]["max"] >= 3500
    assert [f["source"] for f in st["failed_sources"]] == [str((docs / "broken.pdf").resolve())]
    assert st["pending_changes"] == 0 and st["missing_sources"] == []
    # b.md changes after indexing, c.md disappears
    later = time.time() + 5
    (docs / "b.md").write_text("# b\n\nChanged.\n")
    os.utime(docs / "b.md", (later, later))
    (docs / "c.md").unlink()
    st = idx.status()["freshness"]
    assert st["pending_changes"] == 1 and st["oldest_pending_change"]["source"].endswith("b.md")
    assert len(st["missing_sources"]) == 1 and st["missing_sources"][0].endswith("c.md")
    # the failed source is forgotten once it ingests
    (docs / "broken.pdf").unlink()
    (docs / "broken.md").write_text("# fixed\n")
    idx.sync(docs)
    st = idx.status()["freshness"]
    assert st["pending_changes"] == 0 and st["missing_sources"] == []
    assert st["failed_sources"] == []
    idx.close()
    env = {"RAGLINE_DATABASE_URL": pg_url, "RAGLINE_DB_SCHEMA": schema}
    out = CliRunner().invoke(cli, ["status"], env=env)
    assert out.exit_code == 0, out.output
    assert "pending changes" in out.output and "missing sources" in out.output
    out = CliRunner().invoke(cli, ["status", "--json"], env=env)
    assert "lag_seconds" in json.loads(out.output)["freshness"]
