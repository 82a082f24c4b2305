"""Incremental ingest: unchanged files cost nothing, changes replace atomically, deletes cascade,
bad files are reported without stopping the batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from ragline.ingest.sources import text_source

REPO = Path(__file__).resolve().parents[2]


def _counts(index) -> dict[str, int]:
    with index.db.connection() as conn:
        return {
            t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("documents", "chunks", "bm25_blocks", "bm25_terms")
        }


def test_unchanged_reingest_makes_zero_embedding_calls(fake_index, tmp_path):
    (tmp_path / "a.md").write_text("# Alpha\n\nThe alpha robot charges in two hours.\n")
    (tmp_path / "b.txt").write_text("Beta notes.\n\nThe beta robot is blue.\n")
    r1 = fake_index.ingest(tmp_path)
    assert len(r1.added) == 2 and r1.ok
    calls = fake_index.embedder.calls
    r2 = fake_index.ingest(tmp_path)
    assert fake_index.embedder.calls == calls
    assert len(r2.unchanged) == 2 and not r2.added and r2.embedded == 0


def test_changed_file_replaces_old_chunks(fake_index, tmp_path):
    f = tmp_path / "doc.md"
    f.write_text("# Doc\n\nThe old fact is marmalade.\n")
    fake_index.ingest(f)
    f.write_text("# Doc\n\nThe new fact is zucchini.\n")
    r = fake_index.ingest(f)
    assert len(r.updated) == 1
    assert not fake_index.search("marmalade", mode="bm25")
    hits = fake_index.search("zucchini", mode="bm25")
    assert len(hits) == 1 and hits[0].metadata["version"] == 2
    docs = fake_index.documents()
    assert len(docs) == 1 and docs[0].version == 2


def test_deleted_then_restored_text_comes_from_the_embedding_cache(fake_index, tmp_path):
    f = tmp_path / "one.md"
    f.write_text(
        "# Docks\n\nShared paragraph about charging docks.\n\n## More\n\nA second section.\n"
    )
    first = fake_index.ingest(f)
    assert first.embedded == first.chunks > 0
    fake_index.delete(f)
    calls = fake_index.embedder.calls
    again = fake_index.ingest(f)
    assert again.added and again.embedded == 0 and again.cached == again.chunks == first.chunks
    assert fake_index.embedder.calls == calls
    assert fake_index.search("charging docks", mode="vector")


def test_delete_cascades(fake_index, tmp_path):
    f = tmp_path / "gone.md"
    f.write_text("# Gone\n\nThis text about quokkas must vanish.\n")
    fake_index.ingest(f)
    before = _counts(fake_index)
    assert before["chunks"] > 0 and before["bm25_blocks"] > 0
    assert fake_index.delete(f) == 1
    assert _counts(fake_index) == {"documents": 0, "chunks": 0, "bm25_blocks": 0, "bm25_terms": 0}
    assert not fake_index.search("quokkas", mode="bm25")
    assert fake_index.delete(f) == 0


def test_bad_files_fail_alone(fake_index, tmp_path):
    (tmp_path / "good.md").write_text("# Good\n\nA readable document about ferrets.\n")
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "binary.txt").write_bytes(bytes(range(256)) * 20)
    (tmp_path / "bad.xyz").write_text("unknown type")
    (tmp_path / "latin.txt").write_bytes(
        "Caf\xe9 cr\xe8me br\xfbl\xe9e, tr\xe8s bien.".encode("cp1252")
    )
    r = fake_index.ingest([tmp_path, tmp_path / "missing.md"])
    failed = {Path(f.source).name: f.reason for f in r.failed}
    assert set(failed) == {"empty.txt", "binary.txt", "missing.md"}, failed
    assert [Path(s.source).name for s in r.skipped] == ["bad.xyz"]
    assert all(reason for reason in failed.values())
    assert {Path(k).name for k in r.added} == {"good.md", "latin.txt"}
    assert fake_index.search("ferrets", mode="bm25")


def test_groups_change_without_reembedding(fake_index, tmp_path):
    f = tmp_path / "secret.md"
    f.write_text("# Secret\n\nThe launch code word is pelican.\n")
    fake_index.ingest(f, groups=["board"])
    assert not fake_index.search("pelican", mode="bm25")
    assert fake_index.search("pelican", groups=["board"], mode="bm25")
    calls = fake_index.embedder.calls
    r = fake_index.ingest(f, groups=[])
    assert r.updated and fake_index.embedder.calls == calls
    assert fake_index.search("pelican", mode="bm25")


_KILL_SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {repo!r})
    from tests.conftest import make_index
    from tests.fakes import FakeEmbedder
    from ragline.ingest.sources import text_source
    idx = make_index({url!r}, {schema!r}, embedder=FakeEmbedder(), chunk_max_tokens=40, chunk_overlap_tokens=0)
    print("ready", flush=True)
    body = "\\n\\n".join(f"Paragraph {{i}} of version NEW with words about topic {{i}}." for i in range(600))
    idx.ingest_sources([text_source(f"doc{{d}}", f"Doc {{d}}", body) for d in range(40)])
    print("done", flush=True)
    """
)


def test_sigkill_mid_ingest_leaves_each_document_old_or_new(pg_url, schema):
    from tests.conftest import make_index
    from tests.fakes import FakeEmbedder

    idx = make_index(
        pg_url, schema, embedder=FakeEmbedder(), chunk_max_tokens=40, chunk_overlap_tokens=0
    )
    old_body = "\n\n".join(
        f"Paragraph {i} of version OLD with words about topic {i}." for i in range(300)
    )
    idx.ingest_sources([text_source(f"doc{d}", f"Doc {d}", old_body) for d in range(40)])
    script = _KILL_SCRIPT.format(repo=str(REPO), url=pg_url, schema=schema)
    for delay in (1.5, 3.0):
        proc = subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        )
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        finished = proc.poll() is not None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with idx.db.connection() as conn:
            rows = conn.execute(
                "SELECT d.doc_key, d.n_chunks, count(c.id), "
                "sum((c.text LIKE '%%OLD%%')::int), sum((c.text LIKE '%%NEW%%')::int) "
                "FROM documents d LEFT JOIN chunks c ON c.tenant = d.tenant AND c.document_id = d.id "
                "GROUP BY d.tenant, d.id"  # the key is (tenant, id) on Citus
            ).fetchall()
            from ragline.store.bm25 import check

            problems = check(conn, idx.collection.id)
        assert problems == []  # the BM25 index holds exactly the surviving chunks
        assert len(rows) == 40  # no document vanished
        kinds = set()
        for key, n_chunks, n, n_old, n_new in rows:
            assert n == n_chunks, key
            assert (n_old == n and n_new == 0) or (n_new == n and n_old == 0), (key, n_old, n_new)
            kinds.add("old" if n_old else "new")
        assert finished or "old" in kinds  # killed mid-way: some documents still old
    idx.close()


def test_language_detected_per_document_and_on_hits(fake_index, tmp_path):
    (tmp_path / "hu.txt").write_text(
        "A raktári robot akkumulátora teljes töltéssel tíz órán át működik. "
        "A töltőállomást hetente meg kell tisztítani, különben a robot nem tud tölteni.\n"
    )
    (tmp_path / "en.md").write_text(
        "---\nlanguage: en-GB\n---\n# Charging\n\nThe dock must be cleaned weekly.\n"
    )
    fake_index.ingest(tmp_path)
    langs = {
        Path(h.source).name: h.metadata["language"] for h in fake_index.search("robot dock", k=10)
    }
    assert langs == {"hu.txt": "hu", "en.md": "en"}
