"""Schemathesis fuzzing of the live server from its own /openapi.json: no input, valid or
not, with a key or without, makes the server answer 5xx.

Each operation gets schema-conforming (positive) and schema-violating (negative) requests
from a fixed seed. The fuzzed server has an index of its own, so what fuzzing creates
(keys, uploads) touches no other test. DELETE operations run under a fresh admin key of an
empty tenant per request: they reach the handler, yet can delete nothing and revoke nothing
the rest of the run needs.
"""

from __future__ import annotations

import itertools
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from ragline.ingest.sources import text_source
from ragline.store.keys import create_key
from tests.conftest import make_index
from tests.fakes import FakeEmbedder
from tests.serve.conftest import add_keys, own_schema, wait_job
from tests.serve.harness import Live, live_server

EXAMPLES_PER_MODE = 25
CHAT = "POST /v1/chat/completions"


@pytest.fixture(scope="module")
def fuzzed(pg_url) -> Iterator[Live]:
    with own_schema(pg_url) as schema:
        idx = make_index(pg_url, schema, embedder=FakeEmbedder())
        idx.ingest_sources(
            [
                text_source("manual", "Manual", "The battery lasts 10 hours on a full charge."),
                text_source("policy", "Policy", "Travel by train is reimbursed in second class."),
            ],
            tenant="fuzz",
        )
        idx.ingest_sources(
            [text_source("secret", "Secret", "The hr salary band is S7.")],
            tenant="fuzz",
            groups=["hr"],
        )
        root = Path(tempfile.mkdtemp(prefix="ragline-fuzz-sync-"))
        (root / "a.md").write_text("# A\n\nA synced note.\n")
        with live_server(
            idx,
            upload_dir=Path(tempfile.mkdtemp(prefix="ragline-fuzz-")),
            sync_roots=[root],
            rate_limit=10**6,
        ) as live:
            add_keys(live, {"admin": {"tenant": "fuzz", "admin": True}})
            live.index.search("battery", tenant="fuzz")  # a trace to find
            yield live
        idx.close()


@pytest.fixture(scope="module")
def api(fuzzed: Live) -> Any:
    return schemathesis.openapi.from_url(fuzzed.url + "/openapi.json")


def _operations(api: Any) -> list[Any]:
    ops = [r.ok() for r in api.get_all_operations()]
    assert len(ops) >= 17, [o.label for o in ops]
    return ops


_throwaway = itertools.count()


def _key_headers(key: str) -> dict[str, str]:
    """Both ways to send a key, so a generated value for either cannot replace it."""
    return {"Authorization": f"Bearer {key}", "X-API-Key": key}


def _fuzz(live: Live, operation: Any, headers_for: Any, seen: Counter[str]) -> list[str]:
    """Run both generation modes against one operation; the failures, as text. ``seen``
    counts the answers by "METHOD /path STATUS"."""
    failures: list[str] = []
    with requests.Session() as session:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                _runner(live, operation, mode, headers_for, seen, session)()
            except Unsatisfiable:  # no parameters to break: nothing negative to send
                assert mode is GenerationMode.NEGATIVE
                assert not operation.definition.raw.get("parameters")
            except Exception as exc:  # collect every operation's failure, report them all
                failures.append(f"{operation.label} ({mode.value}): {exc}")
    return failures


def _runner(
    live: Live,
    operation: Any,
    mode: GenerationMode,
    headers_for: Any,
    seen: Counter[str],
    session: requests.Session,
) -> Any:
    @settings(
        max_examples=EXAMPLES_PER_MODE,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        if mode is GenerationMode.POSITIVE and operation.label == CHAT:
            # else nearly every case stops at "no such model" or "no user message"
            case.body["model"] = "ragline"
            case.body["messages"][-1]["role"] = "user"
            last = case.body["messages"][-1]
            if not isinstance(last.get("content"), str) or not last["content"].strip():
                last["content"] = "How long does the battery last?"  # else mostly "empty question"
        response = case.call(base_url=live.url, session=session, headers=headers_for())
        seen[f"{operation.label} {response.status_code}"] += 1
        case.validate_response(response, checks=[not_a_server_error])

    return run


def test_no_server_errors_with_an_admin_key(fuzzed, api):
    failures: list[str] = []
    seen: Counter[str] = Counter()
    for op in _operations(api):
        if op.method.upper() == "DELETE":

            def fresh() -> dict[str, str]:
                key, _ = create_key(fuzzed.index.db, tenant=f"empty-{next(_throwaway)}", admin=True)
                return _key_headers(key)

            failures += _fuzz(fuzzed, op, fresh, seen)
        else:
            failures += _fuzz(fuzzed, op, lambda: _key_headers(fuzzed.keys["admin"]), seen)
    assert not failures, "\n\n".join(failures)
    # the requests got past authentication into the handlers
    for answer in ("POST /v1/search 200", "POST /v1/ask 200", f"{CHAT} 200", "POST /v1/keys 201"):
        assert seen[answer] > 0, (answer, sorted(k for k in seen.items() if answer[:12] in k[0]))
    assert not [k for k in seen if k.endswith(" 401")]
    assert seen["POST /v1/search 422"] > 0 and seen["POST /v1/sync 403"] > 0
    # the fixture's key and data survived the run
    r = requests.get(fuzzed.url + "/v1/documents", headers=fuzzed.headers("admin"), timeout=30)
    assert {d["title"] for d in r.json()["documents"]} >= {"Manual", "Policy", "Secret"}
    # every fuzzed upload's job ran to the end: bad files fail alone, the job never crashes
    jobs = requests.get(fuzzed.url + "/v1/jobs", headers=fuzzed.headers("admin"), timeout=30)
    assert jobs.json()["jobs"]
    with httpx.Client(base_url=fuzzed.url, timeout=30) as c:
        for job in jobs.json()["jobs"]:
            done = wait_job(c, job["id"], fuzzed.headers("admin"))
            assert done["status"] == "done", done


def test_no_server_errors_without_a_key(fuzzed, api):
    failures: list[str] = []
    seen: Counter[str] = Counter()
    for op in _operations(api):
        failures += _fuzz(fuzzed, op, lambda: {}, seen)
    assert not failures, "\n\n".join(failures)
    assert seen["GET /v1/documents 401"] > 0 and seen["GET /health 200"] > 0
    assert not [k for k in seen if k.endswith(" 200") and k.split()[1].startswith("/v1/")]
