"""Fixtures of the adversarial suite: one served index shared by a module, the suite's
size (CI-sized by default, long with ``RAGLINE_SECURITY_LONG=1``) and its counters.

Sizes: ``RAGLINE_SECURITY_WORLDS`` (random multi-tenant worlds of the isolation property;
default 14, long run 40) and ``RAGLINE_SECURITY_REPORT=FILE`` (write the counters as JSON
when the session ends). Every query the suite sends through an entry point (search in each
mode, ask, streamed ask, chat completions, MCP tools) is counted, and so is every leak
found (a leak fails the test that found it, so a green run has 0).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_index
from tests.fakes import FakeEmbedder
from tests.serve.conftest import own_schema
from tests.serve.harness import Live, live_server

LONG = os.environ.get("RAGLINE_SECURITY_LONG", "") not in ("", "0")
WORLDS = int(os.environ.get("RAGLINE_SECURITY_WORLDS", "40" if LONG else "14"))


class Counters:
    """What the suite did: queries per entry point, worlds, leaks, seconds."""

    def __init__(self) -> None:
        self.queries: Counter[str] = Counter()
        self.worlds = 0
        self.leaks = 0
        self.seconds = 0.0  # the suite's own tests (setup, call, teardown)

    def query(self, entry: str, n: int = 1) -> None:
        self.queries[entry] += n

    def as_dict(self) -> dict[str, Any]:
        return {
            "worlds": self.worlds,
            "queries": sum(self.queries.values()),
            "by_entry_point": dict(sorted(self.queries.items())),
            "leaks": self.leaks,
            "seconds": round(self.seconds, 1),
            "long": LONG,
        }


COUNTERS = Counters()


@pytest.fixture(scope="session")
def counters() -> Counters:
    return COUNTERS


def pytest_runtest_logreport(report: Any) -> None:
    if "tests/security/" in report.nodeid.replace("\\", "/") or report.nodeid.startswith(
        "security/"
    ):
        COUNTERS.seconds += report.duration


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not COUNTERS.queries:
        return
    d = COUNTERS.as_dict()
    terminalreporter.write_line(
        f"security suite: {d['worlds']} worlds, {d['queries']} generated queries, "
        f"{d['leaks']} leaks, {d['seconds']} s ({'long' if LONG else 'CI'} run); "
        + ", ".join(f"{k} {v}" for k, v in d["by_entry_point"].items())
    )
    out = os.environ.get("RAGLINE_SECURITY_REPORT")
    if out:
        Path(out).write_text(json.dumps(d, indent=2))


@pytest.fixture(scope="module")
def reranker_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny real cross-encoder the rerank tests build (no download)."""
    from tests.rerank import build_tiny_cross_encoder

    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"))


@pytest.fixture(scope="module")
def world_server(pg_url: str, reranker_dir: Path) -> Iterator[Live]:
    """An index (fake embedder, the tiny reranker, two old versions kept per document)
    served over loopback with one sync root (DIR/<tenant>), shared by a module's worlds."""
    with own_schema(pg_url) as schema:
        idx = make_index(
            pg_url,
            schema,
            embedder=FakeEmbedder(),
            keep_versions=2,
            reranker=f"onnx:{reranker_dir}",
        )
        root = Path(tempfile.mkdtemp(prefix="ragline-sec-sync-"))
        uploads = Path(tempfile.mkdtemp(prefix="ragline-sec-up-"))
        with live_server(idx, upload_dir=uploads, sync_roots=[root], rate_limit=10**7) as live:
            live.sync_root = root  # type: ignore[attr-defined]
            yield live
        idx.close()
