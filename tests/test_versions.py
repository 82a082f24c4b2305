"""Index versions: build beside the live version, resume after a kill, activate and roll
back atomically, never a mixed-version result while building."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from ragline.analysis.analyzer import ANALYSIS_VERSION
from ragline.core.errors import ConfigError
from ragline.rebuild import build_version
from ragline.store import versions as vs
from tests.conftest import EXAMPLES, make_index
from tests.fakes import FakeEmbedder


def _docs(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    topics = ["battery", "pump", "invoice", "travel", "router", "lidar", "warranty", "badge"]
    for i in range(n):
        t = topics[i % len(topics)]
        body = "\n\n".join(
            f"## Part {j}\n\nThe {t} procedure {i}-{j} covers step {j} of handbook {i}. "
            f"Keep the {t} log updated; code DOC{i:03d}-{j}."
            for j in range(4)
        )
        (folder / f"doc{i:03d}.md").write_text(f"# Handbook {i} on {t}\n\n{body}\n")
    return folder


def _collection_of(index, chunk_ids):
    with index.db.connection() as conn:
        rows = conn.execute(
            "SELECT DISTINCT collection_id FROM chunks WHERE id = ANY(%s)", (list(chunk_ids),)
        ).fetchall()
    return {r[0] for r in rows}


@pytest.fixture()
def live(pg_url, schema, tmp_path):
    idx = make_index(pg_url, schema, embedder=FakeEmbedder())
    idx.ingest(EXAMPLES, tenant="acme")
    idx.ingest(_docs(tmp_path / "more", 40), tenant="acme", groups=["ops"])
    yield idx
    idx.close()


def test_build_activate_rollback_drop(live):
    v1 = live.collection
    before = {h.chunk_id for h in live.search("battery charging", tenant="acme", groups="ops")}
    report = build_version(live, chunking="fixed")
    assert report["version"] == 2 and report["state"] == "ready", report
    assert report["added"] == len(live.documents(tenant="acme")) and not report["failed"]
    v2 = vs.get_version(live.db, "default", 2)
    assert v2.collection.chunker.startswith("fixed-v1") and v2.state == "ready"
    # the live version still answers, unchanged
    hits = live.search("battery charging", tenant="acme", groups="ops")
    assert {h.chunk_id for h in hits} == before and _collection_of(live, before) == {v1.id}
    # activation: one switch, followed by an already-open Index on its next query
    vs.activate(live.db, "default", 2)
    hits = live.search("battery charging", tenant="acme", groups="ops")
    assert hits and _collection_of(live, [h.chunk_id for h in hits]) == {v2.collection.id}
    assert live.collection.id == v2.collection.id
    states = {v.version: v.state for v in vs.list_versions(live.db, "default")}
    assert states == {1: "retired", 2: "active"}
    with pytest.raises(ConfigError, match="active one"):
        vs.drop(live.db, "default", 2)
    # permissions hold in the new version too
    assert not live.search("DOC001-2 procedure", tenant="acme", groups="hr", mode="bm25") or all(
        "Handbook" not in h.title for h in live.search("DOC001-2", tenant="acme", groups="hr")
    )
    back = vs.rollback(live.db, "default")
    assert back.version == 1
    hits = live.search("battery charging", tenant="acme", groups="ops")
    assert _collection_of(live, [h.chunk_id for h in hits]) == {v1.id}
    vs.drop(live.db, "default", 2)
    assert [v.version for v in vs.list_versions(live.db, "default")] == [1]


def test_activation_refused_while_behind_or_building(live, tmp_path):
    build_version(live, chunking="fixed")
    (tmp_path / "late").mkdir()
    (tmp_path / "late" / "late.md").write_text("# Late\n\nIngested after the build.\n")
    live.ingest(tmp_path / "late", tenant="acme")
    with pytest.raises(ConfigError, match="differs from the live version in 1 document"):
        vs.activate(live.db, "default", 2)
    again = build_version(live, chunking="fixed")  # catches up, same version
    assert again["version"] == 2 and again["added"] == 1 and again["state"] == "ready"
    vs.activate(live.db, "default", 2)


def test_killed_build_resumes_without_reembedding_and_live_untouched(live):
    with live.db.connection() as conn:
        live_rows = conn.execute(
            "SELECT id, ingested_at FROM documents WHERE collection_id = %s ORDER BY id",
            (live.collection.id,),
        ).fetchall()
    done: list[str] = []

    def kill_after_ten(name: str, _chunks: int, _pages: int = 0) -> None:
        done.append(name)
        if len(done) == 10:
            raise KeyboardInterrupt  # the process is killed mid-build

    with pytest.raises(KeyboardInterrupt):
        build_version(live, chunking="fixed", on_progress=kill_after_ten)
    v2 = vs.get_version(live.db, "default", 2)
    assert v2.state == "building"
    with pytest.raises(ConfigError, match="still building"):
        vs.activate(live.db, "default", 2)
    counting = FakeEmbedder()
    live.binding.embedder = counting  # the build embeds with the live model: count what it embeds
    resumed = build_version(live, chunking="fixed")
    assert resumed["version"] == 2 and resumed["state"] == "ready"
    assert resumed["unchanged"] >= 10  # finished documents were not redone
    with live.db.connection() as conn:
        n_chunks_done = conn.execute(
            "SELECT coalesce(sum(n_chunks), 0) FROM documents WHERE collection_id = %s AND doc_key = ANY(%s)",
            (v2.collection.id, done),
        ).fetchone()[0]
        total = conn.execute(
            "SELECT coalesce(sum(n_chunks), 0) FROM documents WHERE collection_id = %s",
            (v2.collection.id,),
        ).fetchone()[0]
        after = conn.execute(
            "SELECT id, ingested_at FROM documents WHERE collection_id = %s ORDER BY id",
            (live.collection.id,),
        ).fetchall()
    assert counting.texts_embedded <= total - n_chunks_done
    assert after == live_rows  # the live version was never written


def test_queries_during_build_see_one_version_and_no_error(live):
    v1 = live.collection.id
    errors: list[BaseException] = []
    mixed: list[set[int]] = []
    stop = threading.Event()

    def query_loop() -> None:
        n = 0
        while not stop.is_set() or n < 5:
            n += 1
            try:
                hits = live.search("procedure step handbook", tenant="acme", groups="ops", k=10)
                cols = _collection_of(live, [h.chunk_id for h in hits])
                if cols != {v1}:
                    mixed.append(cols)
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

    t = threading.Thread(target=query_loop)
    t.start()
    try:
        build_version(live, chunking="fixed")
    finally:
        stop.set()
        t.join(60)
    assert not errors and not mixed


KILL_SCRIPT = """
import sys, time
from tests.conftest import make_index
from tests.fakes import FakeEmbedder
from ragline.rebuild import build_version

