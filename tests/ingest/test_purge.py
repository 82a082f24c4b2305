"""Purge: after it, the text cannot be found by any API, and its cached vectors are gone."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ragline.cli.main import cli
from tests.conftest import make_index
from tests.fakes import FakeEmbedder

SECRET = "The whistleblower's name is Quentin Zapotec and he lives on Elm Street."


def test_purge_erases_everything(pg_url, schema, tmp_path):
    idx = make_index(pg_url, schema, embedder=FakeEmbedder(), keep_versions=2)
    f = tmp_path / "report.md"
    f.write_text(f"# Report\n\n{SECRET}\n")
    idx.ingest(f)
    f.write_text(f"# Report\n\n{SECRET} Updated.\n")
    idx.ingest(f)
    (tmp_path / "other.md").write_text("# Other\n\nNothing to hide about zapotec cuisine here.\n")
    idx.ingest(tmp_path / "other.md")
    with idx.db.connection() as conn:
        cache_before = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
    citing = idx.ask("Where does Quentin Zapotec live?")
    other = idx.search_result("zapotec cuisine", mode="bm25", k=1)
    assert citing.trace_id and "Quentin" in json.dumps(idx.trace(citing.trace_id))
    out = idx.purge(f)
    assert out["versions"] == 2 and out["cache_entries"] >= 2
    assert out["traces"] >= 1 and idx.trace(citing.trace_id) is None  # traces citing it: gone
    assert idx.trace(other.trace_id) is not None  # traces of other documents stay
    for mode in ("bm25", "vector", "hybrid"):
        for hist in (False, True):
            hits = idx.search(
                "Quentin Zapotec whistleblower", mode=mode, k=50, include_history=hist
            )
            assert all("Quentin" not in h.text for h in hits)
    assert all("Quentin" not in c.quote for c in idx.ask("Who is the whistleblower?").citations)
    with idx.db.connection() as conn:
        assert (
            conn.execute("SELECT count(*) FROM chunks WHERE text LIKE '%Quentin%'").fetchone()[0]
            == 0
        )
        assert (
            conn.execute("SELECT count(*) FROM bm25_terms WHERE term = 'quentin'").fetchone()[0]
            + conn.execute("SELECT count(*) FROM bm25_blocks WHERE term = 'quentin'").fetchone()[0]
            + conn.execute(
                "SELECT count(*) FROM chunks WHERE ' ' || terms || ' ' LIKE '%% quentin %%'"
            ).fetchone()[0]
            == 0
        )
        assert (
            conn.execute("SELECT count(*) FROM documents WHERE title = 'Report'").fetchone()[0] == 0
        )
        cache_after = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
    assert cache_after == cache_before - out["cache_entries"]
    # the dead rows' bytes are gone from the files: the tables were rewritten (the byte
    # scan of every file is tests/security/test_erasure.py)
    assert {"chunks", "bm25_blocks", "bm25_terms", "documents"} <= set(out["erasure"]["rewritten"])
    assert idx.search("zapotec cuisine", mode="bm25")  # other documents untouched
    assert idx.purge(f) == {"versions": 0, "cache_entries": 0, "traces": 0}
    idx.close()


def test_purge_cli(pg_url, schema, tmp_path):
    (tmp_path / "x.md").write_text("# X\n\nSomething private.\n")
    env = {"RAGLINE_DATABASE_URL": pg_url, "RAGLINE_DB_SCHEMA": schema, "RAGLINE_DATA_DIR": ""}
    r = CliRunner().invoke(cli, ["ingest", str(tmp_path)], env=env)
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["purge", str(tmp_path / "x.md"), "--json"], env=env)
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["purged"][str(tmp_path / "x.md")]["versions"] == 1
    r = CliRunner().invoke(cli, ["purge", str(tmp_path / "x.md")], env=env)
    assert r.exit_code == 1 and "not found" in r.output
