"""Fixtures of the HTTP API tests: a served index with two tenants, groups and keys.

Nothing here is autouse; fixtures only run for the tests that ask for them.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import EXAMPLES, make_index
from tests.serve.harness import Live, live_server

HR_TEXT = (
    "# Salary Bands\n\n"
    "The confidential salary band for a senior engineer is band S7, "
    "paid quarterly with a kumquat bonus.\n"
)
GLOBEX_TEXT = (
    "# Globex Reactor Manual\n\n"
    "The Globex reactor coolant is flushed every 14 days with the zorblax procedure.\n"
)

METRICS_TOKEN = "operator-metrics-token-for-tests"


@contextmanager
def own_schema(pg_url: str) -> Iterator[str]:
    """A fresh PostgreSQL schema for a wider-than-function scope, dropped afterwards
    (``schema`` in tests/conftest.py is per test)."""
    import psycopg

    name = f"t_serve_{uuid.uuid4().hex[:10]}"
    try:
        yield name
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def add_keys(live: Live, specs: dict[str, dict[str, Any]]) -> None:
    """Create keys straight in the store (as ``ragline keys create`` does) under ``live.keys``."""
    from ragline.store.keys import create_key

    for who, spec in specs.items():
        live.keys[who], _ = create_key(live.index.db, **spec)


@pytest.fixture(scope="session")
def served(pg_url: str, minilm) -> Iterator[Live]:
    """The example documents (tenant acme, no groups), an acme HR-only document and a
    globex document, served over loopback with the real MiniLM embedder and the extractive
    answerer. Shared by test_api.py and test_openai_client.py (ingesting with the real model
    is the slow part); tests that change state use documents and keys of their own.

    Keys: ``admin`` and ``reader`` (acme), ``hr`` (acme reader in group hr), ``globex``
    (globex admin) and ``globex_reader``."""
    from ragline.ingest.sources import text_source

    with own_schema(pg_url) as schema:
        idx = make_index(pg_url, schema, embedder=minilm)
        report = idx.ingest(EXAMPLES, tenant="acme")
        assert not report.failed, report.failed
        idx.ingest_sources(
            [text_source("hr/salary-bands", "Salary Bands", HR_TEXT)], tenant="acme", groups=["hr"]
        )
        idx.ingest_sources(
            [text_source("globex/reactor", "Globex Reactor Manual", GLOBEX_TEXT)], tenant="globex"
        )
        uploads = Path(tempfile.mkdtemp(prefix="ragline-uploads-"))
        sync_root = Path(tempfile.mkdtemp(prefix="ragline-sync-"))
        with live_server(
            idx, upload_dir=uploads, sync_roots=[sync_root], metrics_token=METRICS_TOKEN
        ) as live:
            live.sync_root = sync_root  # type: ignore[attr-defined]
            add_keys(
                live,
                {
                    "admin": {"tenant": "acme", "admin": True, "name": "acme admin"},
                    "reader": {"tenant": "acme", "name": "acme reader"},
                    "hr": {"tenant": "acme", "groups": ["hr"], "name": "acme hr"},
                    "globex": {"tenant": "globex", "admin": True, "name": "globex admin"},
                    "globex_reader": {"tenant": "globex", "name": "globex reader"},
                },
            )
            yield live
        idx.close()


@pytest.fixture(scope="session")
def client(served: Live) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, timeout=60) as c:
        yield c


def wait_job(client: httpx.Client, job_id: int, headers: dict[str, str], timeout: float = 90):
    """Poll ``/v1/jobs/{id}`` until the job is done or failed; its last state."""
    deadline = time.monotonic() + timeout
    while True:
        r = client.get(f"/v1/jobs/{job_id}", headers=headers)
        assert r.status_code == 200, r.text
        job = r.json()
        if job["status"] in ("done", "failed"):
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job['status']}: {job}"
        time.sleep(0.05)


def sse_events(lines: Iterator[str]) -> list[tuple[str, str]]:
    """(event, data) pairs of a server-sent event stream (event is '' when unnamed)."""
    events: list[tuple[str, str]] = []
    event, data = "", []
    for line in lines:
        if line == "":
            if data:
                events.append((event, "\n".join(data)))
            event, data = "", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    if data:
        events.append((event, "\n".join(data)))
    return events
