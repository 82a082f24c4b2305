"""`ragline serve --workers 2`: two processes answer the same API."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx

from ragline.store.keys import create_key
from tests.conftest import EXAMPLES, make_index
from tests.serve.harness import free_port


def test_two_workers_serve(pg_url, schema, minilm, tmp_path):
    idx = make_index(pg_url, schema, embedder=minilm)
    idx.ingest(EXAMPLES, tenant="acme")
    key, _ = create_key(idx.db, tenant="acme", admin=True)
    idx.close()
    port = free_port()
    env = {
        **os.environ,
        "RAGLINE_DATABASE_URL": pg_url,
        "RAGLINE_DB_SCHEMA": schema,
        "RAGLINE_METRICS_TOKEN": "ops-secret",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragline.cli.main", "serve", "--port", str(port), "--workers", "2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                if httpx.get(f"{url}/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        h = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=url, headers=h, timeout=60) as c:
            answers = [
                c.post("/v1/ask", json={"question": "How long does the X-570 battery last?"})
                for _ in range(6)
            ]
            assert all(r.status_code == 200 for r in answers), [r.text[:300] for r in answers] + [
                proc.pid
            ]
            assert all("10 hours" in r.json()["answer"] for r in answers)
            r = c.get("/metrics", headers={"Authorization": "Bearer ops-secret"})
            assert r.status_code == 200 and "ragline_requests_total" in r.text
        me = httpx.get(f"{url}/v1/me", headers=h, timeout=10)
        assert me.status_code == 200, me.text
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert "2 workers" in out, out
