"""Ingest workers share the queue through the database: a worker killed with SIGKILL
mid-task has its task finished by another; no document is lost, none half-visible, none
of the finished ones embedded again; two workers never take the same task."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from ragline.ingest.queue import Worker, enqueue_paths, enqueue_uploads
from ragline.store import queue as q
from tests.conftest import REPO, make_index
from tests.fakes import FakeEmbedder

STALE = 1.5


def _files(tmp_path, n: int):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(n):
        (folder / f"note{i:02d}.md").write_text(
            f"# Note {i}\n\n"
            + " ".join(f"Paragraph {j} of note {i} about topic {i % 5}." for j in range(30))
        )
    return folder


def _spawn(pg_url, schema, name, sleep_s, *extra, tmp=None):
    env = {**os.environ, "TMPDIR": str(tmp)} if tmp else None  # a killed worker's leftovers
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.ingest.queue_worker",
            pg_url,
            schema,
            name,
            str(STALE),
            str(sleep_s),
            *extra,
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _rows(idx, sql, *params):
    with idx.db.connection() as conn:
        return conn.execute(sql, params).fetchall()


def test_killed_worker_task_is_finished_by_another(pg_url, schema, tmp_path):
    folder = _files(tmp_path, 12)
    idx = make_index(pg_url, schema, embedder=FakeEmbedder())
    try:
        job = enqueue_paths(idx, [folder], tenant="acme", files_per_task=6)
        assert job["total"] == 12
        assert len(_rows(idx, "SELECT id FROM ingest_tasks")) == 2
        victim = _spawn(pg_url, schema, "victim", 0.15, tmp=tmp_path)
        try:
            # wait until the victim has committed some documents of its task, then kill it
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                n = _rows(idx, "SELECT count(*) FROM documents WHERE tenant = 'acme'")[0][0]
                if n >= 2:
                    break
                time.sleep(0.05)
            else:
                pytest.fail("the victim worker wrote nothing: " + victim.stderr.read())
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait(10)
        finally:
            if victim.poll() is None:
                victim.kill()
        before_kill = {
            r[0] for r in _rows(idx, "SELECT doc_key FROM documents WHERE tenant = 'acme'")
        }
        held = _rows(idx, "SELECT id, worker, status FROM ingest_tasks WHERE worker = 'victim'")
        assert held and held[0][2] == "running"  # killed mid-task: nobody closed it
        # a draining worker stops when nothing is claimable; wait until the dead worker's
        # heartbeat is stale, or a fast rescuer may finish and leave before it is
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _rows(
            idx,
            "SELECT 1 FROM ingest_tasks WHERE id = %s AND heartbeat_at < now() - make_interval(secs => %s)",
            held[0][0],
            STALE,
        ):
            time.sleep(0.05)

        # two rescuers at once: the stale task and the untouched one, one each, never both
        rescuers = [_spawn(pg_url, schema, f"rescuer{i}", 0.0, "drain") for i in range(2)]
        for r in rescuers:
            r.wait(120)
            assert r.returncode == 0, r.stderr.read()
        tasks = _rows(
            idx, "SELECT id, worker, status, attempts, report FROM ingest_tasks ORDER BY id"
        )
        assert all(t[2] == "done" for t in tasks), tasks
        taken_over = next(t for t in tasks if t[0] == held[0][0])
        assert taken_over[1].startswith("rescuer") and taken_over[3] == 2
        # the documents the victim finished were found unchanged, not embedded again
        rep = taken_over[4]
        assert before_kill and before_kill <= set(rep["unchanged"]), (before_kill, rep)
        added_by_tasks = [k for t in tasks for k in t[4]["added"]]
        assert len(added_by_tasks) == len(set(added_by_tasks))  # no document added twice
        assert set(added_by_tasks) | before_kill == {str(p.resolve()) for p in folder.iterdir()}
        # every document whole: its chunks all there, one current version each
        docs = _rows(
            idx,
            "SELECT d.doc_key, d.n_chunks, count(c.id), count(*) FILTER (WHERE c.embedding IS NULL) "
            "FROM documents d LEFT JOIN chunks c ON c.tenant = d.tenant AND c.document_id = d.id "
            "WHERE d.tenant = 'acme' GROUP BY d.doc_key, d.n_chunks",
        )
        assert len(docs) == 12 and all(d[1] == d[2] and d[3] == 0 for d in docs), docs
        # nothing embedded twice: the rescuers embedded only chunks of documents the victim
        # had not committed (some of those may come from the cache: the victim embedded
        # them before it died)
        chunks_written_after = sum(d[1] for d in docs if d[0] not in before_kill)
        rescued = [t[4] for t in tasks]
        assert sum(r["embedded"] + r["cached"] for r in rescued) == chunks_written_after
        assert sum(r["embedded"] for r in rescued) <= chunks_written_after
        job_row = _rows(idx, "SELECT status, done, total FROM ingest_jobs WHERE id = %s", job["id"])
        assert job_row[0][0] == "done"
        assert _rows(idx, "SELECT count(*) FROM ingest_files")[0][0] == 0  # bytes gone
        # the same answers as an inline ingest
        hits = idx.search("topic 3", tenant="acme", k=5, mode="bm25")
        assert hits and all("topic 3" in h.text for h in hits[:2])
    finally:
        idx.close()


def test_skip_locked_claims_are_exclusive(pg_url, schema):
    """Many claimers racing over many tasks: every task claimed exactly once."""
    import threading

    idx = make_index(pg_url, schema, embedder=FakeEmbedder())
    try:
        for i in range(30):
            q.enqueue(idx.db, tenant=f"t{i % 3}", collection="default", kind="files")
        got: list[tuple[str, int]] = []
        lock = threading.Lock()

        def claimer(name: str) -> None:
            while (t := q.claim(idx.db, name, stale_after=60)) is not None:
                with lock:
                    got.append((t.tenant, t.id))

        threads = [threading.Thread(target=claimer, args=(f"w{i}",)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(got) == 30 and len(set(got)) == 30
    finally:
        idx.close()


def test_lost_task_cannot_be_closed_by_its_old_holder(pg_url, schema):
    idx = make_index(pg_url, schema, embedder=FakeEmbedder())
    try:
        q.enqueue(idx.db, tenant="a", collection="default", kind="files")
        first = q.claim(idx.db, "slow", stale_after=0.2)
        time.sleep(0.4)
        second = q.claim(idx.db, "fast", stale_after=0.2)
        assert second is not None and second.id == first.id and second.attempt == 2
        assert not q.beat(idx.db, first)
        assert not q.finish(idx.db, first, ok=True, report={"added": []})
        assert q.finish(idx.db, second, ok=True, report={"added": []})
    finally:
        idx.close()


def test_uploads_enqueued_and_worked_in_process(pg_url, schema):
    idx = make_index(pg_url, schema, embedder=FakeEmbedder())
    try:
        job = enqueue_uploads(
            idx, "acme", ["eng"], [("a.md", b"# A\n\nalpha battery"), ("b.txt", b"beta vpn")]
        )
        assert Worker(idx.db, lambda _c: idx, stale_after=5).run(drain=True) == 1
        row = _rows(idx, "SELECT status, detail FROM ingest_jobs WHERE id = %s", job["id"])[0]
        assert row[0] == "done" and sorted(row[1]["report"]["added"]) == [
            "upload:a.md",
            "upload:b.txt",
        ]
        assert [
            h.doc_key for h in idx.search("alpha", tenant="acme", groups=["eng"], mode="bm25")
        ] == ["upload:a.md"]
        assert idx.search("alpha", tenant="acme", mode="bm25") == []  # groups kept
    finally:
        idx.close()


def test_server_uploads_and_syncs_go_to_the_queue(pg_url, schema, tmp_path):
    """ragline serve with ingest_queue: the upload's bytes and the sync go to the queue
    (the server's own thread never runs them) and a worker finishes both jobs."""
    from ragline.serve.jobs import JobRunner
    from ragline.store.jobs import get_job

    folder = _files(tmp_path, 3)
    saved = tmp_path / "upload.md"
    saved.write_text("# Up\n\nuploaded battery manual")
    idx = make_index(pg_url, schema, embedder=FakeEmbedder(), ingest_queue=True)
    try:
        runner = JobRunner(idx)  # not started: nothing may depend on its thread
        removed = []
        up = runner.submit_files("acme", [], [("up.md", saved)], cleanup=lambda: removed.append(1))
        sy = runner.submit_sync("acme", [], folder)
        assert removed == [1]  # the saved file is not needed once its bytes are queued
        assert get_job(idx.db, up["id"], "acme")["status"] == "queued"
        assert Worker(idx.db, lambda _c: idx, stale_after=5).run(drain=True) == 2
        assert get_job(idx.db, up["id"], "acme")["status"] == "done"
        assert get_job(idx.db, sy["id"], "acme")["status"] == "done"
        assert len(idx.documents(tenant="acme")) == 4
    finally:
        idx.close()


def test_cli_enqueue_then_worker(run, tmp_path):
    """`ragline ingest --enqueue` queues, `ragline worker --drain` ingests (real model)."""
    import json

    folder = _files(tmp_path, 3)
    job = json.loads(run("ingest", "--enqueue", str(folder), "--tenant", "acme", "--json").output)
    assert job["status"] == "queued" and job["total"] == 3
    run("worker", "--drain", "--stale-after", "5")
    st = json.loads(run("status", "--json").output)
    assert st["tenants"] == {"acme": 3} and st["ingest_queue"] == {"done": 1}
    hits = json.loads(run("search", "topic 2", "--tenant", "acme", "--json").output)
    assert hits["hits"]
