"""Schema migrations, collections and the model check on a real PostgreSQL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from ragline.core.errors import ConfigError, ModelMismatchError, NotFoundError, StoreError
from ragline.store.collections import ensure_collection, get_collection, list_collections
from ragline.store.db import Database, migrations
from tests.conftest import make_index
from tests.fakes import FakeEmbedder


def test_migrations_are_versioned_idempotent_and_concurrent(pg_url, schema):
    with ThreadPoolExecutor(4) as pool:
        dbs = list(pool.map(lambda _: Database(pg_url, schema=schema), range(4)))
    try:
        assert {db.schema_version() for db in dbs} == {max(v for v, _, _ in migrations())}
        with dbs[0].connection() as conn:
            rows = conn.execute("SELECT version, name FROM schema_migrations").fetchall()
        assert rows == [(v, n) for v, n, _ in migrations()]
    finally:
        for db in dbs:
            db.close()


def test_newer_schema_is_refused(pg_url, schema):
    db = Database(pg_url, schema=schema)
    with db.connection() as conn:
        conn.execute("INSERT INTO schema_migrations (version, name) VALUES (9999, 'future')")
    db.close()
    with pytest.raises(StoreError, match="newer than this ragline"):
        Database(pg_url, schema=schema)


def test_bad_url_and_schema_names(pg_url):
    with pytest.raises(ConfigError):
        Database(pg_url, schema="Robert'); DROP")
    with pytest.raises(StoreError, match="cannot connect"):
        Database("postgresql://nobody:secret@127.0.0.1:1/none")


def test_named_collections_and_model_mismatch(pg_url, schema):
    a = make_index(pg_url, schema, embedder=FakeEmbedder(), collection="alpha")
    b = make_index(pg_url, schema, embedder=FakeEmbedder(), collection="beta")
    assert {c.name for c in list_collections(a.db)} == {"alpha", "beta"}
    assert get_collection(a.db, "alpha").embedder == FakeEmbedder.model_id
    with pytest.raises(NotFoundError, match="alpha"):
        get_collection(a.db, "gamma")

    class Other(FakeEmbedder):
        model_id = "another-model"

    with pytest.raises(ModelMismatchError, match="fake-hash-64"):
        ensure_collection(a.db, "alpha", embedder=Other.model_id, dim=64, analyzer="x", chunker="y")
    with pytest.raises(ConfigError):
        ensure_collection(a.db, "no spaces!", embedder="m", dim=3, analyzer="x", chunker="y")
    a.close()
    b.close()