class Slow(FakeEmbedder):
    def embed_documents(self, texts):
        time.sleep(0.3)  # slow enough to be killed mid-build
        return super().embed_documents(texts)

idx = make_index(sys.argv[1], sys.argv[2], embedder=Slow(), parse_workers=1, ingest_batch_chunks=8)
print("building", flush=True)
build_version(idx, chunking="fixed")
"""


def test_sigkilled_build_resumes(live, pg_url, schema):
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    with live.db.connection() as conn:
        live_rows = conn.execute(
            "SELECT id, content_hash FROM documents WHERE collection_id = %s ORDER BY id",
            (live.collection.id,),
        ).fetchall()
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, pg_url, schema],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        done = 0
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            with live.db.connection() as conn:
                row = conn.execute(
                    "SELECT count(*) FROM documents d JOIN collections c ON c.id = d.collection_id "
                    "WHERE c.name = 'default--v2'"
                ).fetchone()
            done = row[0]
            if done >= 8:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(30)
    assert done >= 8, "the build never got going"
    v2 = vs.get_version(live.db, "default", 2)
    assert v2.state == "building"
    with live.db.connection() as conn:
        stored = conn.execute(
            "SELECT count(*), coalesce(sum(n_chunks), 0) FROM documents WHERE collection_id = %s",
            (v2.collection.id,),
        ).fetchone()
    counting = FakeEmbedder()
    live.binding.embedder = counting
    resumed = build_version(live, chunking="fixed")
    assert resumed["state"] == "ready" and resumed["version"] == 2
    assert resumed["unchanged"] == stored[0]  # finished documents are not redone
    with live.db.connection() as conn:
        total = conn.execute(
            "SELECT coalesce(sum(n_chunks), 0) FROM documents WHERE collection_id = %s",
            (v2.collection.id,),
        ).fetchone()[0]
        after = conn.execute(
            "SELECT id, content_hash FROM documents WHERE collection_id = %s ORDER BY id",
            (live.collection.id,),
        ).fetchall()
    assert counting.texts_embedded <= total - stored[1]  # no finished chunk embedded again
    assert after == live_rows


def test_version_with_another_analyzer_is_followed(live):
    report = build_version(live, language="hungarian")
    v2 = vs.get_version(live.db, "default", report["version"])
    assert v2.collection.analyzer == f"multilingual-v{ANALYSIS_VERSION}:hungarian"
    assert v2.collection.chunker == live.collection.chunker  # only the analyzer changed
    vs.activate(live.db, "default", v2.version)
    hits = live.search("battery charging", tenant="acme", groups="ops")
    assert hits and live.analyzer.name == f"multilingual-v{ANALYSIS_VERSION}:hungarian"
    vs.rollback(live.db, "default")
    assert live.search("battery charging", tenant="acme", groups="ops")
    assert live.analyzer.name == f"multilingual-v{ANALYSIS_VERSION}:english"


def test_a_collection_built_with_an_older_analysis_keeps_it(pg_url, schema):
    """Postings hold the terms of the analysis that wrote them: a collection recorded as
    multilingual-v2 is queried (and ingested) with v2 after an upgrade, and `index build`
    moves it to the current analysis."""
    idx = make_index(pg_url, schema, embedder=FakeEmbedder())
    idx.ingest(EXAMPLES)
    with idx.db.connection() as conn:
        conn.execute(
            "UPDATE collections SET analyzer = 'multilingual-v2:english' WHERE id = %s",
            (idx.collection.id,),
        )
    idx.close()
    old = make_index(pg_url, schema, embedder=FakeEmbedder())
    try:
        assert old.analyzer.name == "multilingual-v2:english"
        assert old.analyzer.terms("práci", "cs") == ["prák"]
        assert "ragline index build" in old.status()["analyzer_upgrade"]
        report = build_version(old)
        new = vs.get_version(old.db, "default", report["version"])
        assert new.collection.analyzer == f"multilingual-v{ANALYSIS_VERSION}:english"
    finally:
        old.close()
